"""`system1 outcomes`: spawn outcomes proposed from Claude Code transcripts, and written into
the routing log.

The fixtures under tests/data/transcripts/projects were written by the real `claude` CLI
(2.1.332) against tests/mock_anthropic.py (see make_fixtures.py there); one test runs that
generator again with the installed CLI, so a format change shows up here. The edge cases
(duplicates, missing fields, truncated and over-long lines, a 200 MB transcript) are
synthetic, in the same record shapes.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import time
import tracemalloc
from pathlib import Path

import pytest

from conftest import ROOT, require
from system1_gateway.insight import outcomes
from system1_gateway.insight import transcripts as tr
from system1_gateway.learn import commands

DATA = ROOT / "tests" / "data" / "transcripts"
FIXTURES = DATA / "projects"


def _load_generator():
    spec = importlib.util.spec_from_file_location("make_fixtures", DATA / "make_fixtures.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


make_fixtures = _load_generator()  # at import: it reads SYSTEM1_TOOLS_DIR, which the autouse fixture clears

# description → (outcome, doubtful, tier, words of the reason); "Review the diff" twice, in order
EXPECTED = {
    "Summarize the README": [("succeeded", False, "haiku", "completed")],
    "Locate the parser": [("succeeded", False, "opus", "completed")],  # no model given: inherits opus
    "Review the handlers": [("failed", False, "opus", "tool error: Agent type 'code-reviewer' not found")],
    "Migrate the schema": [("failed", False, "sonnet", "task notification: failed")],
    "Run the benchmarks": [("failed", False, "opus", "task notification: killed")],
    "Add CSV export": [("failed", False, "haiku", "redone: Task 12")],
    "Add CSV export again": [("succeeded", False, "sonnet", "completed")],
    "Implement W4-P3 parser": [("failed", False, "haiku", "report says blocked; redone")],
    "Retry W4-P3 parser": [("succeeded", False, "sonnet", "completed")],
    "Review the diff": [("failed", True, "opus", "same-role re-spawn"), ("succeeded", False, "opus", "completed")],
}


def check_expected(proposals: list[outcomes.Proposal]) -> None:
    seen: dict[str, list[tuple]] = {}
    for p in proposals:
        seen.setdefault(p.description, []).append((p.outcome, p.doubtful, p.tier, p.reason))
    assert set(seen) == set(EXPECTED), seen
    for description, rows in EXPECTED.items():
        got = seen[description]
        assert len(got) == len(rows), (description, got)
        for (outcome, doubtful, tier, reason), actual in zip(rows, got, strict=False):
            assert actual[:3] == (outcome, doubtful, tier), (description, actual)
            assert actual[3].startswith(reason), (description, actual)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="system1 outcomes")
    commands.outcomes_arguments(p)  # the parser the CLI registers
    return p


def cli(*argv: str) -> int:
    return outcomes.run(parser().parse_args(list(argv)))


# -- the real transcripts ---------------------------------------------------------------------

def test_real_transcripts_give_the_expected_outcome_per_spawn():
    stats = tr.Stats()
    proposals = outcomes.propose(outcomes.collect(FIXTURES, stats=stats))
    check_expected(proposals)
    assert len(proposals) == 11  # the fork's copies of the success session's two spawns count once
    assert stats.bad_lines == stats.truncated == stats.skimmed == 0


def test_the_fixtures_are_what_claude_wrote_and_small():
    files = [p for p in FIXTURES.rglob("*") if p.is_file()]
    assert sum(p.stat().st_size for p in files) < 200_000
    versions = {json.loads(line).get("version") for p in files if p.suffix == ".jsonl"
                for line in p.read_text().splitlines()} - {None}
    assert versions == {"2.1.332"}
    text = "".join(p.read_text() for p in files)
    assert "/tmp/" not in text.replace("/tmp/claude-0/", "") and "s1fx" not in text  # sanitized paths


def test_the_installed_claude_cli_still_writes_that_format(tmp_path):
    require(make_fixtures.CLAUDE.exists(), str(make_fixtures.CLAUDE))
    assert make_fixtures.main(tmp_path / "projects") == 0
    check_expected(outcomes.propose(outcomes.collect(tmp_path / "projects")))


def test_the_resolved_model_is_the_one_that_ran_and_subagent_files_agree():
    spawns = outcomes.collect(FIXTURES)
    parser_spawn = next(s for s in spawns.values() if s.call.description == "Locate the parser")
    assert parser_spawn.call.model is None and parser_spawn.result.resolved_model == "claude-opus-5-5"
    summary = next(s for s in spawns.values() if s.call.description == "Summarize the README")
    assert summary.call.model == "haiku" and summary.agent_model == summary.result.resolved_model == "claude-haiku-5-5"
    failed = next(s for s in spawns.values() if s.call.description == "Migrate the schema")
    assert failed.agent_model is None  # its file holds only Claude Code's <synthetic> error message


def test_iter_files_orders_sessions_and_filters(tmp_path):
    files = list(tr.iter_files(FIXTURES))
    assert all(f.project == "-home-dev-shop" for f in files) and len(files) == 18
    mains = [f for f in files if f.agent_id is None]
    assert len(mains) == 8 and all(f.path.name == f"{f.session_id}.jsonl" for f in mains)
    for f in files:  # a session's subagents come right after its main file
        if f.agent_id:
            assert f.path.parent.parent.name == f.session_id and f.path.name == f"agent-{f.agent_id}.jsonl"
    assert list(tr.iter_files(FIXTURES, project="nothing-like-it")) == []
    assert list(tr.iter_files(FIXTURES, since=time.time() + 3600)) == []
    assert list(tr.iter_files(tmp_path / "missing")) == []


# -- synthetic records in the real shapes -------------------------------------------------------

SESSION = "5e55104d-0000-4000-8000-000000000001"


def envelope(uuid: str, ts: str, **extra) -> dict:
    """A record in Claude Code's key order: type and message first, then uuid, timestamp…"""
    return {"parentUuid": None, "isSidechain": False, **extra, "uuid": uuid, "timestamp": ts, "sessionId": SESSION,
            "version": "2.1.332", "cwd": "/home/dev/shop"}


