"""The gateway core: validate → run the chain of rungs under one deadline → check → threshold.

Every face (CLI now; MCP, HTTP and hooks later) calls `Gateway.judge` / `Gateway.decide`
with a plain JSON payload and gets a plain JSON result back; nothing here knows about faces.
Data flows one way: request → validation → rungs (attempts) → answer check → canonical
confidence and abstention → result + audit record.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any

from pydantic import ValidationError

from . import __version__, audit, providers, toggle
from .answers import finalize
from .config import Config, load_config
from .errors import (
    DEADLINE_EXCEEDED,
    PROVIDER_ERROR,
    ALL_COOLING,
    ConfigError,
    GatewayError,
    InvalidRequest,
    ProviderFailure,
    ProviderTimeout,
)
from .cooldowns import Cooling, CooldownStore, cooldown_for
from .logs import LOGGER, request_id_var
from .notices import notice
from .model import (
    DECIDE_QID,
    SCHEMA_VERSION,
    JudgeRequest,
    describe_validation_error,
    parse_decide,
    parse_judge,
)

log = logging.getLogger(LOGGER)
_NO_USAGE = {"input_tokens": None, "output_tokens": None}


def _ms(seconds: float) -> float:
    return round(seconds * 1000, 2)


class Gateway:
    """One configured gateway. Cheap to build: providers load on first use."""

    def __init__(self, config: Config | None = None, config_error: ConfigError | None = None):
        self.config = config or Config()  # defaults keep capabilities answerable when broken
        self.config_error = config_error
        self._rungs: dict[str, Any] = {}
        self._rung_lock = threading.Lock()
        self._pool: ThreadPoolExecutor | None = None
        self.cooldowns = CooldownStore()

    @classmethod
    def from_environment(cls) -> "Gateway":
        try:
            return cls(load_config())
        except ConfigError as exc:
            log.error("configuration error: %s", exc.message)
            return cls(None, exc)

    # -- rungs ----------------------------------------------------------------------------
    def chain(self, provider: str | None = None) -> list[str]:
        if self.config_error:
            raise self.config_error
        return [provider] if provider else self.config.chain

    def rung(self, name: str) -> Any:
        """The provider instance for a rung name, built once (constructor errors propagate)."""
        with self._rung_lock:
            if name not in self._rungs:
                kind = self.config.kind_of(name)
                self._rungs[name] = providers.build(name, kind, self.config.provider_settings(name))
            return self._rungs[name]

    def warm(self, provider: str | None = None) -> None:
        """Load the first rung's models now (a one-shot CLI wants its answer, not a timeout)."""
        try:
            first = self.rung(self.chain(provider)[0])
        except GatewayError:
            return  # reported properly by the request that follows
        if hasattr(first, "warm"):
            try:
                first.warm()
            except GatewayError as exc:
                log.warning("warm-up of %s failed: %s", first.name, exc.message)

    def _executor(self) -> ThreadPoolExecutor:
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=8, thread_name_prefix="system1-rung")
        return self._pool

    # -- one attempt ----------------------------------------------------------------------
    def _attempt(self, name: str, request: JudgeRequest, timeout_s: float, threshold: float):
        """Run one rung; returns (answers, reply) or raises ProviderFailure / ConfigError."""
        provider = self.rung(name)
        reason = _unsupported(provider.limits, request)
        if reason:
            raise ProviderFailure(reason, kind="unsupported", outcome="skipped")
        if getattr(provider, "self_timed", False):
            # The provider bounds itself by timeout_s (in-memory engines): no worker thread,
            # whose hand-off alone costs ≈ 0.3 ms on a small VM.
            reply = provider.judge(request, timeout_s)
        else:
            future = self._executor().submit(provider.judge, request, timeout_s)
            try:
                reply = future.result(timeout=timeout_s)
            except FutureTimeout:
                future.cancel()
                raise ProviderTimeout(f"{name}: no answer within {timeout_s:.2f} s") from None
        return finalize(request, reply.answers, threshold), reply

    # -- judge ----------------------------------------------------------------------------
    def judge(self, payload: Any, *, provider: str | None = None) -> dict[str, Any]:
        started = time.perf_counter()
        rid = _request_id(payload)
        token = request_id_var.set(rid)
        try:
            try:
                request = payload if isinstance(payload, JudgeRequest) else parse_judge(payload)
            except ValidationError as exc:
                raise InvalidRequest(describe_validation_error(exc)) from None
            if request.request_id != rid:
                request = request.model_copy(update={"request_id": rid})
            return self._run(request, provider, started)
        except GatewayError as exc:
            result = _judge_result(rid, [], started, error=exc.as_dict())
            self._audit(result, None)
            return result
        finally:
            request_id_var.reset(token)

    def _run(self, request: JudgeRequest, provider: str | None, started: float) -> dict[str, Any]:
        chain = self.chain(provider)
        gw = self.config.gateway
        if toggle.paused():
            result = _judge_result(request.request_id, chain, started, answers=_paused_answers(request))
            self._audit(result, request)
            return result
        threshold = request.min_confidence if request.min_confidence is not None else gw.min_confidence
        deadline_s = request.deadline_s or gw.deadline_s
        deadline = started + deadline_s
        attempts: list[dict[str, Any]] = []
        usage = dict(_NO_USAGE)
        last: GatewayError | None = None
        cooling: list[Cooling] = []
        queue = list(chain)
        retried = False
        while queue:
            name = queue[0]
            state = self.cooldowns.check(name)
            if isinstance(state, Cooling):
                cooling.append(state)
                attempts.append({"provider": name, "outcome": "cooling", "latency_ms": 0.0,
                                 "detail": f"cooling until {_clock(state.until)} ({state.reason})"})
                queue.pop(0)
                continue
            creds = self._missing_credentials(name)
            if creds:  # not a failure: this rung cannot be the start without its key
                attempts.append({"provider": name, "outcome": "skipped", "latency_ms": 0.0, "detail": creds})
                last = GatewayError(f"{name}: {creds}", PROVIDER_ERROR)
                queue.pop(0)
                continue
            remaining = deadline - time.perf_counter()
            if remaining <= 0.005:
                last = GatewayError(f"deadline of {deadline_s:g} s exhausted before rung {name!r}", DEADLINE_EXCEEDED)
                break
            timeout_s = min(gw.timeout_s, remaining / len(queue))  # a fair share for every later rung
            t0 = time.perf_counter()
            try:
                answers, reply = self._attempt(name, request, timeout_s, threshold)
            except ProviderFailure as exc:
                attempts.append(_attempt_record(name, exc.outcome, t0, exc.message))
                last = exc
                self._cool(name, exc)
                if not exc.advance:
                    break
                # One retry after a timeout when this is the only rung and budget remains.
                if isinstance(exc, ProviderTimeout) and len(chain) == 1 and not retried:
                    retried = True
                    continue
                queue.pop(0)
                continue
            except ConfigError as exc:
                attempts.append(_attempt_record(name, "error", t0, exc.message))
                last = exc
                queue.pop(0)
                continue
            except Exception as exc:  # noqa: BLE001 - a provider bug must not take the gateway down
                log.exception("rung %s raised an unexpected error", name)
                last = GatewayError(f"{name}: internal error ({type(exc).__name__})", PROVIDER_ERROR)
                attempts.append(_attempt_record(name, "error", t0, last.message))
                queue.pop(0)
                continue
            if state is True and self.cooldowns.recovered(name):
                notice(f"recovered:{name}", "rung %s recovered", name)
            attempts.append(_attempt_record(name, "ok", t0, None))
            usage = _add_usage(usage, reply.usage)
            result = _judge_result(
                request.request_id, chain, started, answers=answers, provider=name,
                model=reply.model, attempts=attempts, usage=usage,
            )
            self._audit(result, request)
            return result
        if cooling and len(cooling) == len(chain):
            soonest = min(cooling, key=lambda c: c.until)
            error = GatewayError(
                f"every rung is cooling; the soonest back is {soonest.rung!r} at {_clock(soonest.until)} "
                f"(in {soonest.remaining_s:.0f} s)", ALL_COOLING)
        else:
            error = last or GatewayError("no provider answered", PROVIDER_ERROR)
            if len(chain) > 1 and error.code != DEADLINE_EXCEEDED and getattr(error, "advance", True):
                error = GatewayError(f"every rung failed; last: {error.message}", error.code)
        notice(f"exhausted:{','.join(chain)}:{error.code}", "provider chain %s exhausted: %s", chain, error.message)
        result = _judge_result(request.request_id, chain, started, attempts=attempts, error=error.as_dict())
        self._audit(result, request)
        return result

    def _missing_credentials(self, name: str) -> str | None:
        try:
            check = getattr(self.rung(name), "credentials", None)
        except GatewayError:
            return None  # reported by the attempt itself
        if check is None:
            return None
        needed, present, env = check()
        return f"no credentials: environment variable {env} is not set" if needed and not present else None

    def _cool(self, name: str, exc: ProviderFailure) -> None:
        seconds = cooldown_for(exc.kind, exc.retry_after_s)
        if seconds is None:
            notice(f"failed:{name}:{exc.kind}", "rung %s failed (%s): %s", name, exc.kind, exc.message)
            return
        cooled = self.cooldowns.cool(name, seconds, f"{exc.kind}: {exc.message[:160]}")
        notice(f"cooling:{name}:{cooled.until:.0f}", "rung %s failed (%s), cooling until %s: %s",
               name, exc.kind, _clock(cooled.until), exc.message)

    # -- decide ---------------------------------------------------------------------------
    def decide(self, payload: Any, *, provider: str | None = None) -> dict[str, Any]:
        started = time.perf_counter()
        rid = _request_id(payload)
        try:
            request = parse_decide(payload)
        except ValidationError as exc:
            error = InvalidRequest(describe_validation_error(exc)).as_dict()
            result = _judge_result(rid, [], started, error=error)
            self._audit(result, None)
            return _decide_response(result)
        return _decide_response(self.judge(request.to_judge(rid), provider=provider))

    # -- health and capabilities ----------------------------------------------------------
    def health(self, timeout_s: float | None = None) -> dict[str, Any]:
        if self.config_error:
            return {"status": "down", "reason": self.config_error.message, "providers": []}
        timeout_s = timeout_s or self.config.gateway.timeout_s
        probes = []
        for name in self.config.chain:
            t0 = time.perf_counter()
            try:
                h = self.rung(name).health(timeout_s)
                probes.append({"provider": name, "ok": h.ok, "detail": h.detail, "model": h.model,
                               "latency_ms": _ms(time.perf_counter() - t0)})
            except GatewayError as exc:
                probes.append({"provider": name, "ok": False, "detail": exc.message, "model": None,
                               "latency_ms": _ms(time.perf_counter() - t0)})
        oks = [p["ok"] for p in probes]
        status = "ok" if oks and oks[0] else "degraded" if any(oks) else "down"
        return {"status": status, "reason": None if status == "ok" else _first_problem(probes), "providers": probes}

    def capabilities(self) -> dict[str, Any]:
        from .results import json_schemas

        gw = self.config.gateway
        return {
            "name": "system1-gateway",
            "version": __version__,
            "schema_versions": {"judge": SCHEMA_VERSION, "decide": SCHEMA_VERSION},
            "provider_chain": None if self.config_error else self.config.chain,
            "config_error": self.config_error.message if self.config_error else None,
            "thresholds": {"min_confidence": gw.min_confidence},
            "timeouts": {"timeout_s": gw.timeout_s, "deadline_s": gw.deadline_s},
            "providers": sorted(providers.KINDS),
            "schemas": json_schemas(),
        }

    def credentials(self, name: str) -> dict[str, Any]:
        """Whether a rung's credentials are present locally (never their values)."""
        try:
            provider = self.rung(name)
        except GatewayError as exc:
            return {"needed": None, "present": None, "env": None, "error": exc.message}
        check = getattr(provider, "credentials", None)
        needed, present, env = check() if check else (False, True, None)
        info = {"needed": needed, "present": present, "env": env, "error": None}
        if getattr(provider, "credentials_note", None):
            info["note"] = provider.credentials_note
        return info

    def starting_rung(self) -> str | None:
        """The first rung with credentials present and not cooling (no probing)."""
        cooling = {c.rung for c in self.cooldowns.active()}
        for name in self.config.chain:
            if name not in cooling and self.credentials(name)["present"]:
                return name
        return None

    def status(self) -> dict[str, Any]:
        """Order, credentials, cooldowns, route, counts and toggle state (metadata only)."""
        if self.config_error:
            rungs: dict[str, Any] = {}
        else:
            rungs = {name: {"kind": self.config.kind_of(name), "credentials": self.credentials(name)}
                     for name in self.config.chain}
        return {
            "order": None if self.config_error else self.config.chain,
            "config_error": self.config_error.message if self.config_error else None,
            "paused": toggle.paused(),
            "min_confidence": self.config.gateway.min_confidence,
            "rungs": rungs,
            "cooldowns": [{"rung": c.rung, "reason": c.reason, "until": _iso(c.until),
                           "remaining_s": round(c.remaining_s, 1)} for c in self.cooldowns.active()],
            "preferred_start": None if self.config_error else self.config.chain[0],
            "actual_start": None if self.config_error else self.starting_rung(),
            **audit.today_summary(),
        }

    # -- audit ----------------------------------------------------------------------------
    def _audit(self, result: dict[str, Any], request: JudgeRequest | None) -> None:
        entry = {
            "request_id": result["request_id"],
            "status": result["status"],
            "order": result["order"],
            "provider": result["provider"],
            "model": result["model"],
            "outcomes": [(a["provider"], a["outcome"]) for a in result["attempts"]],
            "abstained": sum(1 for a in result["answers"].values() if a["abstained"]),
            "questions": len(result["answers"]),
            "latency_ms": result["latency_ms"],
            "usage": result["usage"],
            "error": result["error"]["code"] if result["error"] else None,
        }
        debug = None
        if not self.config_error and self.config.gateway.log_level == "DEBUG" and request is not None:
            debug = {"request": request.model_dump(mode="json"), "answers": result["answers"]}
        audit.record(entry, debug)


