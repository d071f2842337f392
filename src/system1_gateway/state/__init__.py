"""Shared state: cooldowns, notices, the one-retry lease and today's counters (base.py)."""

from __future__ import annotations

from .base import COOLING, PER_MODEL, PROBE_LEASE_S, Cooling, StateStore, cooldown_for, key_for, target_keys
from .memory import MemoryState
from .sqlite import SQLiteState

__all__ = ["COOLING", "PER_MODEL", "PROBE_LEASE_S", "Cooling", "MemoryState", "SQLiteState", "StateStore",
           "cooldown_for", "key_for", "open_state", "target_keys"]


def open_state(url: str | None = None, prefix: str = "system1") -> StateStore:
    """The store a config names: Redis for a `redis://`/`rediss://`/`unix://` URL ([state] url
    or SYSTEM1_STATE_URL), else this user's SQLite file. The redis client is imported only
    then; without it installed, the config check has already said which extra to add."""
    if url:
        from .redis_store import RedisState

        return RedisState(url, prefix)
    return SQLiteState()
