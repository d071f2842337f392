"""Cooldowns: a per-rung circuit breaker shared by every process of the user (SPEC §3).

Hooks run one process per prompt, so the breaker lives in a small SQLite file
(`<state dir>/state.db`, WAL, busy timeout) rather than in memory. When a cooldown expires,
exactly one request may try the rung again: it claims the row with a short lease in one
UPDATE, everyone else keeps seeing the rung as cooling until that request succeeds (row
deleted) or fails (re-cooled). No background probing.

Loss or corruption of the file never fails a request: the store falls back to memory for
the rest of the process and warns once.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from .logs import LOGGER
from .paths import state_dir

log = logging.getLogger(LOGGER)

LONG_S = 300.0  # credentials, quota, unavailable model, wrong endpoint
SHORT_S = 30.0  # rate limit, overload, transport, server errors
MAX_RETRY_AFTER_S = 300.0
# Failure kinds that cool, and for how long; every other kind (timeout, malformed,
# unsupported, engine, rejected, no_credentials) is request-specific or local and does not.
COOLING = {"credentials": LONG_S, "quota": LONG_S, "model": LONG_S, "endpoint": LONG_S,
           "rate_limit": SHORT_S, "overload": SHORT_S, "transport": SHORT_S, "server": SHORT_S}
PROBE_LEASE_S = 10.0  # how long the one re-trying request holds an expired rung


@dataclass(frozen=True)
class Cooling:
    rung: str
    until: float  # epoch seconds
    reason: str

    @property
    def remaining_s(self) -> float:
        return max(0.0, self.until - time.time())


def cooldown_for(kind: str, retry_after_s: float | None) -> float | None:
    """Seconds a failure of this kind cools its rung, or None when it does not cool."""
    base = COOLING.get(kind)
    if base is None:
        return None
    if retry_after_s is not None and kind in ("rate_limit", "overload", "transport", "server"):
        return max(0.0, min(float(retry_after_s), MAX_RETRY_AFTER_S))
    return base


class CooldownStore:
    def __init__(self, path: Path | None = None):
        self.path = path or state_dir() / "state.db"
        self._memory: dict[str, tuple[float, str]] | None = None  # set once SQLite failed
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        self._notices: dict[str, float] = {}  # the notice memory once SQLite failed

    # -- storage ---------------------------------------------------------------------------
    def _db(self) -> sqlite3.Connection:
        if self._conn is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(self.path, timeout=5.0, isolation_level=None, check_same_thread=False)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute("CREATE TABLE IF NOT EXISTS cooldowns (rung TEXT PRIMARY KEY, until REAL NOT NULL, reason TEXT NOT NULL)")
            conn.execute("CREATE TABLE IF NOT EXISTS notices (key TEXT PRIMARY KEY, at REAL NOT NULL)")
            self._conn = conn
        return self._conn

    def _fallback(self, exc: Exception) -> None:
        if self._memory is None:
            self._notices = {}
            log.warning("cooldown state %s unusable (%s); keeping cooldowns in memory for this process", self.path, exc)
            self._memory = {}
            if self._conn is not None:
                try:
                    self._conn.close()
                except sqlite3.Error:
                    pass
                self._conn = None

    def _run(self, sql_fn, memory_fn):
        with self._lock:
            if self._memory is None:
                try:
                    return sql_fn(self._db())
                except (sqlite3.Error, OSError) as exc:
                    self._fallback(exc)
            return memory_fn(self._memory)

    # -- operations ------------------------------------------------------------------------
    def check(self, rung: str) -> Cooling | bool:
        """The rung's Cooling, else True when this caller claimed an expired cooldown (it is
        the one request re-trying the rung), else False (never cooled: try it)."""
        now = time.time()

        def sql(db):
            row = db.execute("SELECT until, reason FROM cooldowns WHERE rung = ?", (rung,)).fetchone()
            if row is None:
                return False
            if row[0] > now:
                return Cooling(rung, row[0], row[1])
            claimed = db.execute("UPDATE cooldowns SET until = ? WHERE rung = ? AND until <= ?",
                                 (now + PROBE_LEASE_S, rung, now)).rowcount
            return True if claimed == 1 else Cooling(rung, now + PROBE_LEASE_S, row[1])

        def memory(mem):
            entry = mem.get(rung)
            if entry is None:
                return False
            if entry[0] > now:
                return Cooling(rung, entry[0], entry[1])
            mem[rung] = (now + PROBE_LEASE_S, entry[1])
            return True

        return self._run(sql, memory)

    def cool(self, rung: str, seconds: float, reason: str) -> Cooling:
        """Cool a rung; an existing later expiry is kept."""
        until = time.time() + seconds

        def sql(db):
            db.execute(
                "INSERT INTO cooldowns (rung, until, reason) VALUES (?, ?, ?) "
                "ON CONFLICT(rung) DO UPDATE SET reason = excluded.reason, until = excluded.until "
                "WHERE excluded.until > cooldowns.until", (rung, until, reason))
            row = db.execute("SELECT until, reason FROM cooldowns WHERE rung = ?", (rung,)).fetchone()
            return Cooling(rung, row[0], row[1])

        def memory(mem):
            old = mem.get(rung)
            if old is None or until > old[0]:
                mem[rung] = (until, reason)
            return Cooling(rung, *mem[rung])

        return self._run(sql, memory)

    def recovered(self, rung: str) -> bool:
        """Forget a rung's cooldown after a success; True when there was one."""
        return bool(self._run(
            lambda db: db.execute("DELETE FROM cooldowns WHERE rung = ?", (rung,)).rowcount,
            lambda mem: mem.pop(rung, None) is not None))

    def active(self) -> list[Cooling]:
        now = time.time()
        return self._run(
            lambda db: [Cooling(*row) for row in db.execute(
                "SELECT rung, until, reason FROM cooldowns WHERE until > ? ORDER BY until", (now,))],
            lambda mem: sorted((Cooling(r, u, why) for r, (u, why) in mem.items() if u > now), key=lambda c: c.until))

    def claim_notice(self, key: str, window_s: float) -> bool:
        """True when no process of the user showed notice `key` in the last `window_s`
        seconds (and records it now): one-shot CLI and hook processes share the memory."""
        now = time.time()

        def sql(db):
            db.execute("DELETE FROM notices WHERE at < ?", (now - 86400,))
            return db.execute(
                "INSERT INTO notices (key, at) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET at = excluded.at "
                "WHERE notices.at <= ?", (key, now, now - window_s)).rowcount == 1

        def memory(_):
            if now - self._notices.get(key, -window_s - 1) < window_s:
                return False
            self._notices[key] = now
            return True

        return self._run(sql, memory)

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def clear(self) -> int:
        return self._run(lambda db: db.execute("DELETE FROM cooldowns").rowcount,
                         lambda mem: (len(mem), mem.clear())[0])
