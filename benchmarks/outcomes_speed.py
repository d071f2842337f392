"""Speed and memory of `system1 outcomes` over a large transcript tree (target: 1 GB in ≤ 60 s).

    python benchmarks/outcomes_speed.py [--gb 1.0] [--runs 3] [--keep DIR] [--cold]

Synthesizes Claude Code 2.1.332-shaped transcripts (the record types and sizes of
tests/data/transcripts and ../shared/reference/claude_mcp.md §6) in a temporary directory:
sessions of ~40 turns, each turn an `api-request` + blobs, assistant records and a tool result
whose size is drawn long-tailed (median ≈ 3 KB, some 100 KB-1 MB, 1 in 400 over the 4 MB
skim cap); a 67 KB `api-request-shape` and 8-110 KB `prompt_snapshot` attachments; three
spawns per session on average, ending every way `outcomes` knows (completed, failed,
killed, blocked report, redone, re-spawned, foreground, never notified), each with its own subagent file. Then it runs
the whole command (`run(args)` with --json and a routing log to match) in a fresh
interpreter per run and prints files, GB, seconds (median of the runs), MB/s, that
process's peak RSS (interpreter included) and, from one more untimed run under tracemalloc,
the peak of Python allocations. By default the files are in the page cache when scanned (they were just
written): that measures the reader, not the disk; --cold evicts them first.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WORDS = ("the def return self path config parser import json test assert value error None if else for in "
         "while class async await dict list str int raise with open file line read write \"quoted\" {braces} "
         "<tag> x=1 src/api.py:42").split()


def text_pool(rng: random.Random, size: int = 8 << 20) -> str:
    out, n = [], 0
    while n < size:
        line = " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 14)))
        out.append(line)
        n += len(line) + 1
    return "\n".join(out)


class Writer:
    """Writes one session's files in the record shapes Claude Code 2.1.332 uses."""

    def __init__(self, rng: random.Random, pool: str):
        self.rng, self.pool = rng, pool
        self.tool_n = 0

    def uid(self, hex_: bool = False) -> str:
        """A uuid4 from the seeded generator: the same tree on every run."""
        value = uuid.UUID(int=self.rng.getrandbits(128), version=4)
        return value.hex if hex_ else str(value)

    def text(self, n: int) -> str:
        start = self.rng.randrange(0, max(1, len(self.pool) - n))
        chunk = self.pool[start:start + n]
        while len(chunk) < n:  # beyond the pool (the few multi-MB outputs): repeat it
            chunk += self.pool[: n - len(chunk)]
        return chunk

    def tool_size(self) -> int:
        r = self.rng.random()
        if r < 1 / 400:
            return self.rng.randint(5 << 20, 6 << 20)  # over the skim cap
        if r < 0.03:
            return self.rng.randint(100_000, 1_000_000)
        return int(min(90_000, self.rng.lognormvariate(8.0, 1.0)))  # median ≈ 3 KB

    def env(self, session: str, agent: str | None, ts: str, **rest) -> dict:
        base = {"parentUuid": self.uid(), "isSidechain": agent is not None}
        if agent:
            base["agentId"] = agent
        return {**base, **rest, "uuid": self.uid(), "timestamp": ts, "userType": "external",
                "entrypoint": "sdk-cli", "cwd": "/home/dev/shop", "sessionId": session, "version": "2.1.332",
                "gitBranch": "main"}

    def turn(self, out: list, session: str, agent: str | None, ts: str, model: str,
             blocks: list | None = None) -> None:
        out.append({"type": "api-request-blob", "sessionId": session, "hash": self.uid(hex_=True) * 2,
                    "message": {"role": "user",
                                "content": [{"type": "text", "text": self.text(self.rng.randint(500, 9000))}]}})
        out.append({"type": "api-request", "sessionId": session, "id": self.uid(), "timestamp": ts,
                    "version": "2.1.332", "querySource": "sdk", "params": {"model": model, "max_tokens": 128000,
                                                                           "betas": ["claude-code-20250219"] * 6}})
        msg = f"msg_{self.uid(hex_=True)[:24]}"
        usage = {"input_tokens": self.rng.randint(10, 5000), "cache_creation_input_tokens": self.rng.randint(0, 9000),
                 "cache_read_input_tokens": self.rng.randint(0, 90000), "output_tokens": self.rng.randint(5, 2000),
                 "service_tier": "standard", "cache_creation": {"ephemeral_1h_input_tokens": 0,
                                                                "ephemeral_5m_input_tokens": 100}}
        content = blocks or [{"type": "text", "text": self.text(self.rng.randint(50, 1500))}]
        for i, block in enumerate(content):
            out.append(self.env(session, agent, ts, type="assistant", requestRef=self.uid(), apiBlockIndex=i,
                                requestedModel=model, message={"id": msg, "type": "message", "role": "assistant",
                                                               "model": model, "content": [block],
                                                               "stop_reason": "tool_use", "usage": usage}))
        if not blocks:
            self.tool_n += 1
            tool_id = f"toolu_b{self.tool_n:09d}"
            out.append(self.env(session, agent, ts, type="assistant", message={
                "id": msg, "type": "message", "role": "assistant", "model": model, "usage": usage,
                "content": [{"type": "tool_use", "id": tool_id, "name": "Read", "input": {"file_path": "src/api.py"}}]}))
            body = self.text(self.tool_size())
            out.append(self.env(session, agent, ts, type="user", message={"role": "user", "content": [
                {"tool_use_id": tool_id, "type": "tool_result", "content": body}]},
                toolUseResult={"type": "text", "file": {"filePath": "src/api.py", "content": body[:2000]}}))
        if self.rng.random() < 0.1:
            out.append(self.env(session, agent, ts, type="attachment", attachment={
                "type": "prompt_snapshot", "systemPrompt": [self.text(7000)],
                "tools": [{"name": "Agent", "description": self.text(100_000)}]}))

    def session(self, project: Path, day: int) -> int:
        rng, session = self.rng, self.uid()
        main: list = [{"type": "queue-operation", "operation": "enqueue", "timestamp": "", "sessionId": session,
                       "content": "Please do the work"},
                      {"type": "api-request-shape", "sessionId": session, "shape": {"system": [self.text(67_000)]}}]
        subagents: dict[str, list] = {}
        spawns = rng.choice((1, 2, 3, 3, 4, 5))
        turns = rng.randint(25, 55)
        spawn_at = sorted(rng.sample(range(2, turns), min(spawns, turns - 2)))
        previous = None
        for t in range(turns):
            ts = f"2026-11-{day:02d}T{10 + t // 60:02d}:{t % 60:02d}:00.000Z"
            if t not in spawn_at:
                self.turn(main, session, None, ts, "claude-opus-5-5")
                continue
            self.tool_n += 1
            tool_id, agent = f"toolu_s{self.tool_n:09d}", self.uid(hex_=True)[:17]
            kind = rng.choice(("completed", "completed", "completed", "failed", "killed", "blocked", "redo", "fg",
                               "again", "lost"))
            task = f"W{rng.randint(1, 9)}-P{rng.randint(1, 9)}"
            retry = kind == "redo" and previous is not None
            if kind == "again" and previous is not None:
                task = previous  # the same role re-spawned, no retry words: a doubtful redo
            brief = (f"{previous} (retry): the previous attempt failed. " if retry else f"{task}: ") + self.text(1500)
            model = rng.choice(("haiku", "sonnet", None))
            resolved = {"haiku": "claude-haiku-5-5", "sonnet": "claude-sonnet-5-5", None: "claude-opus-5-5"}[model]
            given = {"description": f"Work on {task}", "prompt": brief, "subagent_type": "general-purpose"}
            if model:
                given["model"] = model
            if kind == "fg":
                given["run_in_background"] = False
            self.turn(main, session, None, ts, "claude-opus-5-5",
                      blocks=[{"type": "tool_use", "id": tool_id, "name": "Agent", "input": given}])
            report = ("BLOCKED: no credentials. " if kind == "blocked" else "Done. ") + self.text(rng.randint(200, 4000))
            if kind == "fg":
                main.append(self.env(session, None, ts, type="user", message={"role": "user", "content": [
                    {"tool_use_id": tool_id, "type": "tool_result", "content": [{"type": "text", "text": report}]}]},
                    toolUseResult={"status": "completed", "prompt": brief, "agentId": agent,
                                   "content": [{"type": "text", "text": report}], "resolvedModel": resolved}))
            else:
                main.append(self.env(session, None, ts, type="user", message={"role": "user", "content": [
                    {"tool_use_id": tool_id, "type": "tool_result",
                     "content": [{"type": "text", "text": f"Async agent launched successfully.\nagentId: {agent}"}]}]},
                    toolUseResult={"isAsync": True, "status": "async_launched", "agentId": agent,
                                   "resolvedModel": resolved, "prompt": brief}))
                status = {"failed": "failed", "killed": "killed"}.get(kind, "completed")
                note = (f"<task-notification>\n<task-id>{agent}</task-id>\n<tool-use-id>{tool_id}</tool-use-id>\n"
                        f"<status>{status}</status>\n<summary>Agent finished</summary>\n"
                        + (f"<result>{report}</result>\n" if status == "completed" else "") + "</task-notification>")
                if kind == "lost":  # the session ended before the agent did: no notification
                    note = ""
                main.append({"type": "queue-operation", "operation": "enqueue", "timestamp": ts, "sessionId": session,
                             "content": note})
                main.append(self.env(session, None, ts, type="user", message={"role": "user", "content": note},
                                     origin={"kind": "task-notification"}))
            previous = task
            sub: list = [self.env(session, agent, ts, type="user", message={"role": "user", "content": brief})]
            for _s in range(rng.randint(8, 30)):
                self.turn(sub, session, agent, ts, resolved)
            subagents[agent] = sub
        main.append({"type": "cost-state", "sessionId": session, "totalCostUSD": 1.0, "modelUsage": {}})
        written = self.write(project / f"{session}.jsonl", main)
        for agent, records in subagents.items():
            written += self.write(project / session / "subagents" / f"agent-{agent}.jsonl", records)
        return written

    @staticmethod
    def write(path: Path, records: list) -> int:
        path.parent.mkdir(parents=True, exist_ok=True)
        data = "".join(json.dumps(r, separators=(",", ":"), ensure_ascii=False) + "\n" for r in records).encode()
        path.write_bytes(data)
        return len(data)