def spawn(tool_id: str, ts: str, description: str, prompt: str, msg: str | None = None, **given) -> dict:
    block = {"type": "tool_use", "id": tool_id, "name": "Agent",
             "input": {"description": description, "prompt": prompt, "subagent_type": "general-purpose", **given}}
    return envelope(f"u-{tool_id}", ts, type="assistant",
                    message={"id": msg or f"msg-{tool_id}", "type": "message", "role": "assistant",
                             "model": "claude-opus-5-5", "content": [block], "stop_reason": "tool_use",
                             "usage": {"input_tokens": 100, "output_tokens": 10}})


def launched(tool_id: str, ts: str, agent: str, model: str = "claude-haiku-5-5") -> dict:
    return envelope(f"r-{tool_id}", ts, type="user",
                    message={"role": "user", "content": [{"tool_use_id": tool_id, "type": "tool_result",
                                                          "content": [{"type": "text", "text": "Async agent launched"}]}]},
                    toolUseResult={"isAsync": True, "status": "async_launched", "agentId": agent,
                                   "resolvedModel": model})


def notified(tool_id: str | None, ts: str, agent: str, status: str, result: str | None = None) -> dict:
    tags = (f"<task-notification>\n<task-id>{agent}</task-id>\n"
            + (f"<tool-use-id>{tool_id}</tool-use-id>\n" if tool_id else "")
            + f"<status>{status}</status>\n<summary>Agent finished</summary>\n"
            + (f"<result>{result}</result>\n" if result is not None else "") + "</task-notification>")
    return envelope(f"n-{agent}-{ts}", ts, type="user", message={"role": "user", "content": tags},
                    origin={"kind": "task-notification"})


def dumps(record: dict) -> bytes:
    """One line as Claude Code writes it: JSON.stringify, no spaces (the reader's byte
    pre-checks rely on that)."""
    return json.dumps(record, separators=(",", ":")).encode() + b"\n"


def write_session(root: Path, records: list, name: str = SESSION, raw_tail: bytes = b"") -> Path:
    path = root / "-home-dev-shop" / f"{name}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as f:
        for record in records:
            f.write(record if isinstance(record, bytes) else dumps(record))
        f.write(raw_tail)
    return path


