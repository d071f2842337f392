"""What every process of a deployment shares (docs/waterfall.md, docs/scale.md): cooldowns, the notice memory, the
one-retry lease after a cooldown expires, and today's counters.

One small interface, `StateStore`, three implementations: `SQLiteStore` (one user, one
machine: a file every hook and CLI process opens; the default), `RedisStore` (a team: several
`system1 serve` replicas behind a load balancer) and `MemoryStore` (what either falls back to
when its storage fails, so a request never fails because of shared state).

Cooldowns are keyed by *target*, not by rung name: two rungs that send to the same endpoint
with the same credential variable share one cooldown, and per-model failures cool only
endpoint + model (`target_keys`). `check` looks at every key of a rung at once.
"""

from __future__ import annotations

import atexit
import threading
import time
import weakref
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, Callable

LONG_S = 300.0  # credentials, quota, unavailable model, wrong endpoint
SHORT_S = 30.0  # rate limit, overload, transport, server errors
MAX_RETRY_AFTER_S = 300.0
# Failure kinds that cool, and for how long; every other kind (timeout, malformed,
# unsupported, engine, rejected, no_credentials) is request-specific or local and does not.
COOLING = {"credentials": LONG_S, "quota": LONG_S, "model": LONG_S, "endpoint": LONG_S,
           "rate_limit": SHORT_S, "overload": SHORT_S, "transport": SHORT_S, "server": SHORT_S}
# Failures that concern one model of an endpoint (an unavailable model; a rate limit, which
# hosted APIs set per model), as opposed to the whole endpoint or account (credentials,
# quota, a wrong URL, a server or network down). The split of llm_proxy and LiteLLM.
PER_MODEL = frozenset({"model", "rate_limit"})
PROBE_LEASE_S = 10.0  # how long the one re-trying request holds an expired target
NOTICE_KEEP_S = 86400.0
COUNTERS = ("requests", "answered", "abstained", "errors")
FLUSH_EVERY_S = 1.0


@dataclass(frozen=True)
class Cooling:
    rung: str  # the rung whose failure set it
    until: float  # epoch seconds, this machine's clock
    reason: str
    key: str = ""  # the target it cools (several rungs may share it)

    @property
    def remaining_s(self) -> float:
        return max(0.0, self.until - time.time())


def cooldown_for(kind: str, retry_after_s: float | None) -> float | None:
    """Seconds a failure of this kind cools its target, or None when it does not cool."""
    base = COOLING.get(kind)
    if base is None:
        return None
    if retry_after_s is not None and kind in ("rate_limit", "overload", "transport", "server"):
        return max(0.0, min(float(retry_after_s), MAX_RETRY_AFTER_S))
    return base


def target_keys(endpoint: str, model: str | None) -> tuple[str, ...]:
    """The cooldown keys of a rung: its endpoint, then endpoint + model when it names one."""
    base = f"endpoint:{endpoint}"
    return (base, f"{base} model:{model}") if model else (base,)


def key_for(keys: tuple[str, ...], kind: str) -> str:
    """The key a failure of `kind` cools: the model's for per-model failures, else the endpoint's."""
    return keys[-1] if kind in PER_MODEL else keys[0]


def today() -> str:
    return time.strftime("%Y-%m-%d")


def iso(epoch: float) -> str:
    """Local time with its offset, as status shows every instant."""
    return time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(epoch))


class StateStore(ABC):
    """The shared state of one deployment. Every method is safe from any thread and never
    raises for a storage failure (an implementation falls back and says so once)."""

    backend: str = ""

    @abstractmethod
    def check(self, keys: tuple[str, ...]) -> Cooling | bool:
        """The Cooling that blocks these keys (the latest), else True when this caller just
        claimed expired cooldowns on them (it is the one request re-trying the target;
        everybody else sees it cooling for PROBE_LEASE_S), else False (nothing cooling)."""

    @abstractmethod
    def peek(self, keys: tuple[str, ...]) -> Cooling | None:
        """The Cooling that blocks these keys now, without claiming anything (status)."""

    @abstractmethod
    def cool(self, key: str, rung: str, seconds: float, reason: str) -> Cooling:
        """Cool a target; an existing later expiry is kept (with its reason)."""

    @abstractmethod
    def recovered(self, keys: tuple[str, ...]) -> bool:
        """Forget these keys' cooldowns after a success; True when there was one."""

    @abstractmethod
    def active(self) -> list[Cooling]:
        """Every cooldown in force, soonest back first."""

    @abstractmethod
    def clear(self) -> int:
        """Forget every cooldown (`system1 retry`); how many there were."""

    @abstractmethod
    def claim_notice(self, key: str, window_s: float) -> bool:
        """True when no process of the deployment showed notice `key` in the last `window_s`
        seconds (and records it now)."""

    @abstractmethod
    def count(self, deltas: dict[str, int], last_route: dict[str, Any] | None) -> None:
        """Add to today's counters (COUNTERS) and record the last actual route."""

    @abstractmethod
    def today(self) -> dict[str, Any]:
        """{"today": {counter: n}, "last_route": {...} | None}."""

    def describe(self) -> dict[str, Any]:
        """Which backend holds the state and whether it is usable (status, /metrics)."""
        return {"backend": self.backend, "ok": True, "detail": None, "fallback_since": None}

    def close(self) -> None:
        return None


Counts = dict[str, dict[str, int]]  # day → counter → n


class CounterBuffer:
    """Today's counters, added up in this process and written to the shared store at most
    once a second by a background thread (and on close, on exit, and before a read), so a
    request never waits for a counter write: they are a report, not a decision."""

    def __init__(self, write: Callable[[Counts, dict[str, Any] | None], None], every_s: float = FLUSH_EVERY_S):
        self._write = write
        self._every_s = every_s
        self._lock = threading.Lock()
        self._pending: Counts = {}
        self._last: dict[str, Any] | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        atexit.register(_flush_at_exit, weakref.ref(self))

    def add(self, deltas: dict[str, int], last_route: dict[str, Any] | None) -> None:
        with self._lock:
            day = self._pending.setdefault(today(), {})
            for name, n in deltas.items():
                if n:
                    day[name] = day.get(name, 0) + n
            if last_route is not None:
                self._last = last_route
            if self._thread is None and not self._stop.is_set():
                self._thread = threading.Thread(target=self._run, name="system1-counters", daemon=True)
                self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self._every_s):
            self.flush()

    def flush(self) -> None:
        with self._lock:
            pending, last = self._pending, self._last
            self._pending, self._last = {}, None
        if pending or last is not None:
            self._write(pending, last)

    def close(self) -> None:
        self._stop.set()
        self.flush()


def _flush_at_exit(ref: "weakref.ref[CounterBuffer]") -> None:
    buffer = ref()
    if buffer is not None:
        try:
            buffer.flush()
        except Exception:  # noqa: BLE001 - exiting: counters are not worth a traceback
            pass
