"""The native routes (/v1/judge, /v1/decide, /v1/status, /v1/health, /healthz, /metrics).

The request and response models of /openapi.json are model/requests.py's and results.py's, so the
OpenAPI is generated; the body is read raw and validated by the gateway itself (one
validator, one message format), never by FastAPI. Gateway calls block (engines, SQLite): they
run in worker threads, so requests are served concurrently."""

from __future__ import annotations

import math
import os
import time
from typing import Any

import anyio
from fastapi import FastAPI, Query, Request
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel

from .. import __version__, bounded_json
from ..core.gateway import Gateway, error_result
from ..model.errors import (
    ALL_COOLING,
    CONFIG_ERROR,
    DEADLINE_EXCEEDED,
    INTERNAL_ERROR,
    INVALID_REQUEST,
    MALFORMED_RESPONSE,
    PROVIDER_ERROR,
    PROVIDER_TIMEOUT,
    InvalidRequest,
)
from ..model.requests import DecideRequest, JudgeRequest
from ..model.results import DecideResponse, HealthResult, JudgeResult, StatusResult
from .prometheus import CONTENT_TYPE
from .security import AUTHENTICATED, HttpError

REF = "#/components/schemas/{model}"

# A result's error code → HTTP status. Answered and abstained results are 200.
ERROR_STATUS = {
    INVALID_REQUEST: 422,
    CONFIG_ERROR: 503,
    PROVIDER_ERROR: 502,
    MALFORMED_RESPONSE: 502,
    PROVIDER_TIMEOUT: 504,
    DEADLINE_EXCEEDED: 504,
    ALL_COOLING: 503,
    INTERNAL_ERROR: 500,
}
UNREADABLE_BODY = 400  # not JSON at all; a JSON value that is not a valid request is 422


def _responses(result_model: type[BaseModel]) -> dict[int | str, dict[str, Any]]:
    out: dict[int | str, dict[str, Any]] = {
        200: {"model": result_model, "description": "answered (abstentions included)"}}
    for status, what in ((400, "body is not JSON"), (422, "invalid_request (or a bad ?provider= / ?chain=)"),
                         (500, "internal_error"), (502, "provider_error, malformed_response"),
                         (503, "all_cooling (Retry-After), config_error"),
                         (504, "provider_timeout, deadline_exceeded")):
        out[status] = {"model": result_model, "description": what}
    return {**out, **guard_responses()}


def guard_responses() -> dict[int | str, dict[str, Any]]:
    return {status: {"model": HttpError, "description": what} for status, what in (
        (401, "bearer key missing or wrong"), (403, "Origin of another site"),
        (413, "body over 1 MiB"), (421, "Host header not this server's"))}


def _body(model: type[BaseModel]) -> dict[str, Any]:
    return {"requestBody": {"required": True, "content": {
        "application/json": {"schema": {"$ref": REF.format(model=model.__name__)}}}}}


# No constraints FastAPI would enforce itself: every refusal of a native call is the gateway's result shape.
PROVIDER = Query(None, description="Use only this rung for the call (a configured rung name or a provider kind); "
                                   "several, comma-separated, are a chain as ?chain=")
CHAIN = Query(None, description="This call's rung order, comma-separated (e.g. jev,openai): configured rung names "
                                "or provider kinds, each once; cooldowns and consent still apply")


def add_routes(app: FastAPI) -> None:
    @app.post("/v1/judge", responses=_responses(JudgeResult), openapi_extra=_body(JudgeRequest),
              summary="Answer typed questions about a state")
    async def judge(request: Request, provider: str | None = PROVIDER, chain: str | None = CHAIN) -> JSONResponse:
        return await _answer(request, "judge", provider, chain)

    @app.post("/v1/decide", responses=_responses(DecideResponse), openapi_extra=_body(DecideRequest),
              summary="Decide one question among options")
    async def decide(request: Request, provider: str | None = PROVIDER, chain: str | None = CHAIN) -> JSONResponse:
        return await _answer(request, "decide", provider, chain)

    @app.get("/v1/status", responses={200: {"model": StatusResult}, **guard_responses()},
             summary="Order, cooldowns, last route, today's counts")
    async def status(request: Request) -> JSONResponse:
        return JSONResponse(await anyio.to_thread.run_sync(request.app.state.gateway.status))

    @app.get("/v1/health", responses={200: {"model": HealthResult, "description": "ok or degraded"},
                                      503: {"model": HealthResult, "description": "down"}, **guard_responses()},
             summary="Probe every rung of the chain")
    async def health(request: Request) -> JSONResponse:
        report = await anyio.to_thread.run_sync(request.app.state.gateway.health)
        return JSONResponse(report, status_code=503 if report.get("status") == "down" else 200)

    @app.get("/healthz", responses={200: {"model": Healthz}, **guard_responses()},
             summary="Liveness and readiness (no auth)")
    async def healthz(request: Request) -> JSONResponse:
        ready = request.app.state.readiness
        if not request.scope.get(AUTHENTICATED, True):  # anyone may ask whether it is alive; no more
            return JSONResponse({"status": ready.status})
        return JSONResponse({"status": ready.status, "version": __version__, "pid": os.getpid(),
                             "uptime_s": round(time.monotonic() - ready.started, 3),
                             "load_s": None if ready.load_s is None else round(ready.load_s, 3),
                             "max_options": request.app.state.gateway.max_options()})

    @app.get("/metrics", response_class=Response, summary="Prometheus metrics",
             responses={200: {"content": {CONTENT_TYPE.split(";")[0]: {"schema": {"type": "string"}}}},
                        **guard_responses()})
    async def metrics(request: Request) -> Response:
        text = await anyio.to_thread.run_sync(request.app.state.metrics.exposition)
        return Response(text, media_type=CONTENT_TYPE)