def proposals_by_id(root: Path, stats: tr.Stats | None = None) -> dict[str, outcomes.Proposal]:
    return {p.tool_use_id: p for p in outcomes.propose(outcomes.collect(root, stats=stats))}


def test_resume_and_compaction_copies_count_once(tmp_path):
    records = [spawn("toolu_a", "2026-01-01T10:00:00Z", "Port the tests", "Task 3: port the tests"),
               launched("toolu_a", "2026-01-01T10:00:01Z", "agA"),
               notified("toolu_a", "2026-01-01T10:05:00Z", "agA", "completed", "All ported.")]
    write_session(tmp_path, records)
    write_session(tmp_path, records + records, name="5e55104d-0000-4000-8000-0000000000f0")  # a fork, re-logged
    stats = tr.Stats()
    got = proposals_by_id(tmp_path, stats)
    assert list(got) == ["toolu_a"] and got["toolu_a"].outcome == "succeeded" and not got["toolu_a"].doubtful
    seen: set[str] = set()
    uuids = [r["uuid"] for f in tr.iter_files(tmp_path) for _, r in tr.iter_records(f.path, seen=seen)]
    assert len(uuids) == 3


def test_usage_counts_each_api_response_once(tmp_path):
    def block(i: int, output_tokens: int) -> dict:  # one response, one record per content block
        return envelope(f"b{i}", f"2026-01-01T10:00:0{i}Z", type="assistant", apiBlockIndex=i,
                        message={"id": "msg_1", "model": "claude-sonnet-5-5", "content": [{"type": "text", "text": "x"}],
                                 "usage": {"input_tokens": 50, "output_tokens": output_tokens,
                                           "cache_creation": {"ephemeral_5m_input_tokens": 7}}})

    synthetic = envelope("c1", "2026-01-01T10:01:00Z", type="assistant", requestId="req_9",
                         message={"id": "msg_2", "model": "<synthetic>", "usage": {"input_tokens": 0}})
    real = envelope("c2", "2026-01-01T10:02:00Z", type="assistant", requestId="req_10",
                    message={"id": "msg_3", "model": "claude-haiku-5-5", "usage": {"input_tokens": 9, "output_tokens": 3}})
    write_session(tmp_path, [block(0, 1), block(1, 42), synthetic, real])
    write_session(tmp_path, [real], name="fork")  # a resumed session re-logs the record
    seen: set[str] = set()
    usage = [u for f in tr.iter_files(tmp_path) for u in tr.iter_usage(f, seen=seen)]
    assert [(u.key, u.model, u.output_tokens, u.cache_5m_input_tokens) for u in usage] == [
        ("msg_1", "claude-sonnet-5-5", 42, 7), ("req_10", "claude-haiku-5-5", 3, 0)]
    assert tr.model_family(usage[0].model) == "sonnet" and tr.model_family("fable-1") == "fable"
    assert tr.model_family("gpt-5") == "gpt-5"  # not a Claude tier: the id itself


def test_missing_fields_never_crash_and_weak_evidence_is_doubtful(tmp_path):
    records = [
        {"type": "assistant"}, {"type": "assistant", "message": None}, {"type": "user", "message": {"content": 3}},
        {"type": "assistant", "message": {"content": [{"type": "tool_use", "name": "Agent"}]}},  # no id: not a spawn
        {"type": "assistant", "message": {"content": [{"type": "tool_use", "name": "Agent", "id": "toolu_bare",
                                                       "input": None}]}},  # no input, no timestamp, no session
        spawn("toolu_bg", "2026-01-01T10:00:00Z", "Scan the logs", "Scan the logs for errors"),
        launched("toolu_bg", "2026-01-01T10:00:01Z", "agBG"),  # launched, never notified
        spawn("toolu_task", "2026-01-01T11:00:00Z", "Fix lint", "Fix the lint errors"),
        launched("toolu_task", "2026-01-01T11:00:01Z", "agT", model="claude-sonnet-5-5"),
        notified(None, "2026-01-01T11:03:00Z", "agT", "failed"),  # no tool-use-id: matched by the agent id
        {"type": "user", "message": {"content": "<task-notification>\n<status>completed</status>"}},  # nothing to match
        {"type": "attachment", "attachment": {"type": "queued_command", "prompt": None}},
    ]
    got = proposals_by_id(tmp_path if write_session(tmp_path, records) else tmp_path)
    assert got["toolu_bare"].outcome == "succeeded" and got["toolu_bare"].doubtful
    assert got["toolu_bare"].reason == "no tool result found"
    assert got["toolu_bg"].reason == "no task notification found" and got["toolu_bg"].doubtful
    assert got["toolu_bg"].tier == "haiku"
    assert (got["toolu_task"].outcome, got["toolu_task"].reason, got["toolu_task"].tier) == \
        ("failed", "task notification: failed", "sonnet")


