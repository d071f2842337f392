"""Shared state in a small SQLite file (`<state dir>/state.db`, WAL, busy timeout): the default
for one user on one machine, where hooks and the CLI run one process per call.

When a cooldown expires, exactly one request may try the target again: it claims the rows
with a short lease inside one IMMEDIATE transaction; everyone else keeps seeing the target
as cooling until that request succeeds (rows deleted) or fails (re-cooled). No background
probing. Loss or corruption of the file, or a write lock held longer than BUSY_TIMEOUT_S, never
fails a request: the store falls back to memory and warns once, and tries the file again every
REATTACH_S seconds (so a long-lived daemon does not stay on memory until restart, its cooldowns
no longer shared); back on the file, it writes the cooldowns it kept meanwhile.
"""

from __future__ import annotations

import json
import logging
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any, Callable, TypeVar

from ..logs import LOGGER
from ..paths import private_dir, private_file, state_dir
from .base import COUNTERS, NOTICE_KEEP_S, PROBE_LEASE_S, Cooling, CounterBuffer, Counts, StateStore, iso, today
from .memory import MemoryStore

log = logging.getLogger(LOGGER)
# A lock wait is bounded well under any deadline (sqlite's usual 5 s is past a request's deadline).
BUSY_TIMEOUT_S = 0.5
REATTACH_S = 30.0
T = TypeVar("T")

SCHEMA = (
    # `cooling`, not the 0.x `cooldowns` table (keyed by rung name): an old file is left as it was.
    # `leased`: the one re-trying request holds the expired row; its failure re-cools as it says.
    "CREATE TABLE IF NOT EXISTS cooling (key TEXT PRIMARY KEY, until REAL NOT NULL, reason TEXT NOT NULL, "
    "rung TEXT NOT NULL, leased INTEGER NOT NULL DEFAULT 0)",
    "CREATE TABLE IF NOT EXISTS notices (key TEXT PRIMARY KEY, at REAL NOT NULL)",
    "CREATE TABLE IF NOT EXISTS counters (day TEXT NOT NULL, name TEXT NOT NULL, n INTEGER NOT NULL, PRIMARY KEY (day, name))",
    "CREATE TABLE IF NOT EXISTS facts (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
)


