"""The waterfall (docs/waterfall.md): one request walks the rungs under one deadline.

`Rungs` owns the provider instances (built once from the config, or injected by tests and
benchmarks) and their loading: a rung whose engine must load its models first (the embedded
one) is waited for within a separate load budget, before the request's deadline starts, so
the first call after install is not a timeout. `Chain.run` walks them: cooling and key-less rungs are passed over, each attempt
gets a fair share of what is left of the deadline, and `_attempt` is the one place where
what a provider raised becomes an outcome (like httpx's single exception-mapping point):

  ProviderFailure      → its own outcome; cools per its kind; advances unless `advance=False`
  ConfigError          → `error` (a rung that cannot be built); advances, never cools
  any other exception  → `error`, "internal error" of that provider; advances, never cools

The answer check runs after the provider returned: a MalformedAnswer is the provider's fault
(advances); anything else it raises is the gateway's own bug and stops the chain with
`internal_error` instead of being blamed on the engine.
"""

from __future__ import annotations

import logging
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from typing import Any, Callable

from .. import providers
from ..config.settings import Config
from ..logs import LOGGER
from ..model.errors import (
    ALL_COOLING,
    DEADLINE_EXCEEDED,
    INTERNAL_ERROR,
    PROVIDER_ERROR,
    ConfigError,
    GatewayError,
    MalformedAnswer,
    ProviderFailure,
    ProviderTimeout,
    Unsupported,
    bounded,
    encodable,
)
from ..model.requests import JudgeRequest
from ..notices import notice
from ..providers.base import BaseProvider, Limits, Reply
from ..store import Cooling, StateStore, cooldown_for, key_for, target_keys
from . import consent, overrides
from .answer_check import finalize
from .calibration import Calibration, Fit

log = logging.getLogger(LOGGER)
NO_USAGE: dict[str, int | None] = {"input_tokens": None, "output_tokens": None}
RUNG_WORKERS = 8  # concurrent attempts per rung that runs on a worker thread


def ms(seconds: float) -> float:
    return round(seconds * 1000, 2)


def clock(epoch: float) -> str:
    return time.strftime("%H:%M:%S", time.localtime(epoch))


class Rungs:
    """Provider instances by rung name, built once (constructor errors propagate)."""

    def __init__(self, config: Config, injected: dict[str, BaseProvider] | None = None,
                 build: Callable[[str, str, dict], BaseProvider] = providers.build):
        self._config = config
        self._injected: dict[str, BaseProvider] = dict(injected or {})  # owned by the caller
        self._built: dict[str, BaseProvider] = {}
        self._build = build
        self._lock = threading.Lock()
        self._loads: dict[tuple[str, bool], _Load] = {}  # (rung, second stage) → its load
        self._loaded: set[tuple[str, bool]] = set()
        self._keys: dict[str, tuple[str, ...]] = {}

    def get(self, name: str) -> BaseProvider:
        """The rung's provider; any failure to build it is a ConfigError naming the rung."""
        if name in self._injected:
            return self._injected[name]
        with self._lock:
            if name not in self._built:
                kind = self._config.kind_of(name)
                try:
                    self._built[name] = self._build(name, kind, self._config.provider_settings(name))
                except GatewayError:
                    raise
                except Exception as exc:  # noqa: BLE001 - e.g. SSL_CERT_FILE missing for an httpx client
                    raise ConfigError(f"[providers.{name}] cannot be built ({type(exc).__name__}: "
                                      f"{str(exc)[:200]})") from None
            return self._built[name]

    def kind(self, name: str) -> str:
        return self._config.kind_of(name)

    def keys(self, name: str) -> tuple[str, ...]:
        """The rung's cooldown keys (state.target_keys): its endpoint, and endpoint + model.
        A rung that cannot be built cools alone, under its own name."""
        keys = self._keys.get(name)
        if keys is None:
            try:
                endpoint, model = self.get(name).target()
            except Exception:  # noqa: BLE001 - reported by its attempt; never fails a lookup
                endpoint, model = f"rung:{name}", None
            keys = self._keys[name] = target_keys(endpoint, model)
        return keys

    def permitted(self, name: str) -> bool:
        """A rung a call may name (overrides.permitted): injected, configured, or a kind whose
        defaults send no credential anywhere the owner did not choose."""
        return name in self._injected or overrides.permitted(name, self.tables(), self._config.chain)

    def tables(self) -> dict[str, str]:
        """The [providers.<name>] tables: name → kind."""
        return {name: self._config.kind_of(name) for name in self._config.providers}

    def load(self, name: str, wait_s: float, full: bool = False) -> tuple[float, bool]:
        """Load the rung's engine (its `warm()`, and with `full` its `warm_full()`) once per
        process, shared by every caller; wait for it at most `wait_s`. Returns (seconds
        waited, finished). Never raises: a rung that cannot be built or loaded is reported by
        its attempt."""
        waited = 0.0
        if full:
            waited, done = self.load(name, wait_s)
            if not done:
                return waited, False
            wait_s -= waited
        key = (name, full)
        if key in self._loaded:
            return waited, True
        with self._lock:
            job = self._loads.get(key)
        if job is None:
            try:
                provider = self.get(name)
            except GatewayError:
                return waited, True
            method = BaseProvider.warm_full if full else BaseProvider.warm
            if getattr(type(provider), method.__name__) is method:  # nothing to load (HTTP engines)
                self._loaded.add(key)
                return waited, True
            with self._lock:
                job = self._loads.setdefault(key, _Load(name, provider, full))
        t0 = time.perf_counter()
        finished = job.done.wait(max(0.0, wait_s))
        if finished:
            self._loaded.add(key)
        return waited + time.perf_counter() - t0, finished

    def needs_full(self, name: str, request: Any) -> bool:
        """The request needs the rung's second loading stage, not loaded yet."""
        if (name, True) in self._loaded:
            return False
        try:
            return bool(self.get(name).needs_full(request))
        except Exception:  # noqa: BLE001 - a rung that cannot say is loaded fully
            return True

    def not_ready(self, name: str) -> str | None:
        """Why the rung may not start — no billing consent, no key here — or None (a rung
        that cannot be built is reported by its attempt)."""
        refused = consent.missing(name, self._config.kind_of(name))
        if refused:
            return refused
        try:
            needed, present, env = self.get(name).credentials()
        except GatewayError:
            return None
        return f"no credentials: environment variable {env} is not set" if needed and not present else None

    def close(self) -> None:
        """Close the providers built here (injected ones belong to whoever injected them)."""
        with self._lock:
            built, self._built = list(self._built.values()), {}
        for provider in built:
            try:
                provider.close()
            except Exception:  # closing must not fail a shutdown
                log.debug("closing %s failed", getattr(provider, "name", "?"), exc_info=True)


