"""The gateway core: validate → run the chain of rungs under one deadline → check → threshold.

Every face (CLI, MCP, HTTP and hooks) calls `Gateway.judge` / `Gateway.decide` with a plain
JSON payload and gets a plain JSON result back; nothing here knows about faces. Data flows
one way: request → validation (model/requests.py) → the waterfall (chain.py: rungs, deadline,
cooldowns, attempts, the answer check) → result + audit record. Reports about the gateway
itself (health, status, capabilities) are in reports.py.
"""

from __future__ import annotations

import gc
import logging
import time
import uuid
from typing import Any

from pydantic import ValidationError

from .. import toggle
from ..config.settings import Config, load_config
from ..logs import LOGGER, request_id_var
from ..model.errors import INTERNAL_ERROR, ConfigError, GatewayError, InvalidRequest
from ..model.requests import (
    DECIDE_QID,
    SCHEMA_VERSION,
    JudgeRequest,
    answer_labels,
    describe_validation_error,
    parse_decide,
    parse_judge,
)
from ..providers.base import BaseProvider
from ..store import Cooling, StateStore, open_store
from . import audit, overrides, reports, structured
from .calibration import Calibration
from .chain import NO_USAGE, Chain, Rungs, cooling, ms

log = logging.getLogger(LOGGER)