def _iso(epoch: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(epoch))


def _clock(epoch: float) -> str:
    return time.strftime("%H:%M:%S", time.localtime(epoch))


def _paused_answers(request: JudgeRequest) -> dict[str, dict[str, Any]]:
    """Every question abstains while paused; uniform probabilities say "no opinion"."""
    answers = {}
    for qid, q in request.questions.items():
        labels = ["true", "false"] if q.type == "noul" else q.labels
        probs = {label: round(1 / len(labels), 6) for label in labels}
        answer: dict[str, Any] = {"type": q.type, "probabilities": probs}
        if q.type == "noul":
            answer["p_true"] = 0.5
        elif q.type == "choice":
            answer["choice"] = labels[0]
        else:
            answer.update(score=round(sum(int(k) * p for k, p in probs.items()), 4), level=0)
        answer.update(confidence=round(1 / len(labels), 6), abstained=True, abstain_reason="paused",
                      calibrated=False, rationale="paused: `system1 toggle on` resumes decisions")
        answers[qid] = answer
    return answers


def _request_id(payload: Any) -> str:
    rid = payload.get("request_id") if isinstance(payload, dict) else getattr(payload, "request_id", None)
    return rid if isinstance(rid, str) and 0 < len(rid) <= 200 else uuid.uuid4().hex


