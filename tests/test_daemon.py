"""The daemon lifecycle with real processes: `system1 daemon start|stop|status|restart|run`.

Every daemon here serves the mock rung (no model loads) on a free port (SYSTEM1_SERVE_PORT=0)
in the test's own state dir, and the `daemons` fixture stops every one it saw, whatever the
test did.
"""

from __future__ import annotations

import http.client
import json
import os
import resource
import select
import selectors
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Callable

import pytest

from conftest import run_cli
from system1_gateway.daemon import client, lifecycle
from system1_gateway.daemon import files as daemon_files

LINUX = sys.platform.startswith("linux") and Path("/proc/self/environ").exists()


def _post(url: str, path: str, payload: dict, timeout: float = 30.0) -> dict:
    """POST as this user's programs do: with the daemon's token from its port file."""
    host, port = url.removeprefix("http://").rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port), timeout=timeout)
    headers = {"Content-Type": "application/json", "Authorization": f"Bearer {_token()}"}
    try:
        conn.request("POST", path, json.dumps(payload), headers)
        return json.loads(conn.getresponse().read())
    finally:
        conn.close()


def _token() -> str | None:
    return (daemon_files.read_port() or {}).get("token")


def _healthz(url: str) -> dict | None:
    """/healthz as the owner sees it (pid, version, … need the token)."""
    return lifecycle.healthz(url, token=_token())


def _wait(predicate, timeout: float = 15.0, step: float = 0.05) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(step)
    return predicate()


def _daemon_processes(state_dir: Path) -> list[int]:
    """Pids of `daemon run` processes serving this state dir (Linux /proc)."""
    found = []
    marker = f"SYSTEM1_STATE_DIR={state_dir}".encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
            env = (entry / "environ").read_bytes().split(b"\0")
            zombie = (entry / "stat").read_text().split(")")[-1].split()[0] == "Z"
        except OSError:
            continue
        if b"daemon" in argv and b"run" in argv and marker in env and not zombie:
            found.append(int(entry.name))
    return found


@pytest.fixture
def daemons(monkeypatch):
    """Mock rung, free port; records every daemon pid it is shown and ends them all after."""
    monkeypatch.setenv("SYSTEM1_PROVIDER", "mock")
    monkeypatch.setenv("SYSTEM1_SERVE_PORT", "0")
    seen: set[int] = set()

    def track(pid: int | None) -> int | None:
        if pid:
            seen.add(pid)
        return pid

    yield track
    record = daemon_files.read_port()
    if record:
        seen.add(record["pid"])
    lifecycle.stop(timeout_s=5)
    for pid in seen:
        if daemon_files.pid_alive(pid) and lifecycle._looks_like_daemon(pid):
            os.kill(pid, signal.SIGKILL)


def _start(track, *extra_env: tuple[str, str]) -> dict:
    code, out, err = run_cli("daemon", "start", env=dict(extra_env))
    assert len(out) == 1, err
    track(out[0].get("pid"))
    assert code == 0 and out[0]["status"] in ("started", "running"), out[0]
    return out[0]


def test_status_start_status_stop_status(daemons):
    code, out, _ = run_cli("daemon", "status")
    assert code == 0 and out[0]["running"] is False and out[0]["state"] == "stopped"

    started = _start(daemons)
    assert started["status"] == "started" and started["health"] in ("ok", "loading")
    assert started["url"].startswith("http://127.0.0.1:") and started["fingerprint_matches"] is True

    proc = subprocess.run([sys.executable, "-m", "system1_gateway.cli", "daemon", "status", "--pretty"],
                          capture_output=True, text=True, timeout=60, env=dict(os.environ))
    status = json.loads(proc.stdout)
    assert proc.returncode == 0 and proc.stdout.count("\n") > 5  # --pretty indents
    assert status["running"] is True and status["state"] == "running"
    assert status["pid"] == started["pid"] and status["url"] == started["url"]
    assert status["uptime_s"] >= 0 and status["fingerprint_matches"] is True
    assert status["log"] == str(daemon_files.log_path())

    # Another caller's settings (an environment override) are not this daemon's.
    code, out, _ = run_cli("daemon", "status", env={"SYSTEM1_MOCK_LATENCY_MS": "7"})
    assert out[0]["running"] is True and out[0]["fingerprint_matches"] is False

    code, out, _ = run_cli("daemon", "stop")
    assert code == 0 and out[0]["stopped"] is True and out[0]["graceful"] is True
    assert not daemon_files.pid_alive(started["pid"]) or not lifecycle._looks_like_daemon(started["pid"])
    assert not daemon_files.port_path().exists() and not daemon_files.pid_path().exists()
    code, out, _ = run_cli("daemon", "status")
    assert out[0]["running"] is False and "stale_files" not in out[0]


