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


def state_dir() -> Path:
    """`~/.system1-gateway` (or `SYSTEM1_STATE_DIR`): models cache, audit log, shared state."""
    return _state_dir(os.environ.get("SYSTEM1_STATE_DIR"), os.environ.get("HOME"))


def state_file(*parts: str) -> str:
    """A path under the state dir as a string, memoised: it is looked up on every request."""
    return _state_file(os.environ.get("SYSTEM1_STATE_DIR"), os.environ.get("HOME"), parts)


@functools.lru_cache(maxsize=32)
def _state_dir(override: str | None, home: str | None) -> Path:
    return Path(override).expanduser() if override else Path.home() / ".system1-gateway"


@functools.lru_cache(maxsize=128)
def _state_file(override: str | None, home: str | None, parts: tuple[str, ...]) -> str:
    return str(_state_dir(override, home).joinpath(*parts))


def config_path() -> Path:
    """`SYSTEM1_CONFIG`, else the per-OS user config file (docs/configuration.md)."""
    override = os.environ.get("SYSTEM1_CONFIG")
    if override:
        return Path(override).expanduser()
    if sys.platform == "win32":
        base = Path(os.environ.get("APPDATA") or Path.home() / "AppData" / "Roaming")
    else:
        base = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")
    return base / "system1" / "config.toml"


def write_atomic(path: Path | str, data: str | bytes, mode: int = 0o600) -> None:
    """The one way a file is written: readers see the old file or the new one, never half of
    it (a temporary file per process and thread beside it, then one rename). The file gets
    `mode` (the owner's only, by default) and a missing parent directory 0700. Raises OSError."""
    import threading  # here, not at import: the hooks import this module and rarely write with it

    path = Path(path)
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
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