def synthesize(root: Path, target: int, seed: int = 7) -> tuple[int, int]:
    rng = random.Random(seed)
    writer = Writer(rng, text_pool(rng))
    total = sessions = 0
    while total < target:
        project = root / f"-home-dev-proj{sessions % 12}"
        total += writer.session(project, 1 + sessions % 28)
        sessions += 1
    return sessions, total


CHILD = r"""
import argparse, io, json, os, sys, time, tracemalloc
from contextlib import redirect_stdout
from system1_gateway.learn import commands, outcomes
p = argparse.ArgumentParser(); commands.outcomes_arguments(p)
args = p.parse_args(sys.argv[1:])
buf = io.StringIO()
if os.environ.get("BENCH_TRACE"):
    tracemalloc.start()
t0 = time.perf_counter()
with redirect_stdout(buf):
    code = outcomes.run(args)
seconds = time.perf_counter() - t0
summary = json.loads(buf.getvalue())
traced = tracemalloc.get_traced_memory()[1] / 1e6 if tracemalloc.is_tracing() else None
# VmHWM, not ru_maxrss: Linux carries the parent's RSS across fork+exec into ru_maxrss
hwm = next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmHWM:")) / 1024
print(json.dumps({"code": code, "seconds": seconds, "traced_mb": traced, "rss_mb": hwm,
                  "spawns": summary["spawns"], "failed": summary["failed"], "doubtful": len(summary["doubtful"]),
                  "files": summary["files"], "bytes": summary["bytes"], "matched": summary["matched_log_entries"]}))
"""