def _unsupported(limits: Any, request: JudgeRequest) -> str | None:
    if len(request.questions) > limits.max_questions:
        return f"{len(request.questions)} questions exceed this provider's max_questions {limits.max_questions}"
    for qid, q in request.questions.items():
        if q.type not in limits.types:
            return f"question {qid!r}: type {q.type!r} is not supported by this provider"
        n = len(q.criteria) if q.type != "noul" else 2
        if n > limits.max_options:
            return f"question {qid!r}: {n} options exceed this provider's max_options {limits.max_options}"
    return None


def _attempt_record(name: str, outcome: str, t0: float, detail: str | None) -> dict[str, Any]:
    return {"provider": name, "outcome": outcome, "latency_ms": _ms(time.perf_counter() - t0), "detail": detail}


def _add_usage(total: dict[str, Any], more: dict[str, Any]) -> dict[str, Any]:
    """Sum where reported; unknown stays None (never 0)."""
    out = {}
    for key in ("input_tokens", "output_tokens"):
        a, b = total.get(key), (more or {}).get(key)
        out[key] = a if b is None else b if a is None else a + b
    return out


def _first_problem(probes: list[dict[str, Any]]) -> str | None:
    for p in probes:
        if not p["ok"]:
            return f"{p['provider']}: {p['detail']}"
    return None


