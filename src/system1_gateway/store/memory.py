"""Shared state held in this process only: what SQLite and Redis fall back to when their
storage fails (a request never fails because of shared state), and the reference semantics
the other two implement atomically."""

from __future__ import annotations

import threading
import time
from typing import Any

from .base import COUNTERS, NOTICE_KEEP_S, PROBE_LEASE_S, Cooling, Counts, StateStore, today


class MemoryStore(StateStore):
    backend = "memory"

    def __init__(self) -> None:
        self._lock = threading.Lock()
        # key → (until, reason, rung, leased): `leased` while the one re-trying request holds
        # an expired cooldown; its failure then re-cools the target for what *it* says.
        self.cooldowns: dict[str, tuple[float, str, str, bool]] = {}
        self.notices: dict[str, float] = {}
        self.counts: dict[str, dict[str, int]] = {}  # day → counter → n
        self.last_route: dict[str, Any] | None = None

    def _blocking(self, keys: tuple[str, ...], now: float) -> Cooling | None:
        live = [(self.cooldowns[k], k) for k in keys if k in self.cooldowns and self.cooldowns[k][0] > now]
        if not live:
            return None
        (until, reason, rung, _), key = max(live, key=lambda item: item[0][0])
        return Cooling(rung, until, reason, key)

    def check(self, keys: tuple[str, ...]) -> Cooling | bool:
        now = time.time()
        with self._lock:
            blocking = self._blocking(keys, now)
            if blocking is not None:
                return blocking
            expired = [k for k in keys if k in self.cooldowns]
            for k in expired:
                _, reason, rung, _ = self.cooldowns[k]
                self.cooldowns[k] = (now + PROBE_LEASE_S, reason, rung, True)
            return bool(expired)

    def peek(self, keys: tuple[str, ...]) -> Cooling | None:
        with self._lock:
            return self._blocking(keys, time.time())

    def cool(self, key: str, rung: str, seconds: float, reason: str) -> Cooling:
        until = time.time() + seconds
        with self._lock:
            old = self.cooldowns.get(key)
            if old is None or old[3] or until > old[0]:
                self.cooldowns[key] = (until, reason, rung, False)
            until, reason, rung, _ = self.cooldowns[key]
            return Cooling(rung, until, reason, key)

    def recovered(self, keys: tuple[str, ...]) -> bool:
        with self._lock:
            return sum(self.cooldowns.pop(k, None) is not None for k in keys) > 0

    def active(self) -> list[Cooling]:
        with self._lock:
            return self.active_unlocked()

    def clear(self) -> int:
        with self._lock:
            n = len(self.cooldowns)
            self.cooldowns.clear()
            return n

    def claim_notice(self, key: str, window_s: float) -> bool:
        now = time.time()
        with self._lock:
            if now - self.notices.get(key, -NOTICE_KEEP_S) < window_s:
                return False
            self.notices[key] = now
            return True

    def count(self, deltas: dict[str, int], last_route: dict[str, Any] | None) -> None:
        self.add_counts({today(): deltas}, last_route)

    def add_counts(self, by_day: Counts, last_route: dict[str, Any] | None) -> None:
        with self._lock:
            for day_name, deltas in by_day.items():
                day = self.counts.setdefault(day_name, dict.fromkeys(COUNTERS, 0))
                for name, n in deltas.items():
                    day[name] = day.get(name, 0) + n
            if last_route is not None:
                self.last_route = last_route

    def today(self) -> dict[str, Any]:
        with self._lock:
            counts = dict(self.counts.get(today(), dict.fromkeys(COUNTERS, 0)))
            return {"today": counts, "last_route": self.last_route}

    def snapshot(self) -> tuple[list[Cooling], dict[str, dict[str, int]], dict[str, Any] | None]:
        """What is held (cooldowns in force, counts by day, last route), for a backend that
        comes back and takes over."""
        with self._lock:
            counts = {day: dict(c) for day, c in self.counts.items()}
            return self.active_unlocked(), counts, self.last_route

    def active_unlocked(self) -> list[Cooling]:
        now = time.time()
        live = [Cooling(rung, until, reason, k) for k, (until, reason, rung, _) in self.cooldowns.items() if until > now]
        return sorted(live, key=lambda c: c.until)