class Healthz(BaseModel):
    """Without the key (where one is asked) only `status`."""

    status: str
    version: str | None = None
    pid: int | None = None
    uptime_s: float | None = None
    load_s: float | None = None
    max_options: int | None = None


async def _answer(request: Request, kind: str, provider: str | None, chain: str | None) -> JSONResponse:
    gateway: Gateway = request.app.state.gateway
    body = await request.body()

    def work() -> tuple[int, dict[str, Any]]:
        override, problem = _override(gateway, provider, chain)
        if problem:
            return ERROR_STATUS[INVALID_REQUEST], _rejected(request, kind, problem)
        try:
            payload = _json(body)
        except ValueError as exc:
            return UNREADABLE_BODY, _rejected(request, kind, str(exc))
        result = (gateway.judge if kind == "judge" else gateway.decide)(payload, provider=override)
        error = result.get("error")
        return (ERROR_STATUS.get(error["code"], 500) if error else 200), result

    status, result = await anyio.to_thread.run_sync(work)
    headers = {}
    if _header_safe(result.get("request_id")):
        headers["X-Request-Id"] = result["request_id"]
    if result.get("error") and result["error"]["code"] == ALL_COOLING:
        headers["Retry-After"] = str(await anyio.to_thread.run_sync(_retry_after_s, gateway, result))
    return JSONResponse(result, status_code=status, headers=headers)


def _json(body: bytes) -> Any:
    if not body.strip():
        raise ValueError("request: empty body (expected a JSON object)")
    try:
        return bounded_json.loads(body)
    except RecursionError:
        raise ValueError("request: JSON nested too deeply") from None
    except UnicodeDecodeError:
        raise ValueError("request: body is not UTF-8 text (expected a JSON object)") from None
    except ValueError as exc:  # JSONDecodeError, or an integer past the digit limit
        raise ValueError(f"request: body is not valid JSON ({str(exc)[:200]})") from None


def _override(gateway: Gateway, provider: str | None, chain: str | None) -> tuple[str | None, str | None]:
    """(this call's chain override or None, the problem with the query). `?chain=` and
    `?provider=` are two spellings of one thing, so giving both is refused rather than
    guessing which one wins. Checked before the body is parsed: a bad override is a 422
    naming the parameter, whatever the body."""
    if provider is not None and chain is not None:
        return None, ("provider, chain: both query parameters given (expected one: ?chain=A,B for this call's "
                      "rung order, or ?provider=NAME)")
    where, value = ("chain", chain) if chain is not None else ("provider", provider)
    if value is None or gateway.config_error:
        return value, None  # a broken config is the gateway's own config_error answer
    try:
        return ",".join(gateway.override(value, where)), None
    except InvalidRequest as exc:
        return None, exc.message


def _rejected(request: Request, kind: str, message: str) -> dict[str, Any]:
    """The gateway's own error result shape for a request it never saw (unreadable body,
    a bad ?provider= or ?chain=), counted like any other result."""
    result = error_result(kind, InvalidRequest(message))
    request.app.state.metrics.observe("http", result)
    return result


def _header_safe(value: Any) -> bool:
    return isinstance(value, str) and 0 < len(value) <= 200 and all(33 <= ord(c) <= 126 for c in value)


def _retry_after_s(gateway: Gateway, result: dict[str, Any]) -> int:
    """Whole seconds until the soonest rung of this request's chain is back (at least 1)."""
    chain = list(result.get("order") or [])
    try:
        left = [c.remaining_s for c in gateway.cooling(chain or None).values()]
    except Exception:  # noqa: BLE001 - the state file vanished: a short, honest guess
        left = []
    return max(1, math.ceil(min(left))) if left else 1
