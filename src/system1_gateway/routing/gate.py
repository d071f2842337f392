"""The READY gate of `[routing] mode = "set"`: `<state>/routing/set.json`, written by
`system1 routing set` when `system1 evaluate` says READY (or with `--force`), removed when the
mode is set back to "log" or "hint".

    {"verdict": "READY" | "FORCED", "at": "2026-12-03T10:00:00Z", "evaluate": {…summary…}}

The Agent hook sets subagent models only while this record exists; a config that says "set"
without it acts as "hint" (and says why). Stdlib only: the hooks read it.
"""

from __future__ import annotations

import json
import os
import time

TYPE_CHECKING = False  # no `typing` on the short-lived path (docs/architecture.md)
if TYPE_CHECKING:
    from typing import Any

from .. import bounded_json
from ..paths import state_file, write_atomic

VERDICTS = ("READY", "FORCED")
MAX_BYTES = 1 << 20


def path() -> str:
    return state_file("routing", "set.json")


def read() -> dict[str, Any] | None:
    """The record when it is there and well formed, else None (a broken one does not count)."""
    try:
        with open(path(), "rb") as handle:
            raw = handle.read(MAX_BYTES + 1)
    except OSError:
        return None
    if len(raw) > MAX_BYTES:
        return None
    try:
        record = bounded_json.loads(raw.decode("utf-8", "replace"))
    except ValueError:
        return None
    if not isinstance(record, dict) or record.get("verdict") not in VERDICTS or not isinstance(record.get("at"), str):
        return None
    return record


def write(verdict: str, summary: dict[str, Any] | None) -> dict[str, Any]:
    """Records the verdict (0600, atomically); returns the record."""
    if verdict not in VERDICTS:
        raise ValueError(f"verdict: expected one of {', '.join(VERDICTS)}, got {verdict!r}")
    record = {"verdict": verdict, "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "evaluate": summary}
    write_atomic(path(), json.dumps(record, ensure_ascii=False, indent=1) + "\n")
    return record


def clear() -> bool:
    """Removes the record; whether there was one."""
    try:
        os.unlink(path())
    except FileNotFoundError:
        return False
    return True


def describe(mode: str, record: dict[str, Any] | None) -> str:
    """How status and report show the mode: 'set (READY at …)', 'set (FORCED at …)',
    'set (not READY: acts as hint)', or the mode itself."""
    if mode != "set":
        return mode
    if record is None:
        return "set (not READY: acts as hint until `system1 routing set`)"
    return f"set ({record['verdict']} at {record['at']})"
