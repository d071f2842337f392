"""`system1 decide`/`judge` through a running daemon: its answer, the exit codes, `--provider`,
settings that differ (in-process, and said so), no daemon, a stale port file.

The daemon is the real one (`system1 daemon start`, port 0).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from conftest import judge_payload, lock_holder, run_cli
from helpers.daemon import MOCK_CONFIG, RunningDaemon, route
from system1_gateway.daemon import files as daemon_files
from system1_gateway.model.results import decide_response_adapter, judge_result_adapter


@pytest.fixture(scope="module")
def mock_daemon_home(tmp_path_factory):
    """One daemon of MOCK_CONFIG for the module's tests that only ask it (none stops, kills or
    reconfigures it): its state dir and config, as the environment a test points at."""
    base = tmp_path_factory.mktemp("mock-daemon")
    config = base / "config.toml"
    config.write_text(MOCK_CONFIG)
    env = {"SYSTEM1_STATE_DIR": str(base / "state"), "XDG_CONFIG_HOME": str(base / "xdg"),
           "SYSTEM1_SERVE_AUTOSTART": "0", "SYSTEM1_CONFIG": str(config)}
    with pytest.MonkeyPatch.context() as patch:  # the environment a test has (tests/conftest.py)
        for var in [v for v in os.environ if v.startswith("SYSTEM1_")]:
            patch.delenv(var)
        for var, value in env.items():
            patch.setenv(var, value)
        daemon = RunningDaemon()
        try:
            yield env, daemon
        finally:
            daemon.stop()


@pytest.fixture
def mock_daemon(mock_daemon_home, monkeypatch):
    """The module's running MOCK_CONFIG daemon, in this test's environment."""
    env, daemon = mock_daemon_home
    for var, value in env.items():
        monkeypatch.setenv(var, value)
    assert daemon_files.pid_alive(daemon.pid), "the module's daemon died"
    return daemon


def test_decide_is_answered_by_the_running_daemon(mock_daemon):
    daemon = mock_daemon
    code, out, _ = run_cli("decide", "Is `rm -rf build/` destructive?")
    assert code == 0
    decide_response_adapter.validate_python(out[0])
    assert out[0]["status"] == "decided" and out[0]["provider"] == "first" and out[0]["model"] == "first-model"
    assert route(out[0])["outcome"] == "ok" and f"pid {daemon.pid}" in route(out[0])["detail"]
    assert out[0]["attempts"][1]["provider"] == "first"


def test_judge_and_jsonl_through_the_daemon_keep_exit_codes(mock_daemon):
    code, out, _ = run_cli("judge", input=json.dumps(judge_payload()))
    assert code == 0 and route(out[0])["outcome"] == "ok"
    judge_result_adapter.validate_python(out[0])
    code, out, _ = run_cli("judge", input=json.dumps({"state": "s", "questions": {}}))
    assert code == 2 and out[0]["error"]["code"] == "invalid_request" and route(out[0])["outcome"] == "ok"
    lines = "\n".join([json.dumps(judge_payload()), "{nope", json.dumps(judge_payload())]) + "\n"
    code, out, _ = run_cli("judge", "--jsonl", input=lines)
    assert code == 2 and len(out) == 3
    assert route(out[0])["outcome"] == "ok" and route(out[2])["outcome"] == "ok"
    assert out[1]["error"]["code"] == "invalid_request" and "line 2" in out[1]["error"]["message"]


def test_a_failing_chain_through_the_daemon_exits_1(write_config, start_daemon):
    write_config('[gateway]\nprovider = "mock"\n[providers.mock]\nmode = "fail"\nfailure = "overload"\n')
    start_daemon()
    code, out, _ = run_cli("decide", "ok?")
    assert code == 1 and out[0]["status"] == "error" and out[0]["error"]["code"] == "provider_error"
    assert route(out[0])["outcome"] == "ok"


def test_provider_flag_is_passed_to_the_daemon(mock_daemon):
    code, out, _ = run_cli("decide", "ok?", "--provider", "second")
    assert code == 0 and out[0]["provider"] == "second" and out[0]["decision"] == "no"
    assert out[0]["attempts"][1:] and [a["provider"] for a in out[0]["attempts"][1:]] == ["second"]
    assert route(out[0])["outcome"] == "ok"
    code, out, _ = run_cli("decide", "ok?", "--provider", "nosuch")
    assert code == 2 and "--provider: 'nosuch' is not a configured rung" in out[0]["error"]["message"]


BAD_CHAINS = [["--chain", "second,second"], ["--chain", "first,,second"], ["--chain", "first,nosuch"],
              ["--provider", "nosuch,first"], ["--chain", "first", "--provider", "second"]]


def test_chain_flag_is_passed_to_the_daemon_and_agrees_with_in_process(write_config, start_daemon):
    write_config(MOCK_CONFIG + '[providers.broken]\nkind = "mock"\nmode = "fail"\n')
    daemon = start_daemon()
    request = json.dumps(judge_payload())
    code, out, _ = run_cli("judge", "--chain", "broken,second,mock", input=request)
    assert code == 0 and route(out[0])["outcome"] == "ok" and f"pid {daemon.pid}" in route(out[0])["detail"]
    assert out[0]["order"] == ["broken", "second", "mock"] and out[0]["provider"] == "second"
    by_daemon = [(a["provider"], a["outcome"]) for a in out[0]["attempts"][1:]]
    assert by_daemon == [("broken", "error"), ("second", "ok")]
    refusals = [run_cli("decide", "ok?", *args) for args in BAD_CHAINS]
    assert all(code == 2 and out[0]["error"]["code"] == "invalid_request" for code, out, _ in refusals)
    daemon.stop()
    code, out, _ = run_cli("judge", "--chain", "broken,second,mock", input=request)
    assert code == 0 and route(out[0]) == {} and out[0]["order"] == ["broken", "second", "mock"]
    assert [(a["provider"], a["outcome"]) for a in out[0]["attempts"]] == by_daemon
    in_process = [run_cli("decide", "ok?", *args) for args in BAD_CHAINS]
    assert [out[0]["error"]["message"] for _, out, _ in in_process] == \
        [out[0]["error"]["message"] for _, out, _ in refusals]


def test_a_chain_override_sent_to_the_daemon_is_checked_there_too(mock_daemon):
    """What dispatch.ask sends (`?provider=a,b`) the daemon checks itself: a caller that skipped
    the CLI's own check gets the 422 result, never the daemon's configured chain."""
    from system1_gateway.daemon import dispatch

    routed = dispatch.ask("/v1/judge", judge_payload(), provider="second,second", autostart=False)
    assert routed.result["error"]["code"] == "invalid_request"
    assert routed.result["error"]["message"] == "provider: lists 'second' twice (expected each rung once)"
    routed = dispatch.ask("/v1/judge", judge_payload(), provider="second,first", autostart=False)
    assert routed.result["order"] == ["second", "first"] and routed.result["provider"] == "second"


def test_an_environment_override_runs_in_process_and_says_so(mock_daemon):
    daemon = mock_daemon
    code, out, _ = run_cli("decide", "ok?", env={"SYSTEM1_MIN_CONFIDENCE": "0.95"})
    assert code == 0 and out[0]["status"] == "abstained"  # the override applied: mock confidence is 0.9
    assert route(out[0])["outcome"] == "skipped" and "in-process" in route(out[0])["detail"]
    assert f"pid {daemon.pid}" in route(out[0])["detail"]


def test_no_daemon_runs_in_process_as_before(write_config):
    write_config(MOCK_CONFIG)
    code, out, _ = run_cli("decide", "ok?")
    assert code == 0 and route(out[0]) == {} and out[0]["attempts"][0]["provider"] == "first"


def test_a_stale_port_file_costs_under_100_ms(write_config):
    """A port file left by a daemon killed with -9: the client sees the dead pid and answers
    in-process; the check itself is measured in-process (a subprocess's wall time on a shared
    machine would measure the machine)."""
    from system1_gateway.daemon import dispatch

    write_config(MOCK_CONFIG)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    record = {"pid": dead.pid, "host": "127.0.0.1", "port": 9, "url": "http://127.0.0.1:9",
              "fingerprint": daemon_files.fingerprint(), "version": "0", "started": time.time()}
    daemon_files.write_private(daemon_files.port_path(), json.dumps(record))
    t0 = time.perf_counter()
    routed = dispatch.ask("/v1/decide", {"question": "ok?"}, autostart=False)
    extra = time.perf_counter() - t0
    assert routed.result is None and routed.note is None and extra < 0.1, extra
    code, out, _ = run_cli("decide", "ok?")
    assert code == 0 and route(out[0]) == {} and out[0]["provider"] == "first"


def test_a_live_pid_with_a_closed_port_falls_back_quickly(write_config):
    """The pid is alive and holds the lock (a daemon whose listener is gone, say while it
    stops) but nothing listens: refused at once."""
    from system1_gateway.daemon import dispatch

    write_config(MOCK_CONFIG)
    sleeper = lock_holder(60)
    try:
        record = {"pid": sleeper.pid, "host": "127.0.0.1", "port": 9, "url": "http://127.0.0.1:9",
                  "fingerprint": daemon_files.fingerprint(), "version": "0", "started": time.time()}
        daemon_files.write_private(daemon_files.port_path(), json.dumps(record))
        t0 = time.perf_counter()
        routed = dispatch.ask("/v1/decide", {"question": "ok?"}, autostart=False)
        extra = time.perf_counter() - t0
        assert routed.result is None and routed.note["outcome"] == "error" and extra < 0.1, extra
        code, out, _ = run_cli("decide", "ok?")
        assert code == 0 and route(out[0])["outcome"] == "error" and out[0]["provider"] == "first"
        assert "answered in-process" in route(out[0])["detail"]
    finally:
        sleeper.kill()
        sleeper.wait()