class Gateway:
    """One configured gateway. Cheap to build: providers load on first use.

    `providers` injects ready provider instances by rung name (tests, benchmarks, a daemon
    that shares one warm engine); every other rung is built from the config when first used.
    Use it as a context manager, or call `close()`, to free HTTP clients and threads.
    """

    def __init__(self, config: Config | None = None, config_error: ConfigError | None = None,
                 providers: dict[str, BaseProvider] | None = None, calibration: Calibration | None = None,
                 record: bool = True, build: Any = None):
        self.config = config or Config()  # defaults keep capabilities answerable when broken
        self.config_error = config_error
        # `record`: one audit line and today's counters per request. `system1 bulk` turns it
        # off (a million rows are one job, summarised once), and so do bench, calibrate,
        # evaluate and teach (their re-asks are measurements, not traffic); cooldowns and
        # notices still apply.
        self.record = record
        self.state: StateStore = open_store(self.config.state.url, self.config.state.prefix)
        # `providers`: rungs built by the caller (it owns them); `build`: how the others are built
        # (default providers.build; daemon/dispatch.py's delegates an embedded rung to the daemon).
        self.rungs = Rungs(self.config, providers, **({"build": build} if build is not None else {}))
        # `calibration`: the fits in force (default: the shipped and the user's files);
        # Calibration.off() gives the engines' raw answers, which calibrate and evaluate fit.
        self.calibration = calibration if calibration is not None else Calibration()
        self._chain = Chain(self.rungs, self.state, self.config.gateway.timeout_s,
                            self.config.serve.load_budget_s, self.calibration)

    @classmethod
    def from_environment(cls) -> "Gateway":
        try:
            return cls(load_config())
        except ConfigError as exc:
            log.error("configuration error: %s", exc.message)
            return cls(None, exc)

    def __enter__(self) -> "Gateway":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._chain.close()
        self.rungs.close()
        self.state.close()

    # -- rungs ----------------------------------------------------------------------------
    def chain(self, provider: str | None = None) -> list[str]:
        """The configured chain, or the caller's per-request override: one rung name or
        several, comma-separated, in order ("jev,openai")."""
        if self.config_error:
            raise self.config_error
        return self.config.chain if provider is None else self.override(provider)

    def override(self, value: str, where: str = "provider") -> list[str]:
        """A per-request chain: each rung once, each one the caller may name (configured, or a
        kind whose defaults send no credential elsewhere: overrides.permitted); an InvalidRequest naming
        `where` (the flag or parameter it came from)."""
        try:
            names = overrides.split(value, where)
        except ValueError as exc:
            raise InvalidRequest(str(exc)) from None
        for name in names:
            if not self.rungs.permitted(name):
                raise InvalidRequest(overrides.refused(where, name, self.rungs.tables(), self.config.chain))
        return names

    def rung(self, name: str) -> BaseProvider:
        """The provider instance for a rung name, built once (constructor errors propagate)."""
        return self.rungs.get(name)

    def warm(self, provider: str | None = None, full: bool = True) -> None:
        """Load the first rung's models now and wait for them (at most the load budget), as
        a daemon or an MCP server does at start. Requests share the same load: one arriving
        meanwhile waits for it before its deadline starts. `full=False` (one-shot processes)
        loads only what every request needs; a request that needs more (the embedded engine's
        accurate tier) loads it when it comes, outside its deadline. Never raises: whatever
        fails here is reported by the request that follows."""
        structured.warm()
        try:
            first = self.chain(provider)[0]
        except GatewayError:
            return
        self.rungs.load(first, self.config.serve.load_budget_s, full=full)

    def settle(self, questions: list[dict[str, Any]], provider: str | None = None, timeout_s: float = 600) -> None:
        """Answer once per question, then wait for the engines' background preparation of
        them (an embedded llm computes each new question's prefix and reference while idle):
        what calibrate and evaluate score is then the steady answer a warm daemon gives."""
        self.warm(provider, full=False)  # each question below loads what it needs
        for question in questions:
            self.judge({"state": "warm up", "questions": {"q": question}}, provider=provider)
        try:
            names = self.chain(provider)
        except GatewayError:
            return
        for name in names:
            wait = getattr(self.rung(name), "wait_prepared", None)
            if callable(wait):
                wait(timeout_s)

    def ready(self, provider: str | None = None) -> bool:
        """True once the first rung's engine has loaded (or needs no loading)."""
        try:
            first = self.chain(provider)[0]
        except GatewayError:
            return True
        return self.rungs.load(first, 0.0)[1]

    def max_options(self) -> int | None:
        """The most options any rung of the chain accepts in one question (None: no chain).
        The skill picker stays dormant, without an engine call, past this."""
        try:
            limits = [self.rung(name).limits.max_options for name in self.chain()]
        except Exception:  # noqa: BLE001 - a broken config or rung: the request will say why
            return None
        return max(limits) if limits else None

    # -- judge ----------------------------------------------------------------------------
    def judge(self, payload: Any, *, provider: str | None = None, deadline_s: float | None = None) -> dict[str, Any]:
        """One judge request. `deadline_s` caps this call's deadline (the request's own, else the
        configured one): a caller that already spent part of the time passes what is left."""
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
            return self._run(request, provider, started, deadline_s)
        except GatewayError as exc:
            result = _judge_result(rid, [], started, error=exc.as_dict())
            self._audit(result, None)
            return result
        except Exception as exc:  # the last net: no input may crash a face
            log.exception("internal error while judging")
            error = GatewayError(f"internal error ({type(exc).__name__}); please report it", INTERNAL_ERROR)
            result = _judge_result(rid, [], started, error=error.as_dict())
            self._audit(result, None)
            return result
        finally:
            request_id_var.reset(token)

    def _run(self, request: JudgeRequest, provider: str | None, started: float,
             cap_s: float | None = None) -> dict[str, Any]:
        chain = self.chain(provider)
        gw = self.config.gateway
        if toggle.paused():
            result = _judge_result(request.request_id, chain, started, answers=_paused_answers(request))
        else:
            deadline_s = request.deadline_s or gw.deadline_s
            if cap_s is not None:
                deadline_s = min(deadline_s, cap_s)

            def walk(req: JudgeRequest):  # every walk of one request shares its deadline
                return self._chain.run(req, chain, request.min_confidence, deadline_s, started, gw.min_confidence)

            shell = structured.shell_questions(request)
            if shell:  # a shell command: judged in parts (structured.py)
                bar = request.min_confidence if request.min_confidence is not None else gw.min_confidence
                out = structured.run(request, shell, walk, bar)
            else:
                out = walk(request)
            result = _judge_result(
                request.request_id, chain, started, answers=out.answers, provider=out.provider,
                model=out.model, attempts=out.attempts, usage=out.usage,
                error=out.error.as_dict() if out.error else None)
        self._audit(result, request)
        return result

    # -- batches --------------------------------------------------------------------------
    def prefetch(self, payloads: list[Any], provider: str | None = None) -> int:
        """The batch path (`judge --jsonl`, `bulk`), before answering a chunk of requests one by
        one with `judge`: the first rung computes ahead, together, what answering them will
        read (the embedded engine: the fast tier's embeddings, in a few batched runs instead
        of one per request). Answers do not change; `judge` only finds its work done. A payload
        that is not a valid request is skipped here (its `judge` says why), and nothing that
        fails here fails a request: they are then answered as if one at a time. Call `forget`
        after the chunk. Returns how many results were computed ahead."""
        if toggle.paused():
            return 0
        try:
            rung = self.rung(self.chain(provider)[0])
        except Exception:  # noqa: BLE001 - a broken config or rung: each request will say why
            return 0
        fetch = getattr(rung, "prefetch", None)
        if not callable(fetch):  # an HTTP rung, or the daemon's engine (it answers one by one)
            return 0
        requests: list[JudgeRequest] = []
        for payload in payloads:
            try:
                request = payload if isinstance(payload, JudgeRequest) else parse_judge(payload)
                requests.extend(structured.engine_requests(request))
            except Exception:  # noqa: BLE001 - invalid: its own judge reports it
                continue
        try:
            return int(fetch(requests))
        except Exception:  # then each request computes its own
            log.warning("computing a batch ahead failed; answering its requests one by one", exc_info=True)
            return 0

    def forget(self, provider: str | None = None) -> None:
        """Drops what `prefetch` computed (memory stays bounded by one chunk)."""
        try:
            rung = self.rung(self.chain(provider)[0])
        except Exception:  # noqa: BLE001 - nothing was prefetched then
            return
        forget = getattr(rung, "forget", None)
        if callable(forget):
            forget()

    # -- decide ---------------------------------------------------------------------------
    def decide(self, payload: Any, *, provider: str | None = None, deadline_s: float | None = None) -> dict[str, Any]:
        started = time.perf_counter()
        rid = _request_id(payload)
        try:
            judge = parse_decide(payload).to_judge(rid)
        except ValidationError as exc:
            error = InvalidRequest(describe_validation_error(exc)).as_dict()
        except Exception as exc:  # the last net, as in judge()
            log.exception("internal error while reading a decide request")
            error = GatewayError(f"internal error ({type(exc).__name__}); please report it", INTERNAL_ERROR).as_dict()
        else:
            return _decide_response(self.judge(judge, provider=provider, deadline_s=deadline_s))
        result = _judge_result(rid, [], started, error=error)
        self._audit(result, None)
        return _decide_response(result)

    # -- reports --------------------------------------------------------------------------
    def health(self, timeout_s: float | None = None) -> dict[str, Any]:
        return reports.health(self.config, self.config_error, self.rungs, timeout_s)

    def capabilities(self) -> dict[str, Any]:
        return reports.capabilities(self.config, self.config_error)

    def credentials(self, name: str) -> dict[str, Any]:
        return reports.credentials(self.rungs, name)

    def starting_rung(self) -> str | None:
        return reports.starting_rung(self.config, self.rungs, self.state)

    def cooling(self, names: list[str] | None = None) -> dict[str, Cooling]:
        """Rungs of `names` (default: the configured chain) cooling now, by rung name."""
        return cooling(self.state, self.rungs, self.config.chain if names is None else names)

    def status(self, chain: list[str] | None = None) -> dict[str, Any]:
        """`chain`: report on this order instead of the configured one (checked by `override`)."""
        return {**reports.status(self.config, self.config_error, self.rungs, self.state, chain),
                "calibration": self.calibration.summary()}

    # -- audit ----------------------------------------------------------------------------
    def _audit(self, result: dict[str, Any], request: JudgeRequest | None) -> None:
        if not self.record:
            return
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
        error = result["status"] == "error"
        route = ({k: entry[k] for k in ("request_id", "provider", "model", "outcomes")}
                 | {"time": time.strftime("%Y-%m-%dT%H:%M:%S%z")}) if entry["provider"] else None
        self.state.count({"requests": 1, "answered": int(not error), "errors": int(error),
                          "abstained": entry["abstained"]}, route)