def test_bad_and_truncated_lines_are_counted_not_fatal(tmp_path, capsys):
    # lines that pass the byte pre-check for a spawn (others are never parsed, so never counted)
    records = [b'{"type":"assistant","name":"Agent" oops\n', b'["type":"assistant","name":"Agent"]\n', b"\n",
               b"not json, and nothing a spawn would contain\n",
               spawn("toolu_ok", "2026-01-01T10:00:00Z", "Write docs", "Write the docs"),
               launched("toolu_ok", "2026-01-01T10:00:01Z", "agOK"),
               notified("toolu_ok", "2026-01-01T10:02:00Z", "agOK", "completed", "Docs written.")]
    cut = dumps(spawn("toolu_cut", "2026-01-01T10:03:00Z", "Cut", "cut"))
    cut = cut[:cut.index(b'"name":"Agent"') + 20]
    path = write_session(tmp_path, records, raw_tail=cut)  # the writer died mid-line
    stats = tr.Stats()
    got = proposals_by_id(tmp_path, stats)
    assert list(got) == ["toolu_ok"] and got["toolu_ok"].outcome == "succeeded"
    assert (stats.bad_lines, stats.truncated) == (2, 1)
    assert stats.examples[0] == f"{path}:1: not a JSON object"
    assert cli("--projects", str(tmp_path), "--json") == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["skipped_lines"] == 3
    assert f"{path}:1" in err and err.count("\n") == 1  # one line, not one per bad line


def test_a_quoted_notification_is_not_one(tmp_path):
    quoted = notified("toolu_q", "2026-01-01T10:05:00Z", "agQ", "failed")["message"]["content"]
    read = envelope("read", "2026-01-01T10:06:00Z", type="user",  # the agent Read a transcript
                    message={"role": "user", "content": [{"tool_use_id": "toolu_read", "type": "tool_result",
                                                          "content": quoted}]},
                    toolUseResult={"type": "text", "file": {"content": json.dumps({"content": quoted})}})
    pasted = envelope("paste", "2026-01-01T10:07:00Z", type="user",
                      message={"role": "user", "content": "Why did this fail?\n" + quoted})
    huge = envelope("big", "2026-01-01T10:08:00Z", type="user",
                    message={"role": "user", "content": [{"tool_use_id": "toolu_read2", "type": "tool_result",
                                                          "content": quoted + "z" * tr.MAX_LINE}]})
    write_session(tmp_path, [spawn("toolu_q", "2026-01-01T10:00:00Z", "Quote me", "Task 9: quote"),
                             launched("toolu_q", "2026-01-01T10:00:01Z", "agQ"),
                             notified("toolu_q", "2026-01-01T10:04:00Z", "agQ", "completed", "Fine."),
                             read, pasted, huge])  # later than the real one: a latest "failed" would win
    got = proposals_by_id(tmp_path)
    assert (got["toolu_q"].outcome, got["toolu_q"].reason) == ("succeeded", "completed")
    spawns = outcomes.collect(tmp_path)
    assert spawns["toolu_q"].notification.timestamp == "2026-01-01T10:04:00Z"


