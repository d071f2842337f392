"""Shared state: cooldowns, notices, the one-retry lease and today's counters (base.py)."""

from __future__ import annotations

from .base import COOLING, PER_MODEL, PROBE_LEASE_S, Cooling, StateStore, cooldown_for, key_for, target_keys
from .memory import MemoryStore
from .sqlite import SQLiteStore

__all__ = ["COOLING", "PER_MODEL", "PROBE_LEASE_S", "Cooling", "MemoryStore", "SQLiteStore", "StateStore",
           "cooldown_for", "key_for", "open_store", "target_keys"]


def open_store(url: str | None = None, prefix: str = "system1") -> StateStore:
    """The store a config names: Redis for a `redis://`/`rediss://`/`unix://` URL ([state] url
    or SYSTEM1_STATE_URL), else this user's SQLite file. The redis client is imported only
    then; without it installed, the config check has already said which extra to add."""
    if url:
        from .redis_store import RedisStore

        return RedisStore(url, prefix)
    return SQLiteStore()