class _Load:
    """One engine load on its own thread (a request that stops waiting does not stop it)."""

    def __init__(self, name: str, provider: BaseProvider, full: bool = False):
        self.done = threading.Event()
        threading.Thread(target=self._run, args=(name, provider, full), name=f"system1-load-{name}",
                         daemon=True).start()

    def _run(self, name: str, provider: BaseProvider, full: bool) -> None:
        t0 = time.perf_counter()
        try:
            provider.warm_full() if full else provider.warm()
            log.info("rung %s loaded in %.1f s", name, time.perf_counter() - t0)
        except GatewayError as exc:
            log.warning("loading rung %s failed: %s", name, exc.message)
        except Exception as exc:  # noqa: BLE001 - e.g. a model file that will not load
            log.warning("loading rung %s failed (%s): %s", name, type(exc).__name__, exc)
        finally:
            self.done.set()


@dataclass
class Outcome:
    """What one walk of the chain produced: answers from a winning rung, or an error."""

    attempts: list[dict[str, Any]] = field(default_factory=list)
    answers: dict[str, Any] | None = None
    provider: str | None = None
    model: str | None = None
    usage: dict[str, Any] = field(default_factory=lambda: dict(NO_USAGE))
    error: GatewayError | None = None


class Chain:
    def __init__(self, rungs: Rungs, state: StateStore, timeout_s: float, load_budget_s: float = 60.0,
                 calibration: Calibration | None = None):
        self.rungs = rungs
        self.calibration = calibration or Calibration.off()
        self.state = state
        self.timeout_s = timeout_s
        self.load_budget_s = load_budget_s
        # One pool per rung: an engine that holds its workers (a hung or dripping endpoint, a
        # provider that ignores its timeout) can exhaust only its own, never the guard's rung.
        self._pools: dict[str, ThreadPoolExecutor] = {}
        self._pool_lock = threading.Lock()

    def close(self) -> None:
        with self._pool_lock:
            pools, self._pools = list(self._pools.values()), {}
        for pool in pools:
            pool.shutdown(wait=False, cancel_futures=True)

    def _executor(self, name: str) -> ThreadPoolExecutor:
        with self._pool_lock:
            pool = self._pools.get(name)
            if pool is None:
                pool = self._pools[name] = ThreadPoolExecutor(max_workers=RUNG_WORKERS,
                                                              thread_name_prefix=f"system1-rung-{name[:20]}")
            return pool

    # -- the walk -------------------------------------------------------------------------
    def run(self, request: JudgeRequest, chain: list[str], threshold: float | None, deadline_s: float,
            started: float, default_threshold: float = 0.6) -> Outcome:
        """`threshold`: the request's own min_confidence, or None (the question's fitted
        threshold, else `default_threshold`)."""
        deadline = started + deadline_s
        load_until = time.perf_counter() + self.load_budget_s
        out = Outcome()
        last: GatewayError | None = None
        cooling: list[tuple[str, Cooling]] = []
        queue = list(chain)
        retried = False
        while queue:
            name = queue[0]
            state = self.state.check(self.rungs.keys(name))
            if isinstance(state, Cooling):
                cooling.append((name, state))
                shared = "" if state.rung == name else f", shared target with rung {state.rung!r}"
                out.attempts.append(_record(name, "cooling", None,
                                            f"cooling until {clock(state.until)} ({state.reason}{shared})"))
                queue.pop(0)
                continue
            blocked = self.rungs.not_ready(name)
            if blocked:  # not a failure: this rung cannot start (no key here, no consent)
                out.attempts.append(_record(name, "skipped", None, blocked))
                last = GatewayError(f"{name}: {blocked}", PROVIDER_ERROR)
                if blocked.startswith("no billing consent"):
                    notice(f"consent:{name}", "rung %s skipped: %s", name, blocked, shared=self.state)
                queue.pop(0)
                continue
            waited, loaded = self.rungs.load(name, load_until - time.perf_counter())
            if loaded and self.rungs.needs_full(name, request):  # e.g. the accurate tier, first needed now
                more, loaded = self.rungs.load(name, load_until - time.perf_counter(), full=True)
                waited += more
            deadline += waited  # loading is charged to the load budget, never to the deadline
            if not loaded:
                out.attempts.append(_record(name, "timeout", None, f"still loading its models after the load "
                                                                   f"budget of {self.load_budget_s:g} s"))
                last = ProviderTimeout(f"{name}: still loading its models after {self.load_budget_s:g} s "
                                       f"([serve] load_budget_s)")
                queue.pop(0)
                continue
            remaining = deadline - time.perf_counter()
            if remaining <= 0.005:
                last = GatewayError(f"deadline of {deadline_s:g} s exhausted before rung {name!r}", DEADLINE_EXCEEDED)
                break
            timeout_s = min(self.timeout_s, remaining / len(queue))  # a fair share for every later rung
            t0 = time.perf_counter()
            reply, failure = self._attempt(name, request, timeout_s)
            if failure is None and not isinstance(reply, Reply):
                failure = MalformedAnswer(f"{name}: the provider returned {type(reply).__name__}, not a Reply")
            elif failure is None:  # the engine's name for itself is passed on: keep it printable
                reply.model = encodable(bounded(reply.model, 200)) if isinstance(reply.model, str) else name
            if failure is None:
                try:
                    answers = finalize(request, reply.answers, threshold, default_threshold, reply.model,
                                       self._fits_for(name))
                except ProviderFailure as exc:  # the answer check rejected what the engine said
                    failure = exc.redact(self._secrets(name))
                except Exception as exc:  # our bug, not the engine's
                    log.exception("answer check failed on %s's reply", name)
                    out.attempts.append(_record(name, "error", t0, "gateway internal error in the answer check"))
                    out.error = GatewayError(f"internal error in the answer check ({type(exc).__name__}); "
                                             f"please report it", INTERNAL_ERROR)
                    return out
            if failure is not None:
                outcome = failure.outcome if isinstance(failure, ProviderFailure) else "error"
                out.attempts.append(_record(name, outcome, t0, failure.message))
                last = failure
                if isinstance(failure, ProviderFailure):
                    self._cool(name, failure)
                    if not failure.advance:
                        break
                    if isinstance(failure, ProviderTimeout) and len(chain) == 1 and not retried:
                        retried = True  # one retry after a timeout when this is the only rung
                        continue
                queue.pop(0)
                continue
            if state is True and self.state.recovered(self.rungs.keys(name)):
                notice(f"recovered:{name}", "rung %s recovered", name, shared=self.state)
            out.attempts.append(_record(name, "ok", t0, f"models loaded in {waited:.1f} s first (load budget, "
                                                         f"outside the deadline)" if waited >= 0.05 else None))
            out.answers, out.provider, out.model = answers, name, reply.model
            out.usage = _add_usage(out.usage, reply.usage)
            return out
        out.error = self._exhausted(chain, cooling, last)
        notice(f"exhausted:{','.join(chain)}:{out.error.code}", "provider chain %s exhausted: %s",
               chain, out.error.message, shared=self.state)
        return out

    def _exhausted(self, chain: list[str], cooling: list[tuple[str, Cooling]], last: GatewayError | None) -> GatewayError:
        if cooling and len(cooling) == len(chain):
            name, soonest = min(cooling, key=lambda item: item[1].until)
            return GatewayError(f"every rung is cooling; the soonest back is {name!r} at "
                                f"{clock(soonest.until)} (in {soonest.remaining_s:.0f} s)", ALL_COOLING)
        error = last or GatewayError("no provider answered", PROVIDER_ERROR)
        if len(chain) > 1 and error.code != DEADLINE_EXCEEDED and getattr(error, "advance", True):
            error = GatewayError(f"every rung failed; last: {error.message}", error.code)
        return error

    # -- one attempt: the one place exceptions become outcomes ------------------------------
    def _attempt(self, name: str, request: JudgeRequest, timeout_s: float) -> tuple[Any, GatewayError | None]:
        try:
            provider = self.rungs.get(name)
            reason = unsupported(provider.limits, request)
            if reason:
                raise Unsupported(reason)
            if provider.self_timed:
                # The provider bounds itself by timeout_s (in-memory engines): no worker
                # thread, whose hand-off alone costs a fraction of a millisecond.
                return provider.judge(request, timeout_s), None
            future = self._executor(name).submit(provider.judge, request, timeout_s)
            try:
                return future.result(timeout=timeout_s), None
            except FutureTimeout:
                future.cancel()
                raise ProviderTimeout(f"{name}: no answer within {timeout_s:.2f} s") from None
        except ProviderFailure as exc:
            return None, exc.redact(self._secrets(name))
        except ConfigError as exc:
            return None, exc
        except Exception as exc:  # a provider bug must not take the gateway down
            log.exception("rung %s raised an unexpected error", name)
            return None, ProviderFailure(f"{name}: internal error ({type(exc).__name__})")

    def _secrets(self, name: str) -> tuple[str, ...]:
        try:
            return tuple(s for s in self.rungs.get(name).secrets() if s)
        except Exception:  # noqa: BLE001 - scrubbing must never be what fails
            return ()

    def _fits_for(self, name: str) -> Callable[[str, int, str], Fit | None] | None:
        if not self.calibration.enabled:
            return None
        names = (name, self.rungs.kind(name))
        return lambda question, options, model: self.calibration.find(names, model, question, options)

    def _cool(self, name: str, exc: ProviderFailure) -> None:
        if exc.outcome == "skipped":
            return  # beyond the rung's limits or no key here: not a failure, nothing to tell
        seconds = cooldown_for(exc.kind, exc.retry_after_s)
        if seconds is None:
            notice(f"failed:{name}:{exc.kind}", "rung %s failed (%s): %s", name, exc.kind, exc.message,
                   shared=self.state)
            return
        key = key_for(self.rungs.keys(name), exc.kind)
        cooled = self.state.cool(key, name, seconds, f"{exc.kind}: {exc.message[:160]}")
        notice(f"cooling:{name}:{cooled.until:.0f}", "rung %s failed (%s), cooling until %s: %s",
               name, exc.kind, clock(cooled.until), exc.message, shared=self.state)


