"""Notices for people (SPEC §3): a rung failed, the chain was exhausted, a rung recovered.

Logged at WARNING (stderr and `log_file`), at most once per key every 60 s in a process; a
rung that is cooling is skipped without a failure, so no notice repeats during a cooldown.
"""

from __future__ import annotations

import logging
import threading
import time

from .logs import LOGGER

DEDUP_S = 60.0
log = logging.getLogger(LOGGER + ".notice")
_last: dict[str, float] = {}
_lock = threading.Lock()


def notice(key: str, message: str, *args: object) -> bool:
    now = time.monotonic()
    with _lock:
        if now - _last.get(key, -DEDUP_S - 1) < DEDUP_S:
            return False
        _last[key] = now
    log.warning(message, *args)
    return True
