"""The config file as the short-lived path reads it: parsed once per change, not per process.

`tomllib` costs ≈ 6-11 ms to import (it pulls in typing, datetime and its regexes), more than a
hook's whole budget for reading settings. So the parsed file is kept as JSON in the state
dir (`cache/config.json`, 0600), keyed by the file's path and the sha256 of its bytes (read
every time: a small file, microseconds; timestamps are too coarse to tell two quick edits
apart). A hook or CLI call that finds the key unchanged reads JSON (already imported) and
never imports tomllib. A file that does not parse is never cached:
every reader sees the error.
"""

from __future__ import annotations

import json

from .. import bounded_json
from ..paths import (  # the builtin sha256: no OpenSSL import
    LocationError,
    config_path,
    sha256,
    state_file,
    write_atomic,
)

TYPE_CHECKING = False  # no `typing` on the short-lived path (docs/architecture.md)
if TYPE_CHECKING:
    from typing import Any


_last: tuple[list[Any], dict[str, Any]] | None = None  # (key, data): a hook reads the config three times


class Unreadable(Exception):
    """The file exists but cannot be read or parsed; the message names the file and why."""


def load() -> dict[str, Any] | None:
    """The parsed config file; None when there is none; Unreadable when it cannot be used (a
    relative SYSTEM1_CONFIG included: nothing is read from the working directory)."""
    try:
        path = str(config_path())
    except LocationError as exc:
        raise Unreadable(str(exc)) from None
    try:
        with open(path, "rb") as handle:
            raw = handle.read()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise Unreadable(f"{path}: cannot read: {exc}") from None

    global _last
    key = [path, sha256(raw).hexdigest()]
    if _last is not None and _last[0] == key:
        return _last[1]
    try:
        cache = state_file("cache", "config.json")
        with open(cache, encoding="utf-8") as handle:
            cached = bounded_json.loads(handle.read())
        if cached.get("key") == key:
            _last = (key, cached["data"])
            return cached["data"]
    except LocationError:  # a relative SYSTEM1_STATE_DIR: no cache (whoever uses the state dir says why)
        cache = None
    except (OSError, ValueError, AttributeError, KeyError, TypeError):
        pass
    data = _parse(path, raw)
    if cache is not None:
        _store(cache, key, data)
    _last = (key, data)
    return data


def _parse(path: str, raw: bytes) -> dict[str, Any]:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise Unreadable(f"{path}: cannot read: {exc}") from None
    import tomllib

    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise Unreadable(f"{path}: invalid TOML: {exc}") from None


def _store(cache: str, key: list[Any], data: dict[str, Any]) -> None:
    """Best effort: a value JSON cannot hold (a TOML date) or an unwritable state dir only
    means the next reader parses again."""
    try:
        text = json.dumps({"key": key, "data": data}, ensure_ascii=False)
        write_atomic(cache, text)
    except (OSError, TypeError, ValueError):
        pass
