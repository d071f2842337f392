"""Where the gateway keeps its files. Environment variables win so tests and CI stay isolated."""

from __future__ import annotations

import functools
import os
import sys
from pathlib import Path

try:  # the builtin sha256 (used by config_file and daemon_files): the same digest as hashlib's, without
    # importing OpenSSL (≈ 3.5 ms per hook)
    from _sha2 import sha256  # Python 3.12+
except ImportError:
    try:
        from _sha256 import sha256  # Python 3.11
    except ImportError:  # pragma: no cover - a build without the builtin hashes
        from hashlib import sha256  # noqa: F401 - re-exported


class LocationError(ValueError):
    """A location variable holds a relative path. It would resolve against the working directory,
    which for a hook is the repository being worked on: the repository would supply the config,
    the routing rule (Python, executed) or the daemon's port and token. The message names the variable."""


def _absolute(name: str, value: str) -> Path:
    path = Path(value).expanduser()
    if not path.is_absolute():
        raise LocationError(f"{name} must be an absolute path, got {value!r} (a relative one would be "
                            "read from whatever directory the command runs in)")
    return path


def state_dir() -> Path:
    """`~/.system1-gateway` (or `SYSTEM1_STATE_DIR`): models cache, audit log, shared state."""
    return _state_dir(os.environ.get("SYSTEM1_STATE_DIR"), os.environ.get("HOME"))


def state_file(*parts: str) -> str:
    """A path under the state dir as a string, memoised: it is looked up on every request."""
    return _state_file(os.environ.get("SYSTEM1_STATE_DIR"), os.environ.get("HOME"), parts)


@functools.lru_cache(maxsize=32)
def _state_dir(override: str | None, home: str | None) -> Path:
    return _absolute("SYSTEM1_STATE_DIR", override) if override else Path.home() / ".system1-gateway"


@functools.lru_cache(maxsize=128)
def _state_file(override: str | None, home: str | None, parts: tuple[str, ...]) -> str:
    return str(_state_dir(override, home).joinpath(*parts))


def config_path() -> Path:
    """`SYSTEM1_CONFIG`, else the per-OS user config file (docs/configuration.md). LocationError
    when SYSTEM1_CONFIG is relative; a relative XDG_CONFIG_HOME (or APPDATA) is ignored, as the XDG
    spec says (a quoted `~/.config` from a .env file is one)."""
    override = os.environ.get("SYSTEM1_CONFIG")
    if override:
        return _absolute("SYSTEM1_CONFIG", override)
    base = os.environ.get("APPDATA" if sys.platform == "win32" else "XDG_CONFIG_HOME") or ""
    if not os.path.isabs(base):
        base = str(Path.home() / ("AppData/Roaming" if sys.platform == "win32" else ".config"))
    return Path(base) / "system1" / "config.toml"


def private_dir(directory: Path | str) -> Path:
    """Make `directory` (and each missing parent) 0700, whatever the umask: a folder the gateway
    creates is its owner's only. Inside the state dir, the state dir itself and every folder down
    to `directory` are also tightened to 0700 when they are looser (older versions left the state
    dir 0755, and it holds the audit log, the shared state and consent records). Folders outside
    the state dir that already exist are left as they are. Returns `directory`; raises OSError."""
    directory = Path(directory)
    missing = []
    for folder in (directory, *directory.parents):
        if folder.exists():
            break
        missing.append(folder)
    for folder in reversed(missing):
        try:
            folder.mkdir(mode=0o700)
        except FileExistsError:  # another process made it meanwhile
            continue
        if os.name != "nt":
            folder.chmod(0o700)  # mkdir's mode is masked by the umask
    if os.name != "nt":
        root = state_dir()
        chain = (directory, *directory.parents)
        if root in chain:
            for folder in chain[:chain.index(root) + 1]:
                _tighten(folder, 0o700)
    return directory


def private_file(path: Path | str) -> None:
    """Create `path` if missing and make it 0600 whatever the umask (a file another program
    creates in place, e.g. SQLite's database, whose -wal and -shm files copy its mode)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        if os.name != "nt":
            os.fchmod(fd, 0o600)
    finally:
        os.close(fd)


def _tighten(path: Path, mode: int) -> None:
    """chmod `path` to `mode` when it is ours and grants more than `mode`."""
    try:
        info = path.stat()
        if info.st_uid == os.getuid() and info.st_mode & 0o777 & ~mode:
            path.chmod(mode)
    except OSError:
        pass  # gone meanwhile, or not ours to change: the files inside are still 0600


def write_atomic(path: Path | str, data: str | bytes, mode: int = 0o600) -> None:
    """The one way a file is written: readers see the old file or the new one, never half of
    it (a temporary file per process and thread beside it, then one rename). The file gets
    `mode` (the owner's only, by default) and its folder is made as `private_dir` makes it.
    Raises OSError."""
    import threading  # here, not at import: the hooks import this module and rarely write with it

    path = Path(path)
    private_dir(path.parent)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    raw = data.encode("utf-8") if isinstance(data, str) else data
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
        try:
            view = memoryview(raw)
            while view:
                view = view[os.write(fd, view):]
        finally:
            os.close(fd)
        os.chmod(tmp, mode)  # O_CREAT's mode is masked by the umask
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()
