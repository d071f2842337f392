"""The per-user daemon's lifecycle: `system1 daemon start|stop|status|restart|run|…`.

One daemon per state directory serves one warm engine to every local client. Its files are
described in `daemon_files`; this module decides who may serve and keeps the files honest:

* `daemon.lock` is held (flock / msvcrt.locking) by the serving process for its whole life,
  so "the lock is free" means "no daemon is alive", whatever stale pid or port files say
  (the kernel releases it after a crash or a `kill -9`). A starter takes the lock before it
  looks and spawns; on POSIX the child inherits the very lock (the same open file), so there
  is no moment in which a second starter could slip in.
* `start` returns a healthy daemon with our fingerprint when there is one, replaces one with
  other settings (saying so), spawns `python -I -m system1_gateway.cli daemon run` detached
  with the caller's environment, and waits until `/healthz` answers.
* `run` serves in the foreground with `http.serving.Serving`, writes the pid and port files
  once listening, stops gracefully on SIGTERM/SIGINT and after `[serve] idle_exit_min`
  minutes without a request, and removes its files at exit only if they are still its own.

Light to import (stdlib + daemon_files): `ensure_running()` runs on every CLI call. The heavy
imports (config, FastAPI, the core) happen inside `run` only.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable
from urllib.parse import urlsplit

from .. import __version__
from ..addresses import http_url
from ..paths import private_dir
from .client import Daemon, DaemonUnavailable
from .files import (
    LOCK_FD_ENV,
    daemon_dir,
    daemon_token,
    fingerprint,
    lock_held,
    lock_path,
    log_path,
    new_token,
    pid_alive,
    pid_path,
    port_path,
    read_port,
    write_private,
)

if TYPE_CHECKING:
    import subprocess

EXIT_OK, EXIT_FAILED, EXIT_INVALID = 0, 1, 2
WAIT_READY_S = 30.0  # `daemon start`: how long to wait for /healthz (FastAPI import + bind ≈ 1-2 s)
STOP_TIMEOUT_S = 10.0  # graceful stop (in-flight requests finish) before SIGKILL
RUN_LOCK_WAIT_S = 10.0  # `daemon run` started by hand or at login while another daemon holds the lock
LOG_MAX_BYTES = 1 << 20  # daemon.log is rotated to daemon.log.1 past this size (at start, and while it runs)
LOG_CHECK_S = 5.0  # how often a running daemon looks at its log's size
# Autostart waits this long after the 1st, 2nd, … failed start in a row before spawning again, so
# a daemon that cannot start (a bad config, a taken port) is not spawned, and waited for, on
# every call. `system1 daemon start` always tries.
START_BACKOFF_S = (30.0, 60.0, 120.0, 300.0, 600.0)
# The starter hands its locked lock file to the child through daemon_files.LOCK_FD_ENV (POSIX);
# it is removed from the environment before anything computes a fingerprint.


# --- the lock -------------------------------------------------------------------------------

def _ensure_dir() -> Path:
    return private_dir(daemon_dir())  # tightened when something with a looser umask made it


def _open_lock() -> int:
    _ensure_dir()
    return os.open(lock_path(), os.O_RDWR | os.O_CREAT, 0o600)


def _try_lock(fd: int) -> bool:
    """Take the lock without blocking; False when another process holds it."""
    try:
        if sys.platform == "win32":
            import msvcrt

            os.lseek(fd, 0, os.SEEK_SET)
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
        else:
            import fcntl

            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return False
    return True


def _release(fd: int) -> None:
    try:
        if sys.platform == "win32":
            import msvcrt

            os.lseek(fd, 0, os.SEEK_SET)
            msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)
        os.close(fd)  # flock: closing the last descriptor of the open file releases it
    except OSError:
        pass


def _adopt_inherited_lock() -> int | None:
    """The lock descriptor a starter passed to this `daemon run`, if it is really our lock file."""
    value = os.environ.pop(LOCK_FD_ENV, None)
    if value is None or not value.isdigit():
        return None
    fd = int(value)
    try:
        held, expected = os.fstat(fd), os.stat(lock_path())
    except OSError:
        return None
    if (held.st_dev, held.st_ino) != (expected.st_dev, expected.st_ino):
        return None
    os.set_inheritable(fd, False)  # the engine's own subprocesses must not keep the lock alive
    return fd


# --- probing a daemon -------------------------------------------------------------------------

def connect_host(host: str) -> str:
    """Where a local client connects for a daemon bound to `host` (a wildcard → loopback)."""
    return {"0.0.0.0": "127.0.0.1", "": "127.0.0.1", "::": "::1"}.get(host, host)


def url_for(host: str, port: int) -> str:
    return http_url(connect_host(host), port)


def healthz(url: str, timeout_s: float = 1.0, token: str | None = None) -> dict[str, Any] | None:
    """The daemon's /healthz body ({"status": "ok"|"loading", and with its token "pid", …}), or
    None if it does not answer (the client's HTTP exchange: no http.client import here)."""
    try:
        parts = urlsplit(url)
        host, port = parts.hostname, parts.port
    except ValueError:
        return None
    if not host or not port:
        return None
    try:
        body = Daemon(0, host, port, url, 0.0, "", api_key=token).get("/healthz", timeout_s)
    except DaemonUnavailable:
        return None
    return body if isinstance(body.get("status"), str) else None


def _read_pid_file() -> int | None:
    try:
        text = pid_path().read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        return None
    return int(text) if text.isdigit() else None


def _looks_like_daemon(pid: int) -> bool:
    """Guard against a recycled pid before signalling it: on Linux the command line must be
    ours; elsewhere the held lock and the port file are the evidence."""
    cmdline = Path(f"/proc/{pid}/cmdline")
    if not sys.platform.startswith("linux") or not cmdline.parent.exists():
        return pid_alive(pid)
    try:
        argv = cmdline.read_bytes().split(b"\0")
    except OSError:
        return False
    return b"daemon" in argv and b"run" in argv and any(b"system1" in part for part in argv)


def _probe(timeout_s: float = 1.0) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """(port file record, /healthz body) of the registered daemon; either may be None."""
    record = read_port()
    if record is None or not pid_alive(record["pid"]):
        return record, None
    health = healthz(record["url"], timeout_s, record.get("token"))
    # With the token our daemon says its pid; a listener that does not (another user's daemon
    # refusing the token, or a squatter) is not ours. A daemon older than tokens (a port file
    # without one) need not say its pid.
    expected = None if "token" in record else record["pid"]
    if health is not None and health.get("pid", expected) != record["pid"]:
        return record, None  # another process (another user's daemon?) now has that port
    return record, health


def _describe(record: dict[str, Any], health: dict[str, Any] | None) -> dict[str, Any]:
    return {"pid": record["pid"], "url": record["url"], "health": health.get("status") if health else None,
            "ready": health is not None and health.get("status") == "ok",
            "fingerprint_matches": record["fingerprint"] == fingerprint(), "version": record["version"],
            "uptime_s": round(max(0.0, time.time() - record["started"]), 1)}


def _remove_files(only_pid: int | None = None) -> list[str]:
    """Remove the pid/port files; with `only_pid`, only those that still name that process
    (a garbled port file next to our pid file is ours too)."""
    record, listed_pid = read_port(), _read_pid_file()
    port_ours = only_pid is None or (record or {}).get("pid", listed_pid) == only_pid
    pid_ours = only_pid is None or listed_pid == only_pid
    return [path.name for path, ours in ((port_path(), port_ours), (pid_path(), pid_ours))
            if ours and _unlink(path)]


def _unlink(path: Path) -> bool:
    try:
        path.unlink()
    except OSError:  # absent (already removed) or not ours to remove
        return False
    return True


# --- status / stop ----------------------------------------------------------------------------

def status() -> dict[str, Any]:
    """running?, pid, url, uptime, ready/loading, whether its settings are the caller's, log."""
    held = lock_held()
    record, health = _probe()
    result: dict[str, Any] = {"running": False, "state": "stopped", "log": str(log_path()),
                              "port_file": str(port_path())}
    if not held:
        if port_path().exists() or pid_path().exists():
            result["stale_files"] = True  # left by a crash; the next start replaces them
        return result
    if record is None or not pid_alive(record["pid"]):
        result.update(state="starting", pid=_read_pid_file(),
                      detail="daemon.lock is held but there is no readable port file yet "
                             "(starting, or the file was damaged: `system1 daemon restart` replaces it)")
        return result
    result.update(_describe(record, health), running=True,
                  state="running" if health else "unresponsive")
    return result


def _signal(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except (ProcessLookupError, PermissionError, OSError):
        pass


def _exited(pid: int) -> bool:
    """The process is gone (a zombie counts: it has exited and released everything)."""
    if not pid_alive(pid):
        return True
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except (OSError, IndexError):
        return False


def _wait_gone(pid: int, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while not _exited(pid):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)
    # A zombie leader may still have threads exiting, which hold the lock a moment longer
    # (a new daemon taking the lock meanwhile would keep it held: bounded wait).
    settle = time.monotonic() + 2.0
    while lock_held() and time.monotonic() < settle:
        time.sleep(0.02)
    return True


def stop(timeout_s: float | None = None) -> dict[str, Any]:
    """SIGTERM the daemon (in-flight requests finish), SIGKILL after `timeout_s` (default
    STOP_TIMEOUT_S, read at the call), clean up."""
    if timeout_s is None:
        timeout_s = STOP_TIMEOUT_S
    record = read_port()
    pid = record["pid"] if record else _read_pid_file()
    if not lock_held():
        removed = _remove_files()
        result: dict[str, Any] = {"stopped": False, "running": False, "detail": "no daemon is running"}
        if removed:
            result["stale_files_removed"] = removed
        return result
    if pid is None or not pid_alive(pid) or not _looks_like_daemon(pid):
        return {"stopped": False, "running": True, "error": {
            "code": "daemon_error", "message": f"{lock_path()} is held, but neither {port_path().name} nor "
                                               f"{pid_path().name} names a live daemon process (still starting?)"}}
    matches = record is not None and record["fingerprint"] == fingerprint()
    kill_sig = getattr(signal, "SIGKILL", signal.SIGTERM)
    _signal(pid, signal.SIGTERM)
    graceful = _wait_gone(pid, timeout_s)
    if not graceful:
        _signal(pid, kill_sig)
        if not _wait_gone(pid, 5.0):
            return {"stopped": False, "running": True, "pid": pid, "error": {
                "code": "daemon_error", "message": f"pid {pid} survived SIGTERM and SIGKILL"}}
    _remove_files(only_pid=pid)  # after a SIGKILL the daemon could not remove its own
    return {"stopped": True, "pid": pid, "graceful": graceful, "fingerprint_matched": matches}


# --- start --------------------------------------------------------------------------------------

def _rotate_log() -> None:
    path = log_path()
    try:
        if path.stat().st_size > LOG_MAX_BYTES:
            os.replace(path, path.with_name(path.name + ".1"))
    except OSError:
        pass


def keep_log_small() -> bool:
    """Rotate daemon.log while this process writes to it (its stdout and stderr are the file,
    as `_spawn` made them): past LOG_MAX_BYTES the file becomes daemon.log.1 and both streams
    move to a new daemon.log, so no flood (a connection storm, an engine failing in a loop) can
    fill the disk. True when it rotated. Does nothing when stderr is not daemon.log (a user
    running `daemon run` in a terminal)."""
    path = log_path()
    try:
        ours, current = os.fstat(2), path.stat()
        if (ours.st_dev, ours.st_ino) != (current.st_dev, current.st_ino) or ours.st_size <= LOG_MAX_BYTES:
            return False
        os.replace(path, path.with_name(path.name + ".1"))
        fresh = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    except OSError:
        return False
    try:
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(fresh, 1)
        os.dup2(fresh, 2)
    finally:
        os.close(fresh)
    return True


def _log_watcher(stop: threading.Event) -> Callable[[], None]:
    def loop() -> None:
        while not stop.wait(LOG_CHECK_S):
            keep_log_small()

    return loop


def _spawn(lock_fd: int) -> subprocess.Popen:
    """`daemon run` detached, with the caller's environment (hence its fingerprint)."""
    import subprocess  # here: ensure_running() with a daemon up never needs it

    _rotate_log()
    log_fd = os.open(log_path(), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    env = dict(os.environ)
    options: dict[str, Any] = {}
    if sys.platform == "win32":
        options["creationflags"] = subprocess.DETACHED_PROCESS | subprocess.CREATE_NEW_PROCESS_GROUP
    else:
        options.update(start_new_session=True, pass_fds=(lock_fd,))
        env[LOCK_FD_ENV] = str(lock_fd)
    try:
        proc = subprocess.Popen([sys.executable, "-I", "-m", "system1_gateway.cli", "daemon", "run"],
                                stdin=subprocess.DEVNULL, stdout=log_fd, stderr=log_fd, env=env,
                                cwd=str(daemon_dir()), close_fds=True, **options)
    finally:
        os.close(log_fd)
    # Reap it if it exits while this process lives (the stdio MCP server does): an unreaped
    # zombie would look alive to kill(pid, 0).
    threading.Thread(target=proc.wait, name="system1-daemon-reaper", daemon=True).start()
    return proc


def _log_tail(lines: int = 5) -> list[str]:
    try:
        with open(log_path(), "rb") as handle:
            handle.seek(max(0, handle.seek(0, os.SEEK_END) - 4096))
            text = handle.read().decode("utf-8", "replace")
    except OSError:
        return []
    return [line for line in text.splitlines() if line.strip()][-lines:]


def _wait_ready(proc: subprocess.Popen, deadline: float) -> dict[str, Any]:
    while True:
        record, health = _probe(timeout_s=0.5)
        if record is not None and record["pid"] == proc.pid and health is not None:
            return {"status": "started", **_describe(record, health), "log": str(log_path())}
        code = proc.poll()
        if code is not None:
            return {"status": "failed", "pid": proc.pid, "log": str(log_path()), "log_tail": _log_tail(),
                    "error": {"code": "daemon_error",
                              "message": f"the daemon exited with code {code} before answering /healthz "
                                         f"(see {log_path()})"}}
        if time.monotonic() >= deadline:
            return {"status": "starting", "pid": proc.pid, "log": str(log_path()),
                    "detail": "the daemon did not answer /healthz within the wait; it may still come up"}
        time.sleep(0.05)


def _failed(message: str) -> dict[str, Any]:
    return {"status": "failed", "log": str(log_path()), "error": {"code": "daemon_error", "message": message}}


def start(wait_ready_s: float = WAIT_READY_S, replace_other: bool = True) -> dict[str, Any]:
    """Make sure one daemon with the caller's settings serves; see the module docstring.

    wait_ready_s = 0 spawns without waiting (autostart). `replace_other` stops a healthy
    daemon whose settings differ (start/restart ask for it; autostart does not)."""
    deadline = time.monotonic() + wait_ready_s
    notes: dict[str, Any] = {}
    record, health = _probe()
    if record is not None and health is not None:
        if record["fingerprint"] == fingerprint():
            return {"status": "running", "already_running": True, **_describe(record, health),
                    "log": str(log_path())}
        if not replace_other:
            return {"status": "other_settings", **_describe(record, health)}
        stopped = stop()
        if not stopped.get("stopped"):
            return {"status": "failed", "error": stopped.get("error") or {
                "code": "daemon_error", "message": "could not stop the daemon with other settings"}}
        notes["replaced"] = {"pid": record["pid"], "reason": "it served other settings (config file or "
                                                              "SYSTEM1_* variables differ)"}
    try:
        fd = _open_lock()
    except OSError as exc:
        return _failed(f"cannot open {lock_path()}: {exc}")
    try:
        while not _try_lock(fd):
            record, health = _probe(timeout_s=0.5)
            if record is not None and health is not None and record["fingerprint"] == fingerprint():
                return {"status": "running", "already_running": True, **_describe(record, health),
                        "log": str(log_path()), **notes}  # a concurrent start won the race
            if time.monotonic() >= deadline:
                if wait_ready_s <= 0:
                    return {"status": "starting", "detail": "another process holds daemon.lock (starting)"}
                return _unresponsive_holder(notes)
            time.sleep(0.05)
        stale = _remove_files()  # we hold the lock: no daemon is alive, whatever the files say
        if stale:
            notes["stale_files_replaced"] = stale
        proc = _spawn(fd)
    except OSError as exc:
        return _failed(f"cannot start the daemon: {exc}")
    finally:
        _release(fd)  # POSIX: the child keeps the inherited lock; Windows: the child takes it
    if wait_ready_s <= 0:
        return {"status": "starting", "pid": proc.pid, "log": str(log_path()), **notes}
    return {**_wait_ready(proc, deadline), **notes}


def _unresponsive_holder(notes: dict[str, Any]) -> dict[str, Any]:
    """The lock stayed held for the whole wait and no daemon answered: stop the holder when
    the pid file names a daemon process, so `start` recovers from a hung daemon."""
    stopped = stop()
    if stopped.get("error"):
        return {"status": "failed", "log": str(log_path()), "error": stopped["error"]}
    result = start(wait_ready_s=WAIT_READY_S)
    if stopped.get("stopped"):  # else the holder let go by itself meanwhile
        result.setdefault("replaced", {"pid": stopped["pid"],
                                       "reason": "it held daemon.lock but never answered /healthz"})
    return {**notes, **result}


def restart() -> dict[str, Any]:
    stopped = stop()
    if stopped.get("error"):
        return {"status": "failed", "stop": stopped, "error": stopped["error"]}
    return {**start(), "stop": stopped}


# --- autostart ------------------------------------------------------------------------------------

def autostart_enabled(environ: dict[str, str] | None = None) -> bool:
    """`[serve] autostart`, as every fast path reads it (config_tables.autostart)."""
    from ..config import file as config_file
    from ..config import tables as config_tables

    try:
        data = config_file.load() or {}
    except config_file.Unreadable:
        data = None
    return config_tables.autostart(data, os.environ if environ is None else environ)


def failure_path() -> Path:
    return daemon_dir() / "start-failed.json"


def last_failure() -> dict[str, Any] | None:
    """The record of the failed starts in a row ({"time", "failures", "reason"}), or None."""
    from .. import bounded_json

    try:
        record = bounded_json.file_loads(failure_path().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    ok = isinstance(record, dict) and isinstance(record.get("time"), (int, float)) and \
        isinstance(record.get("failures"), int) and isinstance(record.get("reason"), str)
    return record if ok else None


def _record_failure(reason: str) -> None:
    previous = last_failure()
    record = {"time": time.time(), "failures": (previous["failures"] if previous else 0) + 1, "reason": reason[:300]}
    try:
        write_private(failure_path(), json.dumps(record))
    except OSError:
        pass


def backoff() -> str | None:
    """Why autostart must not spawn a daemon now (recent failed starts), or None."""
    record = last_failure()
    if record is None:
        return None
    failures = max(1, record["failures"])
    step = START_BACKOFF_S[min(failures, len(START_BACKOFF_S)) - 1]
    left = min(step, record["time"] + step - time.time())  # a clock set back cannot stretch it
    if left <= 0:
        return None
    when = time.strftime("%H:%M:%S", time.localtime(record["time"]))
    return (f"not started: {failures} start(s) in a row failed, the last at {when} ({record['reason']}); "
            f"autostart tries again in {left:.0f} s, `system1 daemon start` now")


def ensure_running() -> dict[str, Any] | None:
    """Autostart for the CLI and the stdio MCP server: the running daemon's record when one
    with our settings answers, else start one detached (no wait) and return {"status":
    "starting", …}; {"status": "backoff", "detail": why} while recent starts failed; None when
    autostart is off, a daemon with other settings owns the state dir, or anything fails.
    Never raises."""
    try:
        if not autostart_enabled():
            return None
        record, health = _probe(timeout_s=0.5)
        if record is not None and health is not None:
            if record["fingerprint"] != fingerprint():
                return None
            return {"status": "running", **record, "health": health.get("status")}
        if lock_held():
            return {"status": "starting"}
        why = backoff()
        if why is not None:
            return {"status": "backoff", "detail": why}
        result = start(wait_ready_s=0, replace_other=False)
        return result if result.get("status") in ("starting", "running") else None
    except Exception:  # noqa: BLE001 - autostart is best effort; the caller runs in-process
        return None


# --- run ---------------------------------------------------------------------------------------------

def _say(message: str) -> None:
    """A lifecycle line in daemon.log (stderr): never a request's content."""
    stamp = time.strftime("%Y-%m-%d %H:%M:%S")
    try:
        sys.stderr.write(f"{stamp} system1 daemon[{os.getpid()}]: {message}\n")
        sys.stderr.flush()
    except (OSError, ValueError, AttributeError):
        pass  # no stderr (pythonw) or a closed log: lifecycle lines are best effort


def port_free(host: str, port: int) -> bool:
    """Whether `port` can be bound on `host` now (0 always can)."""
    import socket

    if port == 0:
        return True
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        if sys.platform != "win32":
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn does
        try:
            probe.bind((host, port))
        except OSError:
            return False
    return True


def _serve_settings() -> tuple[str, int, float]:
    """host, port, idle_exit_min from the config; a broken config serves on the defaults
    (the gateway then answers config_error, exactly as in-process)."""
    from ..config.settings import ServeSettings, load_config
    from ..model.errors import ConfigError

    try:
        serve = load_config().serve
    except ConfigError as exc:
        _say(f"config error, serving on the default address: {exc}")
        serve = ServeSettings()
    return serve.host, serve.port, serve.idle_exit_min


def _take_lock_for_run() -> tuple[int | None, dict[str, Any] | None]:
    """The lock for a `daemon run` not spawned by `start` (by hand, at login): wait a little
    for a daemon that is shutting down; if one with our settings serves, there is nothing to do."""
    fd = _open_lock()
    deadline = time.monotonic() + RUN_LOCK_WAIT_S
    while not _try_lock(fd):
        record, health = _probe(timeout_s=0.5)
        if record is not None and health is not None and record["fingerprint"] == fingerprint():
            os.close(fd)
            return None, {"status": "running", "already_running": True, **_describe(record, health)}
        if time.monotonic() >= deadline:
            os.close(fd)
            return None, {"status": "failed", "error": {
                "code": "daemon_error", "message": "another daemon holds daemon.lock (other settings, or "
                                                   "not answering); `system1 daemon stop` ends it"}}
        time.sleep(0.1)
    return fd, None


class _Watch:
    """Why the daemon stopped, set by the signal handler or the idle watcher."""

    def __init__(self) -> None:
        self.reason = "server exited"
        self.started = threading.Event()
        self.stopped = threading.Event()


def _stop_serving(serving: Any) -> None:
    """Stop, removing the port file first: once the listener closes, another local user could
    take the port while requests drain, and a client reading the file would send it the token."""
    _remove_files(only_pid=os.getpid())
    serving.stop()


def _idle_watcher(serving: Any, idle_exit_min: float, watch: _Watch) -> Callable[[], None]:
    limit = idle_exit_min * 60.0

    def loop() -> None:
        watch.started.wait()
        while True:
            time.sleep(min(5.0, max(0.05, limit / 10)))
            if serving.idle_s() >= limit:
                watch.reason = f"idle for {idle_exit_min:g} min"
                _say(f"no request for {idle_exit_min:g} min: exiting")
                _stop_serving(serving)
                return

    return loop


def run(serving_for: Callable[[str, int, str, str], Any]) -> int:
    """`system1 daemon run`: serve in the foreground as the daemon (what `start` launches).
    `serving_for(host, port, token, session)` is the server, requiring one of the two tokens
    on every request but /healthz (the CLI passes http.serving.Serving): the lifecycle knows
    no server."""
    fd = _adopt_inherited_lock()
    if fd is None:
        fd, outcome = _take_lock_for_run()
        if fd is None:
            _emit(outcome or {}, pretty=False)
            return EXIT_OK if outcome and outcome.get("status") == "running" else EXIT_FAILED
    # We hold the lock, so no daemon is alive: a port file left by a killed one goes now, not
    # once we listen (a client must not send anything to whoever took its port meanwhile).
    _remove_files()
    watch = _Watch()
    code = EXIT_FAILED  # until the server says otherwise (an exception before it ran, too)
    try:
        host, port, idle_exit_min = _serve_settings()
        if not port_free(host, port):
            _say(f"port {port} on {host} is taken by another program: using a free port (see {port_path().name})")
            port = 0
        # The port file's token is new at every start: a client that ever sent it to the wrong
        # listener (a race with this daemon's death) gave away nothing that opens the next daemon.
        # daemon.token stays for clients configured with it by hand.
        token, session = daemon_token(), new_token()
        serving = serving_for(host, port, token, session)

        def on_signal(signum: int, _frame: Any) -> None:
            watch.reason = f"signal {signal.Signals(signum).name}"
            _stop_serving(serving)

        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, on_signal)

        def on_started(bound_host: str, bound_port: int) -> None:
            url = url_for(bound_host, bound_port)
            write_private(pid_path(), f"{os.getpid()}\n")
            write_private(port_path(), json.dumps({
                "pid": os.getpid(), "host": bound_host, "port": bound_port, "url": url,
                "fingerprint": fingerprint(), "version": __version__, "started": time.time(), "token": session}))
            _say(f"serving {url} (idle exit: {f'{idle_exit_min:g} min' if idle_exit_min else 'never'})")
            _unlink(failure_path())  # a start that worked ends the backoff
            watch.started.set()

        if idle_exit_min > 0:
            threading.Thread(target=_idle_watcher(serving, idle_exit_min, watch),
                             name="system1-idle-exit", daemon=True).start()
        threading.Thread(target=_log_watcher(watch.stopped), name="system1-log-size", daemon=True).start()
        try:
            code = serving.run(on_started=on_started)
        finally:
            watch.stopped.set()
    except KeyboardInterrupt:
        code = EXIT_OK
    finally:
        if not watch.started.is_set() and not watch.reason.startswith("signal"):  # never served: back off
            tail = [line for line in _log_tail(3) if "system1" in line][-1:]
            _record_failure(f"exit code {code}" + (f": {tail[0][-200:]}" if tail else "") + f"; see {log_path()}")
        _remove_files(only_pid=os.getpid())
        _release(fd)
    _say(f"stopped ({watch.reason}), exit code {code}")
    _emit({"status": "exited", "reason": watch.reason, "exit_code": code}, pretty=False)
    return code


# --- the CLI ----------------------------------------------------------------------------------------

def _emit(obj: dict[str, Any], pretty: bool) -> None:
    from ..console import emit  # the one JSON writer (lone surrogates in paths included)

    try:
        emit(obj, pretty)
    except (OSError, ValueError, AttributeError):
        pass  # no stdout (pythonw, a closed pipe): the log has the lifecycle lines


def _ok(result: dict[str, Any]) -> int:
    return EXIT_FAILED if result.get("error") or result.get("status") == "failed" else EXIT_OK


def command(args: Any, serving_for: Callable[[str, int, str, str], Any] | None = None) -> int:
    """`system1 daemon <action> [--apply] [--pretty]`: one JSON object on stdout; exit 0 ok,
    1 failed, 2 invalid."""
    action, pretty, apply = getattr(args, "action", None), bool(getattr(args, "pretty", False)), \
        bool(getattr(args, "apply", False))
    if apply and action not in ("install-login", "uninstall-login"):
        _emit({"status": "error", "error": {"code": "invalid_request", "message":
               f"--apply: only for install-login and uninstall-login, not {action!r}"}}, pretty)
        return EXIT_INVALID
    if action == "run":
        if serving_for is None:
            raise ValueError("daemon run needs the server to serve with")
        return run(serving_for)
    if action in ("install-login", "uninstall-login"):
        from . import login_units

        result = login_units.install(apply) if action == "install-login" else login_units.uninstall(apply)
    elif action in ACTIONS:
        try:
            result = ACTIONS[action]()
        except OSError as exc:  # an unwritable state dir, a full disk: said, not a traceback
            result = _failed(f"daemon {action}: {exc}")
    else:
        _emit({"status": "error", "error": {"code": "invalid_request", "message":
               f"action: expected one of start, stop, status, restart, run, install-login, "
               f"uninstall-login, got {action!r}"}}, pretty)
        return EXIT_INVALID
    _emit(result, pretty)
    return _ok(result)


ACTIONS: dict[str, Callable[[], dict[str, Any]]] = {"start": start, "stop": stop, "status": status,
                                                   "restart": restart}
