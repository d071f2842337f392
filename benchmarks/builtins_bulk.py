"""Built-in answers in bulk: `system1 judge --jsonl` on 2,000 mixed requests, process
start included, batched against one request at a time; and a hook's one-shot latency.

    python benchmarks/builtins_bulk.py [--repeat 3] [--before REV] [--latency 15]

The mix (fixed seed, no text repeated): every real prompt of data/heads/prompts-real-*/ asked the
four routing built-ins in one request (read_only, design, review, specified), and shell
commands of data/heads/commands-*/ asked `destructive` (read in parts), shuffled together to
2,000 requests. Each run is a fresh one-shot process in-process (no daemon:
SYSTEM1_SERVE_AUTOSTART=0, a fresh state directory), timed from its start to its last line.

Side by side, in one run, runs alternating:
  * batched: this checkout's `judge --jsonl` (chunks of 256 lines, the fast tier's encoder
    batched over each chunk);
  * one at a time: this checkout's `judge --jsonl --no-batch`, or with `--before REV` the code
    of REV (its `src/` exported with `git archive` and put first on PYTHONPATH: the same
    interpreter, packages and models).
Prints, per variant, wall seconds (median of --repeat), requests/s and built-in answers/s,
whether every answer is present, the largest p_true difference from the baseline, and p50/p95
of a one-shot `system1 judge` of one routing request (what a hook pays: process start, model
load, one answer), --latency runs each.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from io import BytesIO
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HEADS = ROOT / "data" / "heads"
ROUTING = ("read_only", "design", "review", "specified")
REQUESTS = 2000
SEED = 40


def states(pattern: str) -> list[str]:
    seen: dict[str, None] = {}
    for path in sorted(HEADS.glob(pattern)):
        for line in path.read_text().splitlines():
            if line.strip():
                seen.setdefault(json.loads(line)["state"], None)
    return list(seen)


def mix() -> list[dict]:
    rng = random.Random(SEED)
    prompts = states("prompts-real-*/examples.jsonl")
    commands = states("commands-*/examples.jsonl")
    rng.shuffle(commands)
    out = [{"state": s, "questions": {name: {"builtin": name} for name in ROUTING}} for s in prompts]
    out += [{"state": s, "questions": {"q": {"builtin": "destructive"}}} for s in commands[:REQUESTS - len(out)]]
    rng.shuffle(out)
    return [r | {"request_id": f"b{i}"} for i, r in enumerate(out)]


def export(rev: str, into: Path) -> Path:
    """REV's src/ under `into` (git archive), for PYTHONPATH."""
    data = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "src"], capture_output=True, check=True).stdout
    with tarfile.open(fileobj=BytesIO(data)) as tar:
        tar.extractall(into, filter="data")
    return into / "src"


def environment(state: str, pythonpath: Path | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SYSTEM1_") and k != "PYTHONPATH"}
    env.update(SYSTEM1_STATE_DIR=state, SYSTEM1_SERVE_AUTOSTART="0", XDG_CONFIG_HOME=state)
    if pythonpath is not None:
        env["PYTHONPATH"] = str(pythonpath)
    return env


SYSTEM1 = str(Path(sys.executable).parent / "system1")


def run(args: list[str], stdin: str | None, pythonpath: Path | None) -> tuple[float, list[dict]]:
    with tempfile.TemporaryDirectory() as state:
        t0 = time.perf_counter()
        proc = subprocess.run([SYSTEM1, *args], input=stdin, capture_output=True, text=True,
                              env=environment(state, pythonpath), timeout=1800)
        elapsed = time.perf_counter() - t0
    if proc.returncode not in (0, 1):
        raise SystemExit(f"system1 {' '.join(args[:2])} exited {proc.returncode}: {proc.stderr[-2000:]}")
    return elapsed, [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]


def complete(requests: list[dict], results: list[dict]) -> bool:
    """One answered result per request, in order, with an answer to every question."""
    return len(results) == len(requests) and all(
        r.get("status") == "answered" and r.get("request_id") == q["request_id"]
        and set(r["answers"]) == set(q["questions"]) for q, r in zip(requests, results, strict=False))


def p_trues(results: list[dict]) -> list[float]:
    return [a["p_true"] for r in results for _, a in sorted(r["answers"].items())]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=3, help="runs of each variant (median)")
    ap.add_argument("--before", metavar="REV", help="the one-at-a-time baseline is REV's code (default: --no-batch)")
    ap.add_argument("--latency", type=int, default=15, metavar="N", help="one-shot judge runs per variant")
    args = ap.parse_args()
    requests = mix()
    answers = sum(len(r["questions"]) for r in requests)
    n_prompts = sum(len(r["questions"]) == 4 for r in requests)
    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp) / "mix.jsonl"
        source.write_text("".join(json.dumps(r) + "\n" for r in requests))
        before_path = export(args.before, Path(tmp) / "before") if args.before else None
        variants = {
            "batched": (["judge", "--jsonl", str(source)], None),
            f"one at a time ({args.before})" if args.before else "one at a time (--no-batch)":
                (["judge", "--jsonl", str(source)], before_path) if args.before else
                (["judge", "--jsonl", "--no-batch", str(source)], None),
        }
        times: dict[str, list[float]] = {name: [] for name in variants}
        outputs: dict[str, list[dict]] = {}
        for _ in range(args.repeat):
            for name, (argv, path) in variants.items():
                elapsed, results = run(argv, None, path)
                times[name].append(elapsed)
                outputs[name] = results
        one = json.dumps(requests[next(i for i, r in enumerate(requests) if len(r["questions"]) == 4)])
        latency: dict[str, list[float]] = {name: [] for name in variants}
        for _ in range(args.latency):
            for name, (_, path) in variants.items():
                elapsed, results = run(["judge"], one, path)
                assert results and results[0]["status"] == "answered", results
                latency[name].append(elapsed * 1000)
    base = list(variants)[1]
    print(f"{len(requests)} requests ({n_prompts} real prompts x 4 routing built-ins, {len(requests) - n_prompts} "
          f"commands x destructive) = {answers} built-in answers; one-shot `system1 judge --jsonl`, start included, "
          f"median of {args.repeat}; one-shot `system1 judge` of one routing request x {args.latency}")
    print(f"{'variant':34} {'wall s':>8} {'requests/s':>11} {'answers/s':>10} {'complete':>9} {'max |dp|':>9}"
          f" {'1-shot p50 ms':>14} {'p95 ms':>8}")
    for name in variants:
        wall = statistics.median(times[name])
        diff = max(abs(a - b) for a, b in zip(p_trues(outputs[name]), p_trues(outputs[base]), strict=True))
        lat = sorted(latency[name])
        p95 = lat[min(len(lat) - 1, round(0.95 * (len(lat) - 1)))]
        print(f"{name:34} {wall:8.2f} {len(requests) / wall:11.1f} {answers / wall:10.1f} "
              f"{str(complete(requests, outputs[name])):>9} {diff:9.1e} {statistics.median(lat):14.0f} {p95:8.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
