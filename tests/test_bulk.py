"""`system1 bulk`: the batch plan, ordered and resumable output, the local pool, real
Ray in local mode (an actor pool over Ray Data), a crash and resume, the CLI."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ci_gate import require
from system1_gateway import bulk
from system1_gateway.bulk import chunks


def request(i: int) -> dict:
    return {"request_id": f"r{i}", "state": f"rm -rf build{i}/",
            "questions": {"q": {"type": "noul", "instructions": "Is it destructive?"}}}


def write_input(path: Path, n: int, bad: dict[int, bytes] | None = None) -> Path:
    """n rows; `bad` replaces some rows with raw bytes; a blank line every 50 rows (skipped)."""
    with path.open("wb") as fh:
        for i in range(n):
            fh.write((bad or {}).get(i) or json.dumps(request(i)).encode())
            fh.write(b"\n\n" if i % 50 == 49 else b"\n")
    return path


def results(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.fixture
def mock_chain(monkeypatch):
    monkeypatch.setenv("SYSTEM1_PROVIDER", "mock")


# -- the plan ----------------------------------------------------------------------------------
def test_plan_cuts_whole_lines_and_skips_blank_ones(tmp_path):
    path = write_input(tmp_path / "in.jsonl", 120)
    plan = list(chunks.plan(path, 32))
    assert [c.first_row for c in plan] == [0, 32, 64, 96]
    rows = [json.loads(line)["request_id"] for c in plan for _, line in chunks.read(path, c)]
    assert rows == [f"r{i}" for i in range(120)]
    # line numbers count the blank lines: row 50 is on line 52
    (second,) = [c for c in plan if c.first_row == 32]
    numbers = dict((json.loads(line)["request_id"], n) for n, line in chunks.read(path, second))
    assert numbers["r50"] == 52
    resumed = list(chunks.plan(path, 32, skip_rows=70))
    assert resumed[0].first_row == 70 and sum(1 for c in resumed for _ in chunks.read(path, c)) == 50


def test_done_rows_cuts_a_torn_last_line(tmp_path):
    out = tmp_path / "out.jsonl"
    assert chunks.done_rows(out) == 0
    out.write_bytes(b'{"a": 1}\n{"a": 2}\n{"a": 3, "tor')
    assert chunks.done_rows(out) == 2 and out.read_bytes() == b'{"a": 1}\n{"a": 2}\n'


def test_default_batch_size_follows_rows_and_workers():
    assert bulk.default_batch(10, 2) == bulk.MIN_BATCH
    assert bulk.default_batch(16_000, 2) == 1000 and bulk.default_batch(8_000, 4) == 250


# -- the local pool ----------------------------------------------------------------------------
def test_pool_writes_every_row_in_order_with_per_line_errors(tmp_path, mock_chain):
    source = write_input(tmp_path / "in.jsonl", 300, bad={7: b"{not json", 200: b"\xff\xfe", 250: b'{"state": 5}'})
    summary = bulk.run(source, tmp_path / "out.jsonl", runner="pool", workers=2, batch_size=40)
    out = results(tmp_path / "out.jsonl")
    assert len(out) == 300 and summary.rows == 300 and summary.runner == "pool" and summary.workers == 2
    assert [r["request_id"] for i, r in enumerate(out) if i not in (7, 200, 250)] == \
        [f"r{i}" for i in range(300) if i not in (7, 200, 250)]
    assert out[7]["error"]["code"] == "invalid_request" and out[7]["error"]["message"].startswith("line 8: invalid JSON")
    assert "line 205: not UTF-8" in out[200]["error"]["message"]   # 4 blank lines before it
    assert out[250]["error"]["message"].startswith("line 256: ")
    assert summary.ok == 297 and summary.errors == {"invalid_request": 3}
    assert all(r["provider"] == "mock" for i, r in enumerate(out) if i not in (7, 200, 250))


def test_resume_skips_the_rows_already_written(tmp_path, mock_chain):
    source = write_input(tmp_path / "in.jsonl", 200)
    out = tmp_path / "out.jsonl"
    bulk.run(source, out, runner="pool", workers=1, batch_size=50)
    full = results(out)
    kept = out.read_bytes().split(b"\n")[:120]
    out.write_bytes(b"\n".join(kept) + b"\n" + b'{"schema_version": "1", "request_id": "r1')  # torn write
    summary = bulk.run(source, out, runner="pool", workers=2, batch_size=30)
    assert summary.resumed_from == 120 and summary.rows == 80
    assert [r["request_id"] for r in results(out)] == [r["request_id"] for r in full]
    assert bulk.run(source, out, runner="pool", workers=2).rows == 0  # nothing left


def test_without_ray_it_says_so_and_uses_the_pool(tmp_path, mock_chain, monkeypatch):
    monkeypatch.setattr(bulk, "ray_available", lambda: False)
    summary = bulk.run(write_input(tmp_path / "in.jsonl", 20), tmp_path / "out.jsonl", workers=1)
    assert summary.runner == "pool" and "ray is not installed" in summary.note
    with pytest.raises(RuntimeError, match=r"system1-gateway\[scale\]"):
        bulk.run(tmp_path / "in.jsonl", tmp_path / "out2.jsonl", runner="ray")


def test_usage_is_summed_where_engines_report_it(tmp_path, monkeypatch):
    from fault_engine import FaultEngine

    engine = FaultEngine("ok")
    monkeypatch.setenv("SYSTEM1_PROVIDER", "fault")
    config = tmp_path / "config.toml"
    config.write_text(f'[providers.fault]\nkind = "systemone"\nendpoint = "{engine.url}"\nmodel = "fault-1"\n')
    monkeypatch.setenv("SYSTEM1_CONFIG", str(config))
    try:
        summary = bulk.run(write_input(tmp_path / "in.jsonl", 30), tmp_path / "out.jsonl", runner="pool", workers=2)
    finally:
        engine.close()
    assert summary.ok == 30 and summary.tokens == {"input_tokens": 1200, "output_tokens": 60, "reported": 30}


# -- real Ray, local mode -----------------------------------------------------------------------
@pytest.fixture(scope="module")
def local_ray():
    require(bulk.ray_available(), "ray[data] (the scale extra)")
    yield
    import ray

    ray.shutdown()


def test_ray_actor_pool_keeps_input_order_and_resumes(tmp_path, mock_chain, local_ray):
    source = write_input(tmp_path / "in.jsonl", 600, bad={333: b"[1, 2"})
    out = tmp_path / "out.jsonl"
    summary = bulk.run(source, out, runner="ray", workers=2, batch_size=25)
    got = results(out)
    assert summary.runner == "ray" and summary.workers == 2 and summary.rows == 600
    assert [r["request_id"] for i, r in enumerate(got) if i != 333] == [f"r{i}" for i in range(600) if i != 333]
    assert got[333]["error"]["message"].startswith("line 340: invalid JSON")
    assert summary.errors == {"invalid_request": 1} and summary.ok == 599
    lines = out.read_bytes().split(b"\n")
    out.write_bytes(b"\n".join(lines[:410]) + b"\n")
    again = bulk.run(source, out, runner="ray", workers=2, batch_size=40)
    assert again.resumed_from == 410 and again.rows == 190
    assert [r["request_id"] for r in results(out)] == [r["request_id"] for r in got]


# -- the CLI, and a crash in the middle ---------------------------------------------------------
def cli(*args: str, env: dict | None = None, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "system1_gateway.cli", "bulk", *args], capture_output=True,
                          text=True, env={**os.environ, **(env or {})}, timeout=300, **kw)


def test_cli_summary_exit_codes_and_bad_flags(tmp_path, mock_chain):
    source = write_input(tmp_path / "in.jsonl", 40, bad={3: b"nope"})
    done = cli(str(source), str(tmp_path / "out.jsonl"), "--pool", "--workers", "2")
    assert done.returncode == 1, done.stderr  # one row failed
    summary = json.loads(done.stdout)
    assert summary["rows"] == 40 and summary["errors"] == {"invalid_request": 1} and summary["runner"] == "pool"
    bad = cli(str(source), str(tmp_path / "o.jsonl"), "--workers", "0")
    assert bad.returncode == 2 and "--workers: expected a whole number from 1 to 100000, got 0" in bad.stdout
    missing = cli(str(tmp_path / "nope.jsonl"), str(tmp_path / "o.jsonl"), "--pool")
    assert missing.returncode == 2 and "nope.jsonl" in missing.stdout


def test_a_killed_run_resumes_without_losing_or_repeating_rows(tmp_path):
    source = write_input(tmp_path / "in.jsonl", 400)
    out = tmp_path / "out.jsonl"
    env = {"SYSTEM1_PROVIDER": "mock", "SYSTEM1_MOCK_LATENCY_MS": "5"}
    proc = subprocess.Popen([sys.executable, "-m", "system1_gateway.cli", "bulk", str(source), str(out), "--pool",
                             "--workers", "2", "--batch-size", "20"], env={**os.environ, **env},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    deadline = time.monotonic() + 60
    while (not out.exists() or out.stat().st_size < 20_000) and time.monotonic() < deadline:
        time.sleep(0.02)
    os.killpg(proc.pid, signal.SIGKILL)  # the driver and its pool, mid-run
    proc.wait()
    written = chunks.done_rows(out)
    assert 0 < written < 400
    done = cli(str(source), str(out), "--pool", "--workers", "2", env=env)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["resumed_from"] == written
    assert [r["request_id"] for r in results(out)] == [f"r{i}" for i in range(400)]


def test_a_script_without_a_main_guard_gets_told_how_to_fix_it(tmp_path):
    # the pool spawns its processes, and each imports the calling script again: unguarded,
    # that import calls bulk.run() once more and the worker dies while starting
    source = write_input(tmp_path / "in.jsonl", 10)
    script = tmp_path / "unguarded.py"
    script.write_text("from system1_gateway import bulk\n"
                      f"bulk.run({str(source)!r}, {str(tmp_path / 'out.jsonl')!r}, runner='pool', workers=1)\n")
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "SYSTEM1_PROVIDER": "mock"})
    assert done.returncode != 0
    assert 'call it under `if __name__ == "__main__":`' in done.stderr, done.stderr[-2000:]