def test_a_log_that_cannot_be_rewritten_is_a_clear_error(tmp_path, monkeypatch, capsys):
    log = tmp_path / "routing.jsonl"
    original = make_log(log)

    def refuse(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(outcomes, "apply_to_log", refuse)
    assert cli("--projects", str(FIXTURES), "--log", str(log), "--apply") == 2
    assert f"--log: cannot rewrite {log}: Permission denied" in capsys.readouterr().err
    assert log.read_bytes() == original


def test_redo_rules(tmp_path):
    records = [
        # two spawns in one response ran in parallel: not a redo of each other
        spawn("toolu_p1", "2026-01-01T09:00:00Z", "Review the diff", "Review part 1", msg="msg_par"),
        spawn("toolu_p2", "2026-01-01T09:00:00Z", "Review the diff", "Review part 2", msg="msg_par"),
        # different task ids, same words: separate tasks
        spawn("toolu_t1", "2026-01-01T10:00:00Z", "Implement M1-T1", "M1-T1: the parser"),
        spawn("toolu_t2", "2026-01-01T10:10:00Z", "Implement M1-T2", "M1-T2: the printer, retry-safe"),
        # the same task id without a retry marker and another role: not a redo
        spawn("toolu_i1", "2026-01-01T11:00:00Z", "Implement #41", "Issue #41: add the flag"),
        spawn("toolu_i2", "2026-01-01T11:10:00Z", "Review #41", "Review the change for #41", subagent_type="reviewer"),
        # the id in the brief only, "previous attempt" in the brief: a redo
        spawn("toolu_s1", "2026-01-01T12:00:00Z", "Wire the cache", "Step 4: wire the cache"),
        spawn("toolu_s2", "2026-01-01T12:30:00Z", "Wire the cache", "Step 4, second go: the previous attempt "
                                                                      "broke the build"),
    ]
    got = proposals_by_id(tmp_path if write_session(tmp_path, records) else tmp_path)
    for tool_id in ("toolu_p1", "toolu_p2", "toolu_t1", "toolu_t2", "toolu_i1", "toolu_i2", "toolu_s2"):
        assert got[tool_id].outcome == "succeeded", (tool_id, got[tool_id])
    assert (got["toolu_s1"].outcome, got["toolu_s1"].doubtful) == ("failed", False)
    assert got["toolu_s1"].reason == "redone: Step 4 retried by a later spawn"


@pytest.mark.parametrize("text,expected", [
    ("W4-P3: implement it", "W4-P3"), ("Do task  12 now", "task 12"), ("Fix #41 please", "#41"),
    ("Implement M2.T14", "M2.T14"), ("Ticket-7 first", "Ticket-7"), ("UTF-8 and SHA-256 and gpt-4", None),
    ("a&#41; entity", None), ("nothing here", None),
])
def test_task_ids(text, expected):
    call = tr.SpawnCall("t", "", None, Path("x"), 1, "", "", text, "", "general-purpose", None, None, None)
    assert outcomes.task_id(call) == expected


def test_task_ids_compare_loosely():
    assert outcomes._task_key("Task 12") == outcomes._task_key("task #12") == outcomes._task_key("TASK-12")
    assert outcomes._task_key("W4-P3") != outcomes._task_key("W4-P4")


@pytest.mark.parametrize("report,blocked", [
    ("BLOCKED: no credentials", True), ("Blocked on the migration lock.", True), ("Status: blocked", True),
    ("I was blocked by the sandbox", True), ("**Blocked** - cannot reach the index", False),
    ("All done; no tests are blocked.", False), ("- blocked tests: none", False), ("Unblocked the queue", False),
])
def test_blocked_reports(report, blocked):
    assert bool(outcomes.BLOCKED.search(report)) is blocked


# -- over-long lines and a 200 MB transcript ----------------------------------------------------

def test_an_over_long_line_is_skimmed_and_a_spawn_result_salvaged(tmp_path):
    huge = "x" * (tr.MAX_LINE + 1000)
    result = envelope("r-big", "2026-01-01T10:01:00Z", type="user",
                      message={"role": "user", "content": [{"tool_use_id": "toolu_fg", "type": "tool_result",
                                                            "content": [{"type": "text", "text": huge}]}]},
                      toolUseResult={"status": "completed", "agentId": "agFG", "content": [{"type": "text", "text": huge}],
                                     "resolvedModel": "claude-sonnet-5-5", "totalDurationMs": 5})
    write_session(tmp_path, [spawn("toolu_fg", "2026-01-01T10:00:00Z", "Big report", "Report everything",
                                   run_in_background=False), result])
    stats = tr.Stats()
    got = proposals_by_id(tmp_path, stats)
    assert stats.skimmed == 1 and stats.bad_lines == 0
    assert (got["toolu_fg"].outcome, got["toolu_fg"].tier, got["toolu_fg"].doubtful) == ("succeeded", "sonnet", False)


def test_an_over_long_notification_keeps_its_status_and_time(tmp_path):
    note = notified("toolu_long", "2026-01-01T10:30:00Z", "agL", "completed", "r" * (tr.MAX_LINE + 10))
    write_session(tmp_path, [spawn("toolu_long", "2026-01-01T10:00:00Z", "Long one", "Write a novel"),
                             launched("toolu_long", "2026-01-01T10:00:01Z", "agL"), note])
    stats = tr.Stats()
    spawns = outcomes.collect(tmp_path, stats=stats)
    assert stats.skimmed == 1
    got = spawns["toolu_long"].notification
    assert (got.status, got.timestamp, got.result) == ("completed", "2026-01-01T10:30:00Z", "")
    assert proposals_by_id(tmp_path)["toolu_long"].reason == "completed"


def test_a_200_mb_transcript_is_read_in_constant_memory(tmp_path):
    filler = envelope("f", "2026-01-01T10:00:00Z", type="user",
                      message={"role": "user", "content": [{"tool_use_id": "toolu_read", "type": "tool_result",
                                                            "content": "y" * 100_000}]},
                      toolUseResult={"type": "text", "file": {"content": "y" * 100_000}})
    line = dumps(filler)
    block = line * (10_000_000 // len(line))
    path = tmp_path / "-home-dev-big" / f"{SESSION}.jsonl"
    path.parent.mkdir(parents=True)
    with open(path, "wb") as f:
        for i in range(20):  # ≈ 200 MB: 20 × (≈ 10 MB of tool output + one finished spawn)
            f.write(block)
            tool_id = f"toolu_{i:03d}"
            for record in (spawn(tool_id, f"2026-01-01T10:{i:02d}:00Z", f"Chunk {i}", f"Task {i}: chunk"),
                           launched(tool_id, f"2026-01-01T10:{i:02d}:01Z", f"ag{i}"),
                           notified(tool_id, f"2026-01-01T10:{i:02d}:30Z", f"ag{i}", "completed", "ok")):
                f.write(dumps(record))
        f.write(b"x" * (3 * tr.MAX_LINE) + b"\n")  # one 12 MB line: skimmed in 4 MB reads
    size = path.stat().st_size
    assert size > 195_000_000
    tracemalloc.start()
    t0 = time.perf_counter()
    stats = tr.Stats()
    got = proposals_by_id(tmp_path, stats)
    seconds = time.perf_counter() - t0
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert len(got) == 20 and all(p.outcome == "succeeded" and not p.doubtful for p in got.values())
    assert stats.bytes == size and stats.skimmed == 1
    print(f"\n{size / 1e6:.0f} MB in {seconds:.2f} s, peak traced memory {peak / 1e6:.1f} MB")
    assert peak < 3 * tr.MAX_LINE  # one capped line (readline may hold it twice): not the file's size
    assert seconds < 15


# -- the routing log -----------------------------------------------------------------------------

def log_lines() -> list[bytes]:
    prompt = {"ts": "2026-12-02T15:00:00Z", "source": "prompt", "session_id": "s", "prompt": "Explique-moi ça ✓"}
    entry = lambda tool_id, **more: {"ts": "2026-12-02T15:21:47Z", "source": "agent",  # noqa: E731
                                     "session_id": "s", "prompt_id": "p", "repo": "/home/dev/shop",
                                     "cwd": "/home/dev/shop", "prompt": "brief", "description": "d", "model": None,
                                     "subagent_type": "general-purpose", "tool_use_id": tool_id,
                                     "features": None, "rule_tier": "haiku", **more}
    dumps = lambda obj: json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"  # noqa: E731
    return [dumps(prompt), dumps(entry("toolu_mock00010")),
            dumps(entry("toolu_mock00060", outcome="succeeded", outcome_source="user")),
            b'{"source":"agent","tool_use_id":"toolu_mock00080", broken\n',
            b'{ "source" : "guard", "command": "ls" }\n',  # not the hooks' spacing: kept as written
            dumps(entry("toolu_unknown")), dumps(entry("toolu_mock00290")),
            dumps(entry("toolu_mock00110"))[:-1]]  # last line without its newline


def make_log(path: Path) -> bytes:
    path.parent.mkdir(parents=True, exist_ok=True)
    data = b"".join(log_lines())
    path.write_bytes(data)
    os.chmod(path, 0o600)
    return data


def test_apply_writes_outcomes_keeps_the_rest_and_a_backup(tmp_path, capsys):
    log = tmp_path / "logs" / "routing.jsonl"
    original = make_log(log)
    assert cli("--projects", str(FIXTURES), "--log", str(log), "--apply", "--json") == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["applied"] is True and summary["matched_log_entries"] == 4 and summary["updated_log_entries"] == 3
    assert (summary["spawns"], summary["failed"], summary["succeeded"]) == (11, 6, 5)
    assert (tmp_path / "logs" / "routing.jsonl.bak").read_bytes() == original
    assert oct(log.stat().st_mode & 0o777) == "0o600"
    before, after = log_lines(), log.read_bytes().splitlines(keepends=True)
    assert len(after) == len(before)
    for i in (0, 2, 3, 4, 5):  # the prompt line, the user label, the broken line, the guard line, no transcript
        assert after[i] == before[i]
    first, doubtful, last = json.loads(after[1]), json.loads(after[6]), json.loads(after[7])
    assert {k: first[k] for k in first if k.startswith("outcome")} == {
        "outcome": "succeeded", "outcome_reason": "completed", "outcome_tier": "haiku", "outcome_source": "auto"}
    assert doubtful["outcome"] == "failed" and doubtful["outcome_doubtful"] is True
    assert doubtful["outcome_reason"] == "same-role re-spawn" and doubtful["outcome_tier"] == "opus"
    assert last["outcome"] == "failed" and not after[7].endswith(b"\n")
    assert {k: v for k, v in first.items() if not k.startswith("outcome")} == json.loads(before[1])

    rewritten = log.read_bytes()  # a second run changes nothing and writes nothing
    mtime = log.stat().st_mtime_ns
    assert cli("--projects", str(FIXTURES), "--log", str(log), "--apply", "--json") == 0
    again = json.loads(capsys.readouterr().out)
    assert again["updated_log_entries"] == 0 and again["matched_log_entries"] == 4
    assert log.read_bytes() == rewritten and log.stat().st_mtime_ns == mtime
    assert not [p for p in log.parent.iterdir() if p.name.endswith(".tmp")]


def test_apply_updates_its_own_earlier_proposal_but_never_a_human_label(tmp_path):
    log = tmp_path / "routing.jsonl"
    make_log(log)
    proposals = {p.tool_use_id: p for p in outcomes.propose(outcomes.collect(FIXTURES))}
    proposals["toolu_mock00010"].outcome = "failed"  # as if an older run had proposed otherwise
    proposals["toolu_mock00060"].outcome = "succeeded"
    outcomes.apply_to_log(log, proposals)
    proposals = {p.tool_use_id: p for p in outcomes.propose(outcomes.collect(FIXTURES))}
    result = outcomes.apply_to_log(log, proposals)
    assert (result.matched, result.updated, result.kept_user) == (4, 1, 1)
    entries = {e.get("tool_use_id"): e for e in map(json.loads, log.read_bytes().splitlines()[:3])}
    assert entries["toolu_mock00010"]["outcome"] == "succeeded"
    assert entries["toolu_mock00060"]["outcome"] == "succeeded" and entries["toolu_mock00060"]["outcome_source"] == "user"


def test_lines_hooks_append_during_the_rewrite_are_kept(tmp_path, monkeypatch):
    log = tmp_path / "routing.jsonl"
    make_log(log)
    during, after_rename = b'{"source":"prompt","n":1}\n', b'{"source":"prompt","n":2}\n'

    def hook_append(data: bytes) -> None:
        fd = os.open(log, os.O_WRONLY | os.O_APPEND)
        os.write(fd, data)
        os.close(fd)

    real_revised, real_replace = outcomes._revised, os.replace
    calls = []

    def revised(line, proposals, counts):
        if not calls:
            hook_append(during)  # a hook writes while the rewrite reads
        calls.append(1)
        return real_revised(line, proposals, counts)

    def replace(src, dst):
        if Path(dst) == log:  # a hook opened the old name just before the rename, writes just after
            fd = os.open(log, os.O_WRONLY | os.O_APPEND)
            real_replace(src, dst)
            os.write(fd, after_rename)
            os.close(fd)
        else:
            real_replace(src, dst)

    monkeypatch.setattr(outcomes, "_revised", revised)
    monkeypatch.setattr(os, "replace", replace)  # the rewrite lives in routing.log
    result = outcomes.apply_to_log(log, {p.tool_use_id: p for p in outcomes.propose(outcomes.collect(FIXTURES))})
    assert result.written
    data = log.read_bytes()
    assert data.count(during) == 1 and data.count(after_rename) == 1


# -- the command -----------------------------------------------------------------------------------

def test_cli_rejects_bad_input_naming_the_flag(tmp_path, capsys):
    assert cli("--projects", str(tmp_path / "nope")) == 2
    assert "--projects" in capsys.readouterr().err
    assert cli("--projects", str(FIXTURES), "--since", "soon") == 2
    assert "--since" in capsys.readouterr().err
    assert cli("--projects", str(FIXTURES), "--log", str(tmp_path / "none.jsonl")) == 2
    assert "--log" in capsys.readouterr().err


def test_cli_prints_counts_and_doubtful_without_briefs(capsys):
    assert cli("--projects", str(FIXTURES)) == 0
    out = capsys.readouterr().out
    assert "11 spawns, 6 failed, 5 succeeded, 1 doubtful" in " ".join(out.split())
    assert "toolu_mock00290" in out and "same-role re-spawn" in out
    assert "Review the staged diff" not in out and "summarize it in five" not in out
    assert cli("--projects", str(FIXTURES), "--json") == 0
    summary = json.loads(capsys.readouterr().out)
    assert set(summary) >= {"spawns", "failed", "succeeded", "doubtful", "matched_log_entries", "applied"}
    assert summary["applied"] is False and summary["matched_log_entries"] == 0
    assert [d["tool_use_id"] for d in summary["doubtful"]] == ["toolu_mock00290"]
    assert "brief" not in json.dumps(summary) and "Review the staged diff" not in json.dumps(summary)


def test_cli_default_log_and_since(tmp_path, capsys):
    from system1_gateway.routing import log as routing_log

    log = Path(routing_log.path())  # under this test's SYSTEM1_STATE_DIR
    make_log(log)
    projects = tmp_path / "projects"
    shutil.copytree(FIXTURES, projects)
    old = time.time() - 40 * 86400
    for path in projects.rglob("*"):
        os.utime(path, (old, old))
    assert cli("--projects", str(projects), "--since", "30d", "--json", "--apply") == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["spawns"] == 0 and summary["applied"] is True and summary["updated_log_entries"] == 0
    assert cli("--projects", str(projects), "--since", "60d", "--json", "--apply") == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["spawns"] == 11 and summary["updated_log_entries"] == 3
    assert log.with_name("routing.jsonl.bak").exists()


def test_the_default_root_follows_claude_config_dir(monkeypatch, tmp_path):
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "cc"))
    assert tr.default_root() == tmp_path / "cc" / "projects"
    monkeypatch.delenv("CLAUDE_CONFIG_DIR")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert tr.default_root() == tmp_path / ".claude" / "projects"


def test_an_agent_entry_with_a_non_string_tool_use_id_is_kept_as_it_is(tmp_path):
    """A hand-edited routing log line whose tool_use_id is a list or an object (unhashable) is
    left alone, as any other line without a proposal, instead of failing the whole --apply."""
    log = tmp_path / "routing.jsonl"
    make_log(log)
    odd = [b'{"source":"agent","tool_use_id":["toolu_mock00010"]}\n', b'{"source":"agent","tool_use_id":{"a":1}}\n']
    log.write_bytes(log.read_bytes().rstrip(b"\n") + b"\n" + b"".join(odd))
    proposals = {p.tool_use_id: p for p in outcomes.propose(outcomes.collect(FIXTURES))}
    result = outcomes.apply_to_log(log, proposals)
    assert result.matched == 4
    assert log.read_bytes().splitlines(keepends=True)[-2:] == odd