def evict(root: Path) -> None:
    for path in root.rglob("*.jsonl"):
        with open(path, "rb") as f:
            os.fsync(f.fileno())  # dirty pages cannot be dropped
            os.posix_fadvise(f.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--gb", type=float, default=1.0)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--keep", metavar="DIR", help="generate into DIR and keep it")
    ap.add_argument("--cold", action="store_true", help="evict the files from the page cache before each run "
                    "(posix_fadvise DONTNEED on each file: the disk is read, nothing else is touched)")
    args = ap.parse_args()
    base = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="s1-outcomes-bench-"))
    try:
        root = base / "projects"
        t0 = time.perf_counter()
        sessions, total = synthesize(root, int(args.gb * 1e9))
        print(f"synthesized {sessions} sessions, {total / 1e9:.2f} GB in {time.perf_counter() - t0:.0f} s", flush=True)
        log = base / "routing.jsonl"
        spawn_id = re.compile(rb'"id":"(toolu_s\d+)","name":"Agent"')
        ids = [m.decode() for path in sorted(root.rglob("*.jsonl"))[:200] for m in spawn_id.findall(path.read_bytes())]
        log.write_text("".join(json.dumps({"source": "agent", "tool_use_id": i}) + "\n" for i in ids))
        runs = []
        for i in range(args.runs + 1):  # the last run, untimed, traces Python allocations
            if args.cold:
                evict(root)
            env = {**os.environ, "BENCH_TRACE": "1"} if i == args.runs else None
            proc = subprocess.run([sys.executable, "-c", CHILD, "--projects", str(root), "--log", str(log), "--json"],
                                  capture_output=True, text=True, cwd=ROOT, env=env)
            if proc.returncode != 0:
                print(proc.stdout, proc.stderr, file=sys.stderr)
                return 1
            runs.append(json.loads(proc.stdout.strip().splitlines()[-1]))
            print(f"  run: {runs[-1]['seconds']:.2f} s, peak RSS {runs[-1]['rss_mb']:.0f} MB"
                  + (f", traced peak {runs[-1]['traced_mb']:.1f} MB (tracemalloc on)" if env else ""), flush=True)
        traced = runs.pop()["traced_mb"]
        last = runs[-1]
        seconds = statistics.median(r["seconds"] for r in runs)
        print(f"{'cold' if args.cold else 'warm'} cache: files {last['files']}, {last['bytes'] / 1e9:.2f} GB, "
              f"{seconds:.2f} s (median of {len(runs)}), "
              f"{last['bytes'] / 1e6 / seconds:.0f} MB/s, peak RSS {max(r['rss_mb'] for r in runs):.0f} MB "
              f"(Python objects: {traced:.1f} MB at peak); "
              f"{last['spawns']} spawns, {last['failed']} failed, {last['doubtful']} doubtful, "
              f"{last['matched']} routing-log entries matched")
        return 0
    finally:
        if not args.keep:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