def _judge_result(rid, chain, started, *, answers=None, provider=None, model=None,
                  attempts=None, usage=None, error=None) -> dict[str, Any]:
    return {
        "schema_version": SCHEMA_VERSION,
        "request_id": rid,
        "status": "error" if error else "answered",
        "answers": answers or {},
        "order": list(chain),
        "provider": provider,
        "model": model,
        "latency_ms": _ms(time.perf_counter() - started),
        "attempts": attempts or [],
        "usage": usage or dict(_NO_USAGE),
        "error": error,
    }


def _decide_response(judged: dict[str, Any]) -> dict[str, Any]:
    answer = judged["answers"].get(DECIDE_QID)
    if judged["error"] or answer is None:
        status = "error"
    else:
        status = "abstained" if answer["abstained"] else "decided"
    return {
        "schema_version": SCHEMA_VERSION,
        "request_id": judged["request_id"],
        "status": status,
        "decision": answer["choice"] if status == "decided" else None,
        "confidence": answer.get("confidence") if answer else None,
        "probabilities": answer.get("probabilities") if answer else None,
        "rationale": answer.get("rationale") if answer else None,
        "provider": judged["provider"],
        "model": judged["model"],
        "calibrated": bool(answer and answer["calibrated"]),
        "abstain_reason": answer["abstain_reason"] if status == "abstained" else None,
        "latency_ms": judged["latency_ms"],
        "attempts": judged["attempts"],
        "error": judged["error"],
    }