def freeze_heap() -> int:
    """For a long-running server once its first rung is warm: collect, then move every object
    start-up built (modules, the engine's tokenizer and graph objects: ≈ 100 000) out of the
    collector's generations. A full collection over them took 76–113 ms on 2 cores, paid by
    whichever request happened to trigger it (the fuzz campaign's deadline overshoots);
    after the freeze it scans only what was made since. Objects made later are still collected.
    Returns how many objects are frozen."""
    gc.collect()
    gc.freeze()
    return gc.get_freeze_count()


def _paused_answers(request: JudgeRequest) -> dict[str, dict[str, Any]]:
    """Every question abstains while paused; uniform probabilities say "no opinion"."""
    answers = {}
    for qid, q in request.questions.items():
        labels = answer_labels(q)
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
    """The caller's id when it is one the request schema accepts, else a fresh one (an
    invalid request still gets an id its error can be traced by)."""
    rid = payload.get("request_id") if isinstance(payload, dict) else getattr(payload, "request_id", None)
    if isinstance(rid, str) and 0 < len(rid) <= 200:
        try:
            rid.encode("utf-8")
            return rid
        except UnicodeEncodeError:
            pass
    return uuid.uuid4().hex


def error_result(kind: str, error: GatewayError, request_id: str | None = None) -> dict[str, Any]:
    """A judge (`kind="judge"`) or decide result for a request a face refused before the core
    saw it (an unreadable body, an unknown query parameter): the same shape as any result."""
    judged = _judge_result(request_id or uuid.uuid4().hex, [], time.perf_counter(), error=error.as_dict())
    return judged if kind == "judge" else _decide_response(judged)


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
        "latency_ms": ms(time.perf_counter() - started),
        "attempts": attempts or [],
        "usage": usage or dict(NO_USAGE),
        "error": error,
    }


def _decide_response(judged: dict[str, Any]) -> dict[str, Any]:
    answer = judged["answers"].get(DECIDE_QID)
    if answer is not None and answer.get("type") == "noul":  # a built-in: p_true read as yes/no
        p_true = answer["p_true"]
        answer = {**answer, "choice": "yes" if p_true >= 0.5 else "no",
                  "probabilities": {"yes": p_true, "no": round(1 - p_true, 6)}}
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
        "calibration": answer.get("calibration") if answer else None,
        "abstain_reason": answer["abstain_reason"] if status == "abstained" else None,
        "latency_ms": judged["latency_ms"],
        "attempts": judged["attempts"],
        "error": judged["error"],
    }
