"""Notices for people (docs/waterfall.md): a rung failed, the chain was exhausted, a rung recovered.

Logged at WARNING (stderr and `log_file`), at most once per key every 60 s for all the
user's processes: hooks and the CLI run one process per call, so the memory lives in the
shared state (state.StateStore.claim_notice: the SQLite file or Redis), with an in-process memory in front
so a busy server does not write it per request. A rung that is cooling is skipped without a
failure, so no notice repeats during a cooldown.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

from .logs import LOGGER

DEDUP_S = 60.0
log = logging.getLogger(LOGGER + ".notice")
_last: dict[str, float] = {}
_lock = threading.Lock()


def notice(key: str, message: str, *args: object, shared: Any = None) -> bool:
    """Log `message` unless notice `key` was shown in the last minute; `shared` is the
    state store that remembers it across processes (None: this process only)."""
    now = time.monotonic()
    with _lock:
        if now - _last.get(key, -DEDUP_S - 1) < DEDUP_S:
            return False
        _last[key] = now
    if shared is not None and not shared.claim_notice(key, DEDUP_S):
        return False
    log.warning(message, *args)
    return True