def cooling(state: StateStore, rungs: Rungs, names: list[str]) -> dict[str, Cooling]:
    """The rungs of `names` that are cooling now (by their own failure or that of a rung
    sharing their target), without claiming anything: status, metrics, retry-after headers."""
    found = {}
    for name in names:
        blocking = state.peek(rungs.keys(name))
        if blocking is not None:
            found[name] = blocking
    return found


def unsupported(limits: Limits, request: JudgeRequest) -> str | None:
    if len(request.questions) > limits.max_questions:
        return f"{len(request.questions)} questions exceed this provider's max_questions {limits.max_questions}"
    for qid, q in request.questions.items():
        if q.type not in limits.types:
            return f"question {qid!r}: type {q.type!r} is not supported by this provider"
        n = len(q.criteria) if q.type != "noul" else 2
        if n > limits.max_options:
            return f"question {qid!r}: {n} options exceed this provider's max_options {limits.max_options}"
    return None


def _record(name: str, outcome: str, t0: float | None, detail: str | None) -> dict[str, Any]:
    latency = 0.0 if t0 is None else ms(time.perf_counter() - t0)
    return {"provider": name, "outcome": outcome, "latency_ms": latency, "detail": detail}


def _add_usage(total: dict[str, Any], more: dict[str, Any] | None) -> dict[str, Any]:
    """Sum where reported; unknown stays None (never 0)."""
    out = {}
    for key in ("input_tokens", "output_tokens"):
        a, b = total.get(key), (more or {}).get(key)
        out[key] = a if b is None else b if a is None else a + b
    return out