def test_port_file_is_private_and_describes_the_daemon(daemons):
    started = _start(daemons)
    directory = daemon_files.daemon_dir()
    assert stat.S_IMODE(directory.stat().st_mode) == 0o700
    for path in (daemon_files.port_path(), daemon_files.pid_path(), daemon_files.lock_path()):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
    record = daemon_files.read_port()
    assert record["pid"] == started["pid"] and record["fingerprint"] == daemon_files.fingerprint()
    assert record["url"] == f"http://127.0.0.1:{record['port']}" and record["host"] == "127.0.0.1"
    assert daemon_files.pid_path().read_text().strip() == str(started["pid"])
    health = _healthz(record["url"])
    assert health["pid"] == started["pid"]


def test_the_daemon_answers_with_the_callers_chain(daemons):
    started = _start(daemons)
    answer = _post(started["url"], "/v1/decide", {"question": "Is `ls` destructive?"})
    assert answer["status"] == "decided" and answer["provider"] == "mock"


@pytest.mark.skipif(not LINUX, reason="counts processes through /proc")
def test_concurrent_starts_make_one_daemon(daemons, isolated_env):
    env = {**os.environ}
    procs = [subprocess.Popen([sys.executable, "-m", "system1_gateway.cli", "daemon", "start"], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(3)]
    results = []
    for proc in procs:
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err
        results.append(json.loads(out))
    pids = {daemons(result["pid"]) for result in results}
    assert len(pids) == 1, results
    assert [result["status"] for result in results].count("started") == 1  # one spawned, two found it
    state = Path(os.environ["SYSTEM1_STATE_DIR"])
    time.sleep(0.5)  # a loser spawned by a racing start would still be alive now
    assert _daemon_processes(state) == list(pids)


def test_kill_9_then_start_replaces_the_stale_files(daemons):
    first = _start(daemons)
    os.kill(first["pid"], signal.SIGKILL)
    assert _wait(lambda: not lifecycle.lock_held())
    code, out, _ = run_cli("daemon", "status")
    assert out[0]["running"] is False and out[0]["stale_files"] is True

    second = _start(daemons)
    assert second["status"] == "started" and second["pid"] != first["pid"]
    assert set(second["stale_files_replaced"]) == {"daemon.port", "daemon.pid"}
    assert daemon_files.read_port()["pid"] == second["pid"]
    assert _healthz(second["url"])["pid"] == second["pid"]


def test_a_garbled_port_file_is_absent(daemons):
    daemon_files.daemon_dir().mkdir(mode=0o700, parents=True)
    daemon_files.port_path().write_text('{"pid": 1, "port": "not a number"')
    assert daemon_files.read_port() is None
    code, out, _ = run_cli("daemon", "status")
    assert code == 0 and out[0]["running"] is False and out[0]["stale_files"] is True
    started = _start(daemons)
    assert started["status"] == "started" and "daemon.port" in started["stale_files_replaced"]
    assert daemon_files.read_port()["pid"] == started["pid"]


def test_stop_lets_an_in_flight_request_finish(daemons):
    started = _start(daemons, ("SYSTEM1_MOCK_LATENCY_MS", "1500"))
    answers: list[dict] = []
    slow = threading.Thread(target=lambda: answers.append(
        _post(started["url"], "/v1/decide", {"question": "Is `ls` destructive?"})))
    slow.start()
    time.sleep(0.5)  # the request is in flight
    t0 = time.monotonic()
    stopping = threading.Thread(target=lambda: stopped.append(
        run_cli("daemon", "stop", env={"SYSTEM1_MOCK_LATENCY_MS": "1500"})))
    stopped: list = []
    stopping.start()
    # The port file goes before the listener closes (another user could take the port while
    # requests drain, and a client reading the file would send it the token).
    assert _wait(lambda: not daemon_files.port_path().exists(), 10) and slow.is_alive()
    stopping.join(60)
    code, out, _ = stopped[0]
    slow.join(30)
    assert code == 0 and out[0]["stopped"] is True and out[0]["graceful"] is True
    assert answers and answers[0]["status"] == "decided", answers
    assert time.monotonic() - t0 >= 0.5  # stop waited for the request rather than cutting it off
    assert not daemon_files.port_path().exists()


def test_idle_exit_is_a_clean_exit_that_removes_the_files(daemons):
    env = {**os.environ, "SYSTEM1_SERVE_IDLE_EXIT_MIN": "0.02"}  # 1.2 s
    proc = subprocess.Popen([sys.executable, "-I", "-m", "system1_gateway.cli", "daemon", "run"], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    daemons(proc.pid)
    try:
        assert _wait(lambda: (daemon_files.read_port() or {}).get("pid") == proc.pid)
        record = daemon_files.read_port()
        assert _healthz(record["url"]) is not None  # probes do not count as use
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    assert json.loads(out.splitlines()[-1]) == {"status": "exited", "reason": "idle for 0.02 min", "exit_code": 0}
    assert "no request for 0.02 min" in err
    assert not daemon_files.port_path().exists() and not daemon_files.pid_path().exists()
    assert not lifecycle.lock_held()


def test_a_request_postpones_the_idle_exit(daemons):
    started = _start(daemons, ("SYSTEM1_SERVE_IDLE_EXIT_MIN", "0.03"))  # 1.8 s
    t0 = time.monotonic()
    for _ in range(3):
        time.sleep(1.0)
        assert _post(started["url"], "/v1/decide", {"question": "Is `ls` destructive?"})["status"] == "decided"
    assert daemon_files.pid_alive(started["pid"]) and time.monotonic() - t0 > 2.5
    assert _wait(lambda: not lifecycle.lock_held(), timeout=20)
    assert not daemon_files.port_path().exists()


def test_start_replaces_a_daemon_with_other_settings_and_autostart_does_not(daemons, monkeypatch):
    first = _start(daemons)
    monkeypatch.setenv("SYSTEM1_MOCK_LATENCY_MS", "3")  # other settings from here on
    monkeypatch.setenv("SYSTEM1_SERVE_AUTOSTART", "1")
    assert lifecycle.ensure_running() is None  # never steals the daemon another caller started
    assert daemon_files.read_port()["pid"] == first["pid"]

    second = lifecycle.start()
    daemons(second.get("pid"))
    assert second["status"] == "started" and second["pid"] != first["pid"]
    assert second["replaced"]["pid"] == first["pid"] and "other settings" in second["replaced"]["reason"]
    assert second["fingerprint_matches"] is True


def test_ensure_running_starts_detached_then_finds_it(daemons, monkeypatch):
    monkeypatch.setenv("SYSTEM1_SERVE_AUTOSTART", "1")
    t0 = time.monotonic()
    first = lifecycle.ensure_running()
    assert first["status"] == "starting" and time.monotonic() - t0 < 2.0  # no wait for readiness
    daemons(first.get("pid"))
    assert _wait(lambda: _healthz((daemon_files.read_port() or {"url": ""})["url"]) is not None, 30)
    again = lifecycle.ensure_running()
    assert again["status"] == "running" and again["pid"] == first["pid"]


def test_ensure_running_respects_autostart_off(daemons, monkeypatch, write_config):
    monkeypatch.setenv("SYSTEM1_SERVE_AUTOSTART", "0")
    assert lifecycle.ensure_running() is None
    monkeypatch.delenv("SYSTEM1_SERVE_AUTOSTART")
    write_config("[serve]\nautostart = false\n")
    assert lifecycle.ensure_running() is None
    assert not lifecycle.lock_held() and daemon_files.read_port() is None


def test_autostart_setting_is_read_without_pydantic(monkeypatch, write_config):
    assert lifecycle.autostart_enabled({}) is True
    assert lifecycle.autostart_enabled({"SYSTEM1_SERVE_AUTOSTART": "off"}) is False
    assert lifecycle.autostart_enabled({"SYSTEM1_SERVE_AUTOSTART": "yes"}) is True
    write_config("[serve]\nautostart = false\n")
    assert lifecycle.autostart_enabled({}) is False
    assert lifecycle.autostart_enabled({"SYSTEM1_SERVE_AUTOSTART": "1"}) is True
    write_config("[serve\nautostart = ")  # broken: the in-process path reports it; no autostart
    assert lifecycle.autostart_enabled({}) is False


@pytest.mark.parametrize("file, env, expected", [
    ("", "", True), ("[serve]\nautostart = false\n", "", False), ("", "maybe", False),
    ('[serve]\nautostart = "perhaps"\n', "", False), ('[serve]\nautostart = "on"\n', "", True),
    ("[serve\n", "", False), ("[serve\n", "yes", True), ("[serve]\nautostart = false\n", "Y", True),
])
def test_every_fast_path_reads_autostart_the_same_way(monkeypatch, write_config, file, env, expected):
    """One reader: the daemon's autostart check and the CLI's fast path agree, on malformed
    values too (no autostart: the in-process path reports the error)."""
    from system1_gateway.daemon import client

    write_config(file)
    environ = {"SYSTEM1_SERVE_AUTOSTART": env} if env else {}
    monkeypatch.delenv("SYSTEM1_SERVE_AUTOSTART", raising=False)
    for key, value in environ.items():
        monkeypatch.setenv(key, value)
    assert lifecycle.autostart_enabled(environ) is expected
    assert client.peek().autostart is expected


def test_ensure_running_with_a_daemon_up_imports_the_stdlib_only(daemons):
    _start(daemons)
    probe = ("import json, sys; from system1_gateway.daemon import lifecycle; r = lifecycle.ensure_running(); "
             "print(json.dumps({'status': r and r['status'], 'heavy': [m for m in "
             "('pydantic', 'fastapi', 'uvicorn', 'mcp', 'httpx', 'numpy', 'http.client', 'ssl', 'subprocess') if m in sys.modules]}))")
    proc = subprocess.run([sys.executable, "-I", "-c", probe], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "SYSTEM1_SERVE_AUTOSTART": "1"})
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == {"status": "running", "heavy": []}


def test_a_taken_port_falls_back_to_a_free_one(daemons, monkeypatch):
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", 0))
        squatter.listen()
        taken = squatter.getsockname()[1]
        monkeypatch.setenv("SYSTEM1_SERVE_PORT", str(taken))
        started = _start(daemons)
        record = daemon_files.read_port()
        assert record["port"] != taken and started["url"].endswith(f":{record['port']}")
        assert f"port {taken} on 127.0.0.1 is taken" in daemon_files.log_path().read_text()


def test_run_while_a_daemon_serves_exits_0_without_serving(daemons):
    started = _start(daemons)
    proc = subprocess.run([sys.executable, "-I", "-m", "system1_gateway.cli", "daemon", "run"],
                          capture_output=True, text=True, timeout=60, env=dict(os.environ))
    result = json.loads(proc.stdout)
    assert proc.returncode == 0 and result["already_running"] is True and result["pid"] == started["pid"]
    assert daemon_files.read_port()["pid"] == started["pid"]  # the serving daemon's files are untouched


def test_restart_gives_a_new_daemon(daemons):
    first = _start(daemons)
    code, out, _ = run_cli("daemon", "restart")
    daemons(out[0].get("pid"))
    assert code == 0 and out[0]["status"] == "started" and out[0]["pid"] != first["pid"]
    assert out[0]["stop"]["stopped"] is True and out[0]["stop"]["pid"] == first["pid"]


def test_stop_without_a_daemon_cleans_stale_files(daemons):
    code, out, _ = run_cli("daemon", "stop")
    assert code == 0 and out[0] == {"stopped": False, "running": False, "detail": "no daemon is running"}
    daemon_files.write_private(daemon_files.pid_path(), "999999\n")
    code, out, _ = run_cli("daemon", "stop")
    assert code == 0 and out[0]["stale_files_removed"] == ["daemon.pid"]
    assert not daemon_files.pid_path().exists()


def test_a_daemon_that_cannot_serve_is_reported_with_its_log(daemons, monkeypatch):
    monkeypatch.setenv("SYSTEM1_SERVE_HOST", "0.0.0.0")  # no bearer key: the server refuses (exit 2)
    code, out, _ = run_cli("daemon", "start")
    assert code == 1 and out[0]["status"] == "failed"
    assert "exited with code 2" in out[0]["error"]["message"]
    assert any("refusing to bind 0.0.0.0" in line for line in out[0]["log_tail"])
    assert not lifecycle.lock_held()


def test_apply_is_only_for_login_units():
    code, out, _ = run_cli("daemon", "status", "--apply")
    assert code == 2 and out[0]["error"]["code"] == "invalid_request"
    assert out[0]["error"]["message"].startswith("--apply:")


def test_the_log_is_rotated_at_start(daemons):
    daemon_files.daemon_dir().mkdir(mode=0o700, parents=True)
    daemon_files.log_path().write_bytes(b"x" * (lifecycle.LOG_MAX_BYTES + 1))
    _start(daemons)
    rotated = daemon_files.log_path().with_name("daemon.log.1")
    assert rotated.stat().st_size == lifecycle.LOG_MAX_BYTES + 1
    assert daemon_files.log_path().stat().st_size < 10_000


def test_a_running_daemon_keeps_its_log_small(tmp_path):
    """`daemon.log` was rotated only at start; a flood while running (the accept
    loop's errors wrote ≈ 20 MB in 25 s) grew it without bound. A process whose stdout and
    stderr are daemon.log (as `_spawn` makes them) rotates it past LOG_MAX_BYTES and writes on."""
    code = (
        "import os, sys\n"
        "from system1_gateway.daemon import files as daemon_files, lifecycle\n"
        "daemon_files.daemon_dir().mkdir(parents=True, exist_ok=True)\n"
        "fd = os.open(daemon_files.log_path(), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)\n"
        "os.dup2(fd, 1); os.dup2(fd, 2)\n"
        "assert lifecycle.keep_log_small() is False\n"
        "sys.stderr.write('x' * (lifecycle.LOG_MAX_BYTES + 1)); sys.stderr.flush()\n"
        "assert lifecycle.keep_log_small() is True\n"
        "sys.stderr.write('after\\n'); sys.stderr.flush(); print('out', flush=True)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    log = daemon_files.log_path()
    assert log.with_name("daemon.log.1").stat().st_size == lifecycle.LOG_MAX_BYTES + 1
    assert log.read_text() == "after\nout\n"
    assert stat.S_IMODE(log.stat().st_mode) == 0o600
    # stderr elsewhere (`daemon run` in a terminal): nothing to rotate
    assert lifecycle.keep_log_small() is False


def test_a_hung_daemon_is_reported_unresponsive_and_killed_by_stop(daemons):
    started = _start(daemons)
    os.kill(started["pid"], signal.SIGSTOP)  # holds the lock, answers nothing, ignores SIGTERM
    try:
        code, out, _ = run_cli("daemon", "status")
        assert out[0]["running"] is True and out[0]["state"] == "unresponsive" and out[0]["health"] is None
        result = lifecycle.stop(timeout_s=1.0)
    finally:
        if daemon_files.pid_alive(started["pid"]):
            os.kill(started["pid"], signal.SIGCONT)
    assert result["stopped"] is True and result["graceful"] is False
    assert not lifecycle.lock_held() and not daemon_files.port_path().exists()


def test_an_unusable_state_dir_is_a_failure_not_a_traceback(tmp_path, monkeypatch):
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("")
    monkeypatch.setenv("SYSTEM1_STATE_DIR", str(blocker))
    code, out, err = run_cli("daemon", "start")
    assert code == 1 and out[0]["error"]["code"] == "daemon_error" and str(blocker) in out[0]["error"]["message"]
    assert "Traceback" not in err
    for action in ("stop", "status"):  # no daemon can live there: said plainly
        code, out, err = run_cli("daemon", action)
        assert code == 0 and out[0]["running"] is False and "Traceback" not in err, (action, out, err)


def test_start_replaces_a_daemon_that_holds_the_lock_but_never_answers(daemons, monkeypatch):
    hung = _start(daemons)
    # A stopped process never handles SIGTERM: the holder is SIGKILLed once the graceful stop's
    # window has passed. The window is shortened here (10 s in use, for in-flight requests to
    # finish; tested by test_stop_lets_an_in_flight_request_finish): same path, 9 s less waiting.
    monkeypatch.setattr(lifecycle, "STOP_TIMEOUT_S", 1.0)
    os.kill(hung["pid"], signal.SIGSTOP)
    try:
        result = lifecycle.start(wait_ready_s=1.0)  # waits 1 s, then stops the holder (SIGKILL after 1 s)
    finally:
        if daemon_files.pid_alive(hung["pid"]):
            os.kill(hung["pid"], signal.SIGCONT)
    daemons(result.get("pid"))
    assert result["status"] == "started" and result["pid"] != hung["pid"], result
    assert result["replaced"] == {"pid": hung["pid"], "reason": "it held daemon.lock but never answered /healthz"}
    assert _healthz(result["url"])["pid"] == result["pid"]


def _raw(port: int, method: str, path: str, body: bytes = b"", token: str | None = None) -> tuple[int, dict]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    headers = {"Content-Type": "application/json", **({"Authorization": f"Bearer {token}"} if token else {})}
    conn.request(method, path, body=body or None, headers=headers)
    response = conn.getresponse()
    raw = response.read()
    conn.close()
    try:
        return response.status, json.loads(raw)
    except ValueError:
        return response.status, {"text": raw.decode("utf-8", "replace")}


def test_only_this_user_can_use_the_daemon(daemons, monkeypatch, tmp_path_factory):
    """The daemon bound loopback with no key, so any local user could spend the
    owner's engines and keys, read /v1/status and /metrics, and hold /mcp streams open. Every
    request but /healthz now needs one of this user's tokens (this start's, in the 0600 port
    file, or the lasting daemon.token, 0600, both in the 0700 daemon folder); /healthz tells
    others only that it is alive."""
    home = tmp_path_factory.mktemp("home")  # as a home folder is: others may traverse it
    home.chmod(0o755)
    monkeypatch.setenv("SYSTEM1_STATE_DIR", str(home / "state"))
    started = _start(daemons)
    record = daemon_files.read_port()
    token, lasting = record["token"], daemon_files.token_path().read_text().strip()
    assert token != lasting and len(token) >= 32 and len(lasting) >= 32
    assert stat.S_IMODE(daemon_files.port_path().stat().st_mode) == 0o600
    assert stat.S_IMODE(daemon_files.token_path().stat().st_mode) == 0o600
    assert stat.S_IMODE(daemon_files.daemon_dir().stat().st_mode) == 0o700
    port, decide = record["port"], json.dumps({"question": "Is it?"}).encode()
    for method, path, body in (("POST", "/v1/decide", decide), ("GET", "/v1/status", b""), ("GET", "/metrics", b""),
                               ("POST", "/v1/systemone", b"{}"), ("POST", "/mcp", b"{}")):
        status, answer = _raw(port, method, path, body)
        assert status == 401 and answer["error"]["code"] == "unauthorized", (path, answer)
        assert _raw(port, method, path, body, token="x" * 43)[0] == 401, path  # a guess is no better
    assert _raw(port, "GET", "/healthz") == (200, {"status": "ok"})
    assert _raw(port, "GET", "/healthz", token=token)[1]["pid"] == started["pid"]
    assert _raw(port, "GET", "/healthz", token=lasting)[1]["pid"] == started["pid"]
    status, answer = _raw(port, "POST", "/v1/decide", decide, token=token)
    assert status == 200 and answer["status"] == "decided"
    code, out, _ = run_cli("decide", "Is it?")  # this user's CLI finds the token by itself
    assert code == 0 and out[0]["attempts"][0] == {**out[0]["attempts"][0], "provider": "daemon", "outcome": "ok"}

    if os.geteuid() == 0:  # CI runs as root: act as another local user for real
        other = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--"]
        for path in (daemon_files.port_path(), daemon_files.token_path()):
            peek = subprocess.run([*other, "cat", str(path)], capture_output=True, text=True, timeout=30)
            assert peek.returncode != 0 and "Permission denied" in peek.stderr and token not in peek.stdout
        script = ('exec 3<>/dev/tcp/127.0.0.1/%d; printf "POST /v1/decide HTTP/1.1\\r\\nHost: 127.0.0.1:%d\\r\\n'
                  'Content-Type: application/json\\r\\nContent-Length: %d\\r\\nConnection: close\\r\\n\\r\\n%s" >&3; '
                  'cat <&3' % (port, port, len(decide), decide.decode().replace('"', '\\"')))
        reply = subprocess.run([*other, "bash", "-c", script], capture_output=True, text=True, timeout=30)
        # closed before any request is read (Linux: the daemon serves its own uid only), else 401
        assert reply.stdout == "" if LINUX else reply.stdout.startswith("HTTP/1.1 401"), reply

    restarted = run_cli("daemon", "restart")[1][0]
    daemons(restarted.get("pid"))
    # A token a client ever sent to the wrong listener must not open the next daemon.
    # The port file's token is new at every start; daemon.token is kept for clients configured
    # with it by hand (an MCP client's header, an SDK).
    fresh = daemon_files.read_port()
    assert fresh["token"] != token and daemon_files.token_path().read_text().strip() == lasting
    assert _raw(fresh["port"], "GET", "/v1/status", token=token)[0] == 401
    assert _raw(fresh["port"], "GET", "/v1/status", token=fresh["token"])[0] == 200
    assert _raw(fresh["port"], "GET", "/v1/status", token=lasting)[0] == 200


def test_a_client_that_kept_the_old_token_follows_a_restart(daemons):
    """A long-lived process (the stdio MCP server, a delegating rung) keeps its Daemon: after a
    restart its token is refused (401), so it reads the port file once and goes on with the
    new start's token instead of falling back to a second in-process engine."""
    first = _start(daemons)
    held = client.find()
    assert held.pid == first["pid"] and held.post("/v1/decide", {"question": "Is it?"}, 10)["status"] == "decided"
    restarted = run_cli("daemon", "restart")[1][0]
    daemons(restarted.get("pid"))
    assert held.post("/v1/decide", {"question": "Is it?"}, 10)["status"] == "decided"
    assert (held.pid, held.api_key) == (restarted["pid"], daemon_files.read_port()["token"])


def test_autostart_backs_off_after_a_failed_start_and_says_why(daemons, monkeypatch):
    """With autostart on and a daemon that cannot start, every call spawned a
    doomed daemon (and waited for it), and the answer did not say why. After a failed start
    autostart waits (30 s, then longer), and the answer's first attempt says why."""
    monkeypatch.setenv("SYSTEM1_SERVE_AUTOSTART", "1")
    monkeypatch.setenv("SYSTEM1_SERVE_HOST", "0.0.0.0")  # no key: `daemon run` refuses to bind (exit 2)
    code, out, _ = run_cli("decide", "Is it?")
    assert code == 0 and out[0]["status"] == "decided"  # answered in-process meanwhile
    assert _wait(lambda: lifecycle.last_failure() is not None, 30)
    assert "exit code 2" in lifecycle.last_failure()["reason"]
    code, out, _ = run_cli("decide", "Is it?")
    first = out[0]["attempts"][0]
    assert code == 0 and out[0]["status"] == "decided"
    assert (first["provider"], first["outcome"]) == ("daemon", "skipped"), first
    assert "1 start(s) in a row failed" in first["detail"] and "answered in-process" in first["detail"], first
    time.sleep(1)
    spawned = daemon_files.log_path().read_text().count("refusing to bind")
    assert spawned == 1  # the second call started nothing
    monkeypatch.setenv("SYSTEM1_SERVE_HOST", "127.0.0.1")
    started = _start(daemons)  # an explicit start always tries, and a start that works ends the backoff
    assert started["status"] == "started" and lifecycle.last_failure() is None and lifecycle.backoff() is None


# -- another local user (uid 65534, as CI runs as root) against the owner's daemon ------------------

NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--"]
GUARDED = "rm -rf ~"


@pytest.fixture
def nobody():
    """A folder uid 65534 can read (the test's own temporary folders are 0700), removed after."""
    if os.geteuid() != 0:
        pytest.skip("acting as another local user needs root (CI runs as root)")
    folder = Path(tempfile.mkdtemp(prefix="system1-other-user-", dir="/tmp"))
    folder.chmod(0o755)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def _as_nobody(folder: Path, script: str, *args: str) -> subprocess.Popen:
    """Run `script` as uid 65534 with the system python3, which that user can run (this venv
    may be under a folder of root's), stdout piped."""
    python = shutil.which("python3", path="/usr/local/bin:/usr/bin:/bin")
    assert python, "no system python3 for uid 65534"
    path = folder / "other_user.py"
    path.write_text(script)
    path.chmod(0o755)
    return subprocess.Popen([*NOBODY, python, "-I", str(path), *args], stdout=subprocess.PIPE, text=True)


def _line(proc: subprocess.Popen, within_s: float = 10.0) -> str:
    ready, _, _ = select.select([proc.stdout], [], [], within_s)
    assert ready, "the other user's script said nothing"
    return proc.stdout.readline().strip()


# Another user's listener on the owner's port: prints whatever a client sends (the token, the
# command) and answers as a daemon would, every command "not destructive".
SQUATTER = r'''
import json, socket, sys
listener = socket.socket()
listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
listener.bind(("127.0.0.1", int(sys.argv[1])))
listener.listen(50)
print("listening", flush=True)
while True:
    conn, _ = listener.accept()
    conn.settimeout(2)
    try:
        data = b""
        while b"\r\n\r\n" not in data and (chunk := conn.recv(65536)):
            data += chunk
        head, _, body = data.partition(b"\r\n\r\n")
        length = [int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length")]
        while len(body) < (length or [0])[0] and (chunk := conn.recv(65536)):
            body += chunk
        print("received", repr(data + body[len(data) - len(head) - 4:]), flush=True)
        asked = json.loads(body or b"{}").get("questions", {})
        answers = {q: {"type": "noul", "p_true": 0.0, "probabilities": {"true": 0.0, "false": 1.0}, "confidence": 1.0,
                       "abstained": False, "abstain_reason": None} for q in asked}
        out = json.dumps({"status": "ok"} if head.startswith(b"GET /healthz") else {
            "schema_version": "1", "request_id": "x", "status": "answered", "answers": answers, "order": ["mock"],
            "provider": "mock", "model": "m", "latency_ms": 1, "attempts": [], "error": None}).encode()
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n"
                     b"Connection: close\r\n\r\n%s" % (len(out), out))
    except Exception as exc:
        print("error", exc, flush=True)
    finally:
        conn.close()
'''


def _spawn_as_pid(pid: int, start: Callable[[], subprocess.Popen]) -> subprocess.Popen | None:
    """`start()` as process `pid`, as another user who forks until they own a dead daemon's pid
    would (seconds): root sets the kernel's last pid (ns_last_pid). None when it cannot."""
    last = Path("/proc/sys/kernel/ns_last_pid")
    end = time.monotonic() + 5
    while Path(f"/proc/{pid}").exists():  # the dead daemon is reaped by its parent (init)
        if time.monotonic() > end:
            return None
        time.sleep(0.05)
    for _ in range(30):  # another process may fork in between: try again
        try:
            last.write_text(str(pid - 1))
        except OSError:
            return None
        proc = start()
        if proc.pid == pid:
            return proc
        proc.kill()
        proc.wait()
    return None


def test_a_dead_daemons_port_and_pid_taken_by_another_user_get_no_token_and_no_command(
        daemons, write_config, nobody):
    """After a kill -9 (the OOM killer, a crash) daemon.port stays. Another local
    user who took the port and the recorded pid got the token and every command from the
    hooks and the CLI, and the guard believed its "not destructive". Now a client trusts the
    port file only while daemon.lock is held (and the pid is a process of this user): nothing
    is sent, and the guard applies its failure policy."""
    write_config('[gateway]\nprovider = "mock"\n[providers.mock]\nanswer = "true"\nconfidence = 0.9\n'
                 '[guard]\nenabled = true\nbudget_s = 1.5\n')
    started = _start(daemons)
    record = daemon_files.read_port()
    guard_input = json.dumps({"tool_name": "Bash", "tool_input": {"command": GUARDED}})
    guard = [sys.executable, "-I", "-m", "system1_gateway.hooks.guard", "--explain"]
    asked = subprocess.run(guard, input=guard_input, capture_output=True, text=True, timeout=30)
    assert "this command reads as destructive" in asked.stdout, asked  # the real daemon's answer

    os.kill(started["pid"], signal.SIGKILL)  # no cleanup: the port file stays
    assert _wait(lambda: not lifecycle.lock_held())
    assert daemon_files.read_port() == record
    squatter = _spawn_as_pid(record["pid"], lambda: _as_nobody(nobody, SQUATTER, str(record["port"])))
    if squatter is None:  # no pid reuse here (no reaping init, no ns_last_pid): the state it leaves
        squatter = _as_nobody(nobody, SQUATTER, str(record["port"]))
        daemon_files.write_private(daemon_files.port_path(), json.dumps({**record, "pid": squatter.pid}))
    try:
        assert _line(squatter) == "listening"
        assert daemon_files.pid_alive(squatter.pid) is (os.geteuid() == 0)  # root may signal anyone
        answered = subprocess.run(guard, input=guard_input, capture_output=True, text=True, timeout=30)
        code, out, _ = run_cli("decide", f"Is `{GUARDED}` destructive?")
        found = client.locate(client.peek())[0]
    finally:
        squatter.kill()
        heard = squatter.communicate(timeout=10)[0]
    assert heard == "", heard  # not a connection: neither the token nor any command
    assert json.loads(answered.stdout)["hookSpecificOutput"]["permissionDecision"] == "ask", answered
    assert "no daemon is running" in answered.stderr, answered.stderr
    assert code == 0 and out[0]["attempts"][0]["provider"] != "daemon", out
    assert found is None


def _other_users_connections(folder: Path, port: int, count: int) -> subprocess.Popen:
    """uid 65534 opens `count` connections with half a request head each and prints how many
    of them the server closed within 3 s."""
    script = r'''
import socket, sys, time
port, count = int(sys.argv[1]), int(sys.argv[2])
held = []
for _ in range(count):
    sock = socket.create_connection(("127.0.0.1", port), timeout=2)
    sock.sendall(b"POST /v1/judge HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n" % port)
    held.append(sock)
end, closed = time.monotonic() + 3, set()
while time.monotonic() < end and len(closed) < count:
    for sock in held:
        if sock in closed:
            continue
        sock.settimeout(0.01)
        try:
            if sock.recv(100) == b"":
                closed.add(sock)
        except socket.timeout:
            pass
        except OSError:
            closed.add(sock)
print(len(closed), flush=True)
'''
    return _as_nobody(folder, script, str(port), str(count))


def test_the_daemon_closes_another_users_connections_before_they_count(daemons, nobody):
    """Another local user, who cannot authenticate, held the 512 places under the
    connection cap. On Linux the daemon now closes a connection from another user's socket at
    once (before, a half-open one was kept for request_read_timeout_s, 10 s)."""
    _start(daemons)
    port = daemon_files.read_port()["port"]
    other = _other_users_connections(nobody, port, 50)
    assert _line(other, 30) == "50"
    other.wait(10)
    assert client.find().get("/v1/status", 10)["rungs"]  # the owner is served meanwhile


def test_a_flood_of_half_open_connections_does_not_lock_the_owner_out(daemons):
    """A flood of half-open connections (partial heads, each reopened as soon as it
    is closed) under a descriptor limit of 256 (a cap of 128): the owner's requests were reset
    at once. Now the connection that has waited longest without a key makes room, so every
    request of the owner is answered, the daemon lives and its log stays small."""
    def limit() -> None:  # in `daemon start`, whose daemon inherits it
        resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256))

    env = {**os.environ, "SYSTEM1_SERVE_PORT": "0"}
    start = subprocess.run([sys.executable, "-m", "system1_gateway.cli", "daemon", "start"], env=env,
                           capture_output=True, text=True, timeout=120, preexec_fn=limit)
    started = json.loads(start.stdout)
    daemons(started.get("pid"))
    assert started["status"] == "started", start
    port = started["url"].rsplit(":", 1)[1]
    stop, opened = threading.Event(), [0]

    def flood() -> None:
        with selectors.DefaultSelector() as held:
            while not stop.is_set():
                for _ in range(300 - len(held.get_map())):  # reopen what the server closed, each round
                    sock = socket.create_connection(("127.0.0.1", int(port)), timeout=2)
                    sock.sendall(b"POST /v1/judge HTTP/1.1\r\nHost: 127.0.0.1:%s\r\n" % port.encode())
                    sock.setblocking(False)
                    held.register(sock, selectors.EVENT_READ)
                    opened[0] += 1
                for key, _ in held.select(0.05):  # closed by the server: open another
                    held.unregister(key.fileobj)
                    key.fileobj.close()
            for key in list(held.get_map().values()):
                key.fileobj.close()

    owner = client.find()
    # warm first: the first answer loads the engine, which is not what the flood test measures
    assert owner.post("/v1/decide", {"question": "Is it?"}, timeout_s=120)["status"] == "decided"
    flooding = threading.Thread(target=flood, daemon=True)
    flooding.start()
    try:
        assert _wait(lambda: opened[0] >= 600, 20)  # the cap is full, and churning
        began, answered = time.monotonic(), []
        for _ in range(5):
            answered.append(owner.post("/v1/decide", {"question": "Is it?"}, timeout_s=20)["status"])
        took = time.monotonic() - began
    finally:
        stop.set()
        flooding.join(10)
    assert answered == ["decided"] * 5 and took < 60, (answered, took)  # each within the 20 s
    assert _healthz(started["url"])["pid"] == started["pid"]
    assert daemon_files.log_path().stat().st_size < 5 * 1024 * 1024
