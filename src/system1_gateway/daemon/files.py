"""The per-user daemon's files, and how a client tells whether a daemon serves *its* settings.

Stdlib only: hooks and the CLI's fast path read these on every call, where importing pydantic
alone would cost ≈ 140 ms.

Files, under `<state>/daemon/` (created 0700; files 0600):
  daemon.lock  held (flock) by the one process that starts or runs the daemon
  daemon.pid   the serving process's pid, as text
  daemon.port  JSON: {"pid", "host", "port", "url", "fingerprint", "version", "started", "token"};
               its "token" is made afresh by each daemon start (a session token)
  daemon.token a per-user secret made once and kept across restarts, for clients configured
               by hand (an MCP client's header, an SDK); the daemon accepts either token
               (`Authorization: Bearer`)
  daemon.log   the daemon's stderr

Only this user can read the tokens (0600 files in a 0700 folder), so only this user's
programs can use the daemon; another local user's requests are refused (401) before anything
runs.

A port file outlives a daemon killed without cleanup (SIGKILL, the OOM killer, a crash), and
another local user may then listen on its port and take over its pid. So a client trusts the
port file only while daemon.lock is held (the kernel drops the lock with its holder) and its
pid is a process this user may signal; and the token it would send dies with that daemon.

A client uses the daemon only when the port file's fingerprint equals its own: the same
config file content and the same answer-changing SYSTEM1_* variables. A call with other
settings (an environment override) runs in-process instead of silently getting the
daemon's chain.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

TYPE_CHECKING = False  # no `typing` on the short-lived path (docs/architecture.md)
if TYPE_CHECKING:
    from typing import Any, Mapping

from .. import bounded_json
from ..paths import config_path, sha256, state_dir, write_atomic

# The lock's descriptor, handed by `daemon start` to the `daemon run` it spawns.
LOCK_FD_ENV = "SYSTEM1_DAEMON_LOCK_FD"
# Variables that steer the daemon's lifecycle or the tests, not the answers.
NOT_SETTINGS = frozenset({
    "SYSTEM1_SERVE_AUTOSTART", "SYSTEM1_SERVE_IDLE_EXIT_MIN", "SYSTEM1_SERVE_HOST", "SYSTEM1_SERVE_PORT",
    "SYSTEM1_STATE_DIR", "SYSTEM1_TOOLS_DIR", "SYSTEM1_REQUIRE_CLIENTS", "SYSTEM1_LOG_FILE",
    "SYSTEM1_LOG_LEVEL", "SYSTEM1_DAEMON_LOCK_FD", "SYSTEM1_INSTALL_DIR", "SYSTEM1_PYTHON",
})
PORT_FIELDS: dict[str, type | tuple[type, ...]] = {
    "pid": int, "host": str, "port": int, "url": str, "fingerprint": str, "version": str, "started": (int, float)}


def daemon_dir() -> Path:
    return state_dir() / "daemon"


def lock_path() -> Path:
    return daemon_dir() / "daemon.lock"


def pid_path() -> Path:
    return daemon_dir() / "daemon.pid"


def port_path() -> Path:
    return daemon_dir() / "daemon.port"


def log_path() -> Path:
    return daemon_dir() / "daemon.log"


def fingerprint(environ: Mapping[str, str] | None = None) -> str:
    """What the answers depend on: the config file's path and bytes, and the SYSTEM1_*
    variables that change settings (values hashed, never stored: some are secrets)."""
    env = os.environ if environ is None else environ
    digest = sha256()
    path = config_path()
    digest.update(str(path).encode("utf-8", "surrogatepass") + b"\0")
    digest.update(_answer_bytes(path))
    for name in sorted(k for k in env if k.startswith("SYSTEM1_") and k not in NOT_SETTINGS):
        digest.update(b"\0" + name.encode("utf-8", "surrogatepass") + b"=" +
                      env[name].encode("utf-8", "surrogatepass"))
    return digest.hexdigest()[:32]


HOOK_TABLES = ("routing", "skills", "guard")  # read by the hooks only: they change no answer


def _answer_bytes(path: Path) -> bytes:
    """The part of the config file that answers depend on: its parsed content without the
    hooks' tables, so turning a hint or the guard on does not make the running daemon "other
    settings" (and every hook silent until a restart). A file that does not parse counts byte
    for byte (whoever loads it reports the error)."""
    from ..config import file as config_file

    try:
        data = config_file.load()
    except config_file.Unreadable:
        try:
            return b"\0raw\0" + path.read_bytes()
        except OSError:
            return b"\0unreadable\0"
    if data is None:
        return b"\0absent\0"
    rest = {key: value for key, value in data.items() if key not in HOOK_TABLES}
    return b"\0toml\0" + json.dumps(rest, sort_keys=True, default=str).encode("utf-8")


def token_path() -> Path:
    return daemon_dir() / "daemon.token"


TOKEN_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")


def new_token() -> str:
    """43 URL-safe characters, 256 bits (the daemon's session token, and daemon.token)."""
    import secrets  # only the daemon makes tokens (secrets imports hashlib: OpenSSL)

    return secrets.token_urlsafe(32)


def daemon_token() -> str:
    """This user's lasting daemon secret (daemon.token), made on first use and kept: the
    daemon calls this once at start, never a client (clients send the port file's session
    token, which a daemon that dies takes with it)."""
    path = token_path()
    try:
        token = path.read_text(encoding="ascii").strip()
        if len(token) >= 32 and set(token) <= TOKEN_CHARS:
            return token
    except (OSError, UnicodeDecodeError):
        pass  # absent or damaged: a new one
    token = new_token()
    write_private(path, token + "\n")
    return token


def read_port() -> dict[str, Any] | None:
    """The port file's record when it is whole and well-formed, else None (missing, half
    written by a crash, or edited by hand: the caller then treats the daemon as absent)."""
    try:
        record = bounded_json.file_loads(port_path().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(record, dict):
        return None
    for key, kind in PORT_FIELDS.items():
        if not isinstance(record.get(key), kind) or isinstance(record.get(key), bool):
            return None
    if "token" in record and not isinstance(record["token"], str):  # absent: a daemon from before tokens
        return None
    return record


def write_private(path: Path, text: str) -> None:
    """Write a 0600 file atomically (paths.write_atomic)."""
    write_atomic(path, text)


def pid_alive(pid: int) -> bool:
    """True when a process with this pid exists and this user may signal it. Another user's
    process (EPERM) is never our daemon, which runs as this user: after our daemon died,
    another local user can fork until they own its pid (seconds), and must not pass for it."""
    if pid <= 0:
        return False
    if sys.platform == "win32":
        import ctypes

        handle = ctypes.windll.kernel32.OpenProcess(0x1000, False, pid)  # PROCESS_QUERY_LIMITED_INFORMATION
        if not handle:
            return False
        ctypes.windll.kernel32.CloseHandle(handle)
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return False  # another user's process (as hooks/channel.py's alive() and the Pi extension decide)
    return True


def lock_held() -> bool:
    """True when a process holds daemon.lock: a daemon serving, or a start under way. The
    kernel drops the lock when its holder dies (kill -9 included), so a free lock means the
    port file is stale, whoever now answers on its port. Opens nothing for writing and
    creates nothing (a client may run where the state folder is read-only)."""
    try:
        fd = os.open(lock_path(), os.O_RDONLY)
    except OSError:
        return False  # no lock file: no daemon was ever started here (or not ours to read)
    try:
        if sys.platform == "win32":
            import msvcrt

            try:
                msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
            except OSError:
                return True
            os.lseek(fd, 0, os.SEEK_SET)
            msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)
            return False
        import fcntl

        try:  # shared: two clients testing at once do not see each other as the daemon
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError:
            return True
        return False  # closing the descriptor below releases the test lock
    finally:
        os.close(fd)