class SQLiteStore(StateStore):
    backend = "sqlite"

    def __init__(self, path: Path | None = None):
        self.path = path or state_dir() / "state.db"
        self._memory: MemoryStore | None = None  # set once SQLite failed
        self._since: float | None = None
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        self._counts = CounterBuffer(self._write_counts)

    # -- storage ---------------------------------------------------------------------------
    def _db(self) -> sqlite3.Connection:
        if self._conn is None:
            private_dir(self.path.parent)
            # 0600 before SQLite opens it: its -wal and -shm files copy the database's mode.
            for path in (self.path, *(self.path.with_name(self.path.name + s) for s in ("-wal", "-shm"))):
                if path == self.path or path.exists():
                    private_file(path)
            conn = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            for statement in SCHEMA:
                conn.execute(statement)
            self._conn = conn
        return self._conn

    def _run(self, sql_fn: Callable[[sqlite3.Connection], T], memory_fn: Callable[[MemoryStore], T]) -> T:
        with self._lock:
            if self._memory is not None and time.time() - (self._since or 0.0) >= REATTACH_S:
                self._reattach()
            if self._memory is None:
                try:
                    return sql_fn(self._db())
                except (sqlite3.Error, OSError) as exc:
                    self._fall_back(exc)
            memory = self._memory  # read under the lock: a re-attach may reset it right after
            assert memory is not None
        return memory_fn(memory)

    def _reattach(self) -> None:
        """Try the file again (under self._lock); on success hand it what memory kept."""
        memory = self._memory
        assert memory is not None
        cooldowns, _, _ = memory.snapshot()
        try:
            db = self._db()
            now = time.time()
            for c in cooldowns:
                db.execute("INSERT INTO cooling (key, until, reason, rung) VALUES (?, ?, ?, ?) "
                           "ON CONFLICT(key) DO UPDATE SET reason = excluded.reason, until = excluded.until, "
                           "rung = excluded.rung, leased = 0 WHERE excluded.until > cooling.until",
                           (c.key, max(c.until, now), c.reason, c.rung))
        except (sqlite3.Error, OSError):
            self._since = time.time()  # still unusable: memory for another REATTACH_S
            self._drop_connection()
            return
        self._memory, self._since = None, None
        log.warning("shared state %s is usable again: %d cooldown(s) kept in memory written back", self.path,
                    len(cooldowns))

    def _fall_back(self, exc: Exception) -> None:
        log.warning("shared state %s unusable (%s); keeping cooldowns in memory for this process", self.path, exc)
        self._memory, self._since = MemoryStore(), time.time()
        self._drop_connection()

    def _drop_connection(self) -> None:
        if self._conn is not None:
            try:
                self._conn.close()
            except sqlite3.Error:
                pass
            self._conn = None

    @staticmethod
    def _rows(db: sqlite3.Connection, keys: tuple[str, ...]) -> list[tuple[str, float, str, str]]:
        marks = ",".join("?" * len(keys))
        return db.execute(f"SELECT key, until, reason, rung FROM cooling WHERE key IN ({marks})", keys).fetchall()

    @staticmethod
    def _blocking(rows: list[tuple[str, float, str, str]], now: float) -> Cooling | None:
        live = [row for row in rows if row[1] > now]
        if not live:
            return None
        key, until, reason, rung = max(live, key=lambda row: row[1])
        return Cooling(rung, until, reason, key)

    # -- cooldowns -------------------------------------------------------------------------
    def check(self, keys: tuple[str, ...]) -> Cooling | bool:
        now = time.time()

        def sql(db: sqlite3.Connection) -> Cooling | bool:
            rows = self._rows(db, keys)
            if not rows:
                return False
            blocking = self._blocking(rows, now)
            if blocking is not None:
                return blocking
            db.execute("BEGIN IMMEDIATE")  # the claim of every expired key is one step
            try:
                rows = self._rows(db, keys)
                blocking = self._blocking(rows, now)
                if blocking is None and rows:
                    db.executemany("UPDATE cooling SET until = ?, leased = 1 WHERE key = ?", [(now + PROBE_LEASE_S, r[0]) for r in rows])
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise
            return blocking if blocking is not None else bool(rows)

        return self._run(sql, lambda mem: mem.check(keys))

    def peek(self, keys: tuple[str, ...]) -> Cooling | None:
        now = time.time()
        return self._run(lambda db: self._blocking(self._rows(db, keys), now), lambda mem: mem.peek(keys))

    def cool(self, key: str, rung: str, seconds: float, reason: str) -> Cooling:
        until = time.time() + seconds

        def sql(db: sqlite3.Connection) -> Cooling:
            db.execute(
                "INSERT INTO cooling (key, until, reason, rung) VALUES (?, ?, ?, ?) "
                "ON CONFLICT(key) DO UPDATE SET reason = excluded.reason, until = excluded.until, rung = excluded.rung, "
                "leased = 0 WHERE cooling.leased = 1 OR excluded.until > cooling.until", (key, until, reason, rung))
            row = db.execute("SELECT until, reason, rung FROM cooling WHERE key = ?", (key,)).fetchone()
            return Cooling(row[2], row[0], row[1], key)

        return self._run(sql, lambda mem: mem.cool(key, rung, seconds, reason))

    def recovered(self, keys: tuple[str, ...]) -> bool:
        marks = ",".join("?" * len(keys))
        return bool(self._run(lambda db: db.execute(f"DELETE FROM cooling WHERE key IN ({marks})", keys).rowcount,
                              lambda mem: mem.recovered(keys)))

    def active(self) -> list[Cooling]:
        now = time.time()
        return self._run(
            lambda db: [Cooling(rung, until, reason, key) for key, until, reason, rung in db.execute(
                "SELECT key, until, reason, rung FROM cooling WHERE until > ? ORDER BY until", (now,))],
            lambda mem: mem.active())

    def clear(self) -> int:
        return self._run(lambda db: db.execute("DELETE FROM cooling").rowcount, lambda mem: mem.clear())

    # -- notices and counters --------------------------------------------------------------
    def claim_notice(self, key: str, window_s: float) -> bool:
        now = time.time()

        def sql(db: sqlite3.Connection) -> bool:
            db.execute("DELETE FROM notices WHERE at < ?", (now - NOTICE_KEEP_S,))
            return db.execute(
                "INSERT INTO notices (key, at) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET at = excluded.at "
                "WHERE notices.at <= ?", (key, now, now - window_s)).rowcount == 1

        return self._run(sql, lambda mem: mem.claim_notice(key, window_s))

    def count(self, deltas: dict[str, int], last_route: dict[str, Any] | None) -> None:
        self._counts.add(deltas, last_route)

    def _write_counts(self, by_day: Counts, last_route: dict[str, Any] | None) -> None:
        def sql(db: sqlite3.Connection) -> None:
            db.executemany("INSERT INTO counters (day, name, n) VALUES (?, ?, ?) "
                           "ON CONFLICT(day, name) DO UPDATE SET n = n + excluded.n",
                           [(day, name, n) for day, deltas in by_day.items() for name, n in deltas.items() if n])
            if last_route is not None:
                db.execute("INSERT OR REPLACE INTO facts (key, value) VALUES ('last_route', ?)",
                           (json.dumps(last_route),))

        self._run(sql, lambda mem: mem.add_counts(by_day, last_route))

    def today(self) -> dict[str, Any]:
        self._counts.flush()
        day = today()

        def sql(db: sqlite3.Connection) -> dict[str, Any]:
            counts = dict.fromkeys(COUNTERS, 0)
            counts.update(db.execute("SELECT name, n FROM counters WHERE day = ?", (day,)).fetchall())
            row = db.execute("SELECT value FROM facts WHERE key = 'last_route'").fetchone()
            return {"today": counts, "last_route": json.loads(row[0]) if row else None}

        return self._run(sql, lambda mem: mem.today())

    def describe(self) -> dict[str, Any]:
        if self._memory is None:
            return {"backend": self.backend, "ok": True, "detail": str(self.path), "fallback_since": None}
        return {"backend": self.backend, "ok": False, "fallback_since": iso(self._since or time.time()),
                "detail": f"{self.path} unusable: cooldowns and counters are kept in this process's memory"}

    def close(self) -> None:
        self._counts.close()
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None
