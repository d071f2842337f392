"""The Jev wire face: `POST /v1/systemone` and `GET /v1/models`.

A Jev client (the official `typesafe-sdk`, `jev-lite`, anything built on the hosted OpenAPI)
pointed at the gateway gets the whole configured waterfall. This module only translates;
the decisions behind it are written up in docs/jev-wire.md:

  body bytes ─ read_body (zstd, content type, size) ─▶ JSON ─ to_judge ─▶ JudgeRequest + rung
  gateway result ─ to_jev ─▶ 200 Jev response        ─ failure_status ─▶ status + body + headers

`model` is the whole waterfall for the Jev aliases (`jev-latest`, …, `system1`) and one rung
for a rung's name (like the CLI's `--provider`); the response's `model` is `<rung>/<model>`.
The Jev wire has no abstention or refusal, so answers carry Jev's own confidence (recomputed
from the probabilities), a refused question is left out, and the counts travel in
`x-system1-*` headers: no field a strict client would refuse is ever added.
"""

from __future__ import annotations

import importlib
import io
import logging
import math
import time
from typing import Any, Callable, Literal, Union
from urllib.parse import quote

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from starlette.concurrency import run_in_threadpool

from .. import bounded_json
from ..logs import LOGGER
from ..model.errors import (
    ALL_COOLING,
    CONFIG_ERROR,
    DEADLINE_EXCEEDED,
    INTERNAL_ERROR,
    INVALID_REQUEST,
    MALFORMED_RESPONSE,
    PROVIDER_ERROR,
    PROVIDER_TIMEOUT,
)
from ..model.requests import JudgeRequest

__all__ = ["router", "WireError", "read_body", "to_judge", "to_jev", "failure_status", "models_list",
           "choice_confidence", "score_confidence", "WATERFALL_MODELS"]

# Names meaning "the whole configured waterfall": what Jev clients send by default, the
# pinned ids they are told to use, and the gateway's own name.
WATERFALL_MODELS = ("jev-latest", "jev-preview", "jev-1.13.0", "jev-1.13", "system1")
RELEASE_DATE = "2026-12-01"  # when this face's wire was fixed; GET /v1/models needs a date
MAX_BODY_BYTES = 1 << 20  # the serve face's 1 MiB, applied again after decompression
MAX_DETAIL_ENTRIES = 20
REQUEST_ID_HEADER = "x-typesafe-request-id"
log = logging.getLogger(LOGGER)
_TEXT_BRANCHES = {"str", "dict[str,any]", "list[any]"}  # pydantic's names for Text's union members

# Gateway error code → HTTP status (docs/jev-wire.md). Chain failures are 5xx so that Jev
# clients retry them (the failed rungs cool, so a retry walks on or gets a 429/503 with
# retry-after); a request the gateway refuses is never retried.
STATUS = {INVALID_REQUEST: 422, CONFIG_ERROR: 500, INTERNAL_ERROR: 500, PROVIDER_ERROR: 502,
          MALFORMED_RESPONSE: 502, PROVIDER_TIMEOUT: 504, DEADLINE_EXCEEDED: 504}


class WireError(Exception):
    """A request the face answers itself: HTTP status, JSON body, extra headers."""

    def __init__(self, status: int, body: dict[str, Any], headers: dict[str, str] | None = None):
        super().__init__(status)
        self.status, self.body, self.headers = status, body, headers or {}


def _detail(status: int, msg: str, kind: str, *loc: str | int) -> WireError:
    """FastAPI's validation-error shape, which every Jev client's extractor reads."""
    return WireError(status, {"detail": [{"loc": ["body", *loc], "msg": msg, "type": kind}]})


# -- wire models: what the OpenAPI documents, and what the tests check responses against --
class JevRequest(JudgeRequest):
    """A Jev request: `model` plus the judge request (state, questions; the gateway's
    optional request_id, min_confidence and deadline_s are accepted as extensions)."""

    model: str = Field(min_length=1, max_length=200, description="jev-latest (the waterfall) or a rung name")


class _Wire(BaseModel):
    model_config = ConfigDict(extra="forbid")


class JevNoulAnswer(_Wire):
    type: Literal["noul"]
    noul: float = Field(ge=0, le=1)


class JevChoiceAnswer(_Wire):
    type: Literal["choice"]
    choice: str
    probabilities: dict[str, float]
    confidence: float = Field(ge=0, le=1)


class JevScoreAnswer(_Wire):
    type: Literal["score"]
    score: float
    legend: dict[str, Union[str, dict[str, Any], list[Any]]]
    probabilities: dict[str, float]
    confidence: float = Field(ge=0, le=1)


class JevUsage(_Wire):
    input_tokens: int | None = Field(description="null when no engine of the winning rung reported it")
    output_tokens: int | None


class JevResponse(_Wire):
    model: str = Field(description="<rung>/<engine model> that answered")
    answers: dict[str, Union[JevNoulAnswer, JevChoiceAnswer, JevScoreAnswer]]
    usage: JevUsage


class JevModel(_Wire):
    name: str
    description: str
    release_date: str


class JevModelList(_Wire):
    models: list[JevModel]


class JevValidationDetail(_Wire):
    loc: list[Union[str, int]]
    msg: str
    type: str


class JevValidationError(_Wire):
    detail: list[JevValidationDetail]


class JevFailureDetail(_Wire):
    message: str
    code: str


class JevFailure(_Wire):
    detail: JevFailureDetail


# -- request ---------------------------------------------------------------------------------
def _zstd_reader() -> Callable[[bytes, int], bytes] | None:
    """A bounded zstd decoder: `zstandard` if installed, else the stdlib's (Python ≥ 3.14)
    or its backport; None when none is importable."""
    try:
        import zstandard
    except ImportError:
        pass
    else:
        def read(data: bytes, limit: int) -> bytes:
            reader = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(data), read_across_frames=True)
            return reader.read(limit)
        return read
    for name in ("compression.zstd", "backports.zstd"):
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue

        def read_stdlib(data: bytes, limit: int, m: Any = module) -> bytes:
            return m.ZstdFile(io.BytesIO(data)).read(limit)
        return read_stdlib
    return None


def _decompress(raw: bytes) -> bytes:
    reader = _zstd_reader()
    if reader is None:
        raise _detail(415, "Content-Encoding zstd: this gateway has no zstd decoder "
                      "(pip install zstandard, or Python 3.14+)", "unsupported_encoding")
    try:
        data = reader(raw, MAX_BODY_BYTES + 1)
    except Exception as exc:  # noqa: BLE001 - each decoder has its own error classes; garbage is the caller's
        raise _detail(400, f"request body is not valid zstd ({type(exc).__name__})", "zstd_invalid") from None
    if len(data) > MAX_BODY_BYTES:  # a small body that expands past the limit (a zstd bomb)
        raise _detail(413, f"request body exceeds {MAX_BODY_BYTES} bytes once decompressed", "too_large")
    return data


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"number {text[:20]} is out of range")
    return value


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def read_body(raw: bytes, content_type: str | None, content_encoding: str | None) -> Any:
    """The JSON value of a request body, or a WireError (4xx) saying what is wrong with it."""
    media = (content_type or "").split(";")[0].strip().lower()
    if media.startswith("multipart/"):
        raise _detail(415, "images are not supported by this gateway (multipart bodies carry Jev image "
                      "assets); send text questions as application/json", "unsupported_media_type")
    if media and media != "application/json" and not media.endswith("+json"):
        raise _detail(415, f"Content-Type must be application/json, got {media[:80]!r}", "unsupported_media_type")
    if len(raw) > MAX_BODY_BYTES:
        raise _detail(413, f"request body exceeds {MAX_BODY_BYTES} bytes", "too_large")
    encodings = [e.strip().lower() for e in (content_encoding or "").split(",") if e.strip()]
    for encoding in reversed(encodings):  # applied in order, so undone last-first
        if encoding == "zstd":
            raw = _decompress(raw)
        elif encoding != "identity":
            raise _detail(415, f"Content-Encoding {encoding[:40]!r} is not supported (zstd or identity)",
                          "unsupported_encoding")
    if not raw.strip():
        raise _detail(400, "request body is empty (expected a JSON object)", "json_invalid")
    try:
        return bounded_json.loads(raw, parse_float=_finite, parse_constant=_no_constant)
    except RecursionError:
        raise _detail(400, "request body is nested too deeply to read", "json_invalid") from None
    except ValueError as exc:  # not JSON, not UTF-8, an integer past Python's digit limit, NaN
        raise _detail(400, f"request body is not valid JSON: {str(exc)[:200]}", "json_invalid") from None


def _validation_details(exc: ValidationError) -> list[dict[str, Any]]:
    """Pydantic's errors in FastAPI's shape; the three failed branches of a text field
    (string, object, array) become one entry."""
    details: list[dict[str, Any]] = []
    merged: set[tuple] = set()
    for err in exc.errors(include_url=False):
        loc = list(err["loc"])
        if loc and loc[-1] in _TEXT_BRANCHES:
            loc = loc[:-1]
            if tuple(loc) in merged:
                continue
            merged.add(tuple(loc))
            msg, kind = "Input should be text: a string, an object or an array", "text_type"
        elif err["type"] == "extra_forbidden":
            msg, kind = "unknown field (not allowed)", err["type"]
        else:
            msg, kind = err["msg"].removeprefix("Value error, "), err["type"]
        details.append({"loc": ["body", *loc], "msg": msg, "type": kind})
    if len(details) > MAX_DETAIL_ENTRIES:
        more = len(details) - MAX_DETAIL_ENTRIES
        details = details[:MAX_DETAIL_ENTRIES] + [
            {"loc": ["body"], "msg": f"and {more} more errors", "type": "too_many_errors"}]
    return details


def _refuse_images(body: dict[str, Any]) -> None:
    if "assets" in body:
        raise _detail(422, "images are not supported by this gateway (assets)", "unsupported", "assets")
    questions = body.get("questions")
    if isinstance(questions, dict):
        for qid, q in questions.items():
            if isinstance(q, dict) and q.get("type") == "box":
                raise _detail(422, "box questions (images) are not supported by this gateway",
                              "unsupported", "questions", qid, "type")


def to_judge(body: Any, rungs: list[str]) -> tuple[JudgeRequest, str | None]:
    """(the gateway's request, the one rung `model` names or None for the waterfall)."""
    if not isinstance(body, dict):
        raise _detail(422, f"expected a JSON object, got {type(body).__name__}", "model_attributes_type")
    _refuse_images(body)
    try:
        jev = JevRequest.model_validate(body)
    except ValidationError as exc:
        raise WireError(422, {"detail": _validation_details(exc)}) from None
    if jev.model in WATERFALL_MODELS:
        provider = None
    elif jev.model in rungs:
        provider = jev.model
    else:
        accepted = ", ".join([*WATERFALL_MODELS, *rungs])
        raise _detail(422, f"unknown model {jev.model[:80]!r}; this gateway accepts {accepted} "
                      f"(GET /v1/models)", "value_error", "model")
    # Already validated field by field: build the gateway's request without a second pass.
    fields = {name: getattr(jev, name) for name in JudgeRequest.model_fields}
    return JudgeRequest.model_construct(_fields_set=jev.model_fields_set - {"model"}, **fields), provider


# -- response --------------------------------------------------------------------------------
def choice_confidence(probabilities: list[float]) -> float:
    """Jev's choice confidence, (n·p_max − 1)/(n − 1): 0 uniform, 1 certain."""
    n = len(probabilities)
    if n < 2:
        return 1.0
    return round(min(1.0, max(0.0, (n * max(probabilities) - 1) / (n - 1))), 6)


def score_confidence(probabilities: list[float]) -> float:
    """Jev's score confidence, 1 − Σ p_i·|i − mode| / D, D the same sum for a uniform
    distribution: mass far from the most likely level costs more."""
    n = len(probabilities)
    if n < 2:
        return 1.0
    mode = max(range(n), key=probabilities.__getitem__)
    spread = sum(p * abs(i - mode) for i, p in enumerate(probabilities))
    uniform = sum(abs(i - mode) for i in range(n)) / n
    return round(min(1.0, max(0.0, 1 - spread / uniform)), 6)


def _answer(answer: dict[str, Any], question: Any) -> dict[str, Any] | None:
    kind = answer["type"]
    if kind not in ("noul", "choice", "score"):
        return None  # a refusal: the Jev wire has no "no answer", and a faked value would lie
    if kind == "noul":
        return {"type": "noul", "noul": float(answer["p_true"])}
    probs = {str(k): float(v) for k, v in answer["probabilities"].items()}
    if kind == "choice":
        return {"type": "choice", "choice": answer["choice"], "probabilities": probs,
                "confidence": choice_confidence(list(probs.values()))}
    ordered = [probs[str(i)] for i in range(len(probs))]
    return {"type": "score", "score": float(answer["score"]),
            "legend": {str(i): text for i, text in enumerate(question.criteria)},
            "probabilities": probs, "confidence": score_confidence(ordered)}


def _header(text: str) -> str:
    """Header values are latin-1 on the wire; ids may be any text."""
    return quote(text, safe="-._~:/@+=,;!$&'()* ")[:200]


def to_jev(result: dict[str, Any], request: JudgeRequest) -> tuple[dict[str, Any], dict[str, str]]:
    """An answered gateway result → (Jev response body, headers)."""
    answers = {}
    for qid, answer in result["answers"].items():
        wire = _answer(answer, request.questions[qid])
        if wire is not None:
            answers[qid] = wire
    provider, model = result["provider"] or "system1", result["model"]
    reported = result.get("usage") or {}
    usage = {key: reported.get(key) if type(reported.get(key)) is int else None  # unknown stays null
             for key in ("input_tokens", "output_tokens")}
    body = {"model": f"{provider}/{model}" if model and model != provider else provider,
            "answers": answers, "usage": usage}
    headers = {REQUEST_ID_HEADER: _header(result["request_id"]), "x-system1-provider": _header(provider),
               "x-system1-abstained": str(sum(1 for a in result["answers"].values()
                                               if a.get("abstained") and a["type"] != "refusal")),
               "x-system1-refused": str(sum(1 for a in result["answers"].values() if a["type"] == "refusal"))}
    return body, headers


def _cooling_headers(gateway: Any, order: list[str]) -> tuple[int, dict[str, str]]:
    """429 when every cooling rung is throttled, else 503; retry-after(-ms) until the
    soonest rung is back."""
    try:
        cooling = list(gateway.cooling(order).values())
    except Exception:  # noqa: BLE001 - the state file may be gone; the answer is still "later"
        cooling = []
    if not cooling:
        return 503, {"retry-after": "1", "retry-after-ms": "1000"}
    wait_s = max(0.001, min(c.until for c in cooling) - time.time())
    status = 429 if all(c.reason.startswith("rate_limit") for c in cooling) else 503
    return status, {"retry-after": str(max(1, math.ceil(wait_s))), "retry-after-ms": str(max(1, round(wait_s * 1000)))}


def failure_status(result: dict[str, Any], gateway: Any) -> tuple[int, dict[str, Any], dict[str, str]]:
    """A failed gateway result → (status, Jev error body, headers)."""
    error = result["error"] or {"code": INTERNAL_ERROR, "message": "no answer and no error"}
    code, message = error["code"], error["message"]
    headers = {REQUEST_ID_HEADER: _header(result["request_id"])}
    if code == INVALID_REQUEST:
        return 422, {"detail": [{"loc": ["body"], "msg": message, "type": code}]}, headers
    status = STATUS.get(code, 500)
    if code == ALL_COOLING:
        status, retry = _cooling_headers(gateway, result["order"])
        headers.update(retry)
    return status, {"detail": {"message": message, "code": code}}, headers


def models_list(gateway: Any) -> dict[str, Any]:
    """The waterfall's names, then one entry per rung of the configured chain."""
    if gateway.config_error:
        waterfall, rungs = f"the configured waterfall (configuration error: {gateway.config_error.message})", []
    else:
        rungs = gateway.config.chain
        waterfall = "the configured waterfall: " + " → ".join(rungs)
    models = [{"name": name, "description": f"System-1 Gateway, {waterfall}", "release_date": RELEASE_DATE}
              for name in WATERFALL_MODELS]
    models += [{"name": rung, "description": f"System-1 Gateway, only the rung {rung!r} "
                f"(kind {gateway.config.kind_of(rung)})", "release_date": RELEASE_DATE} for rung in rungs]
    return {"models": models}


# -- the routes ------------------------------------------------------------------------------
def _inline(schema: dict[str, Any]) -> dict[str, Any]:
    """The schema with its `$defs` substituted in place: the request body schema lives
    inside the OpenAPI document, where `#/$defs/…` would not resolve."""
    defs = schema.get("$defs", {})

    def walk(node: Any) -> Any:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/$defs/"):
                return walk(defs[ref.removeprefix("#/$defs/")])
            return {k: walk(v) for k, v in node.items() if k not in ("$defs", "discriminator")}
        if isinstance(node, list):
            return [walk(v) for v in node]
        return node

    return walk(schema)


def _responses(**models: type[BaseModel]) -> dict[int | str, dict[str, Any]]:
    described = {"ok": (200, "the answers"), "bad": (400, "unreadable body (not JSON, bad zstd)"),
                 "big": (413, "body over 1 MiB (after decompression)"), "media": (415, "not JSON, or images"),
                 "invalid": (422, "validation failed"), "throttled": (429, "every rung cooling (rate limits)"),
                 "failed": (502, "every rung failed"), "cooling": (503, "every rung cooling"),
                 "timeout": (504, "deadline or engine timeout"), "broken": (500, "configuration or gateway error")}
    return {described[k][0]: {"model": m, "description": described[k][1]} for k, m in models.items()}


router = APIRouter(tags=["jev"])


@router.post(
    "/v1/systemone",
    summary="Evaluate a state against typed questions (the Jev wire)",
    responses=_responses(ok=JevResponse, bad=JevValidationError, big=JevValidationError,
                         media=JevValidationError, invalid=JevValidationError, throttled=JevFailure,
                         failed=JevFailure, cooling=JevFailure, timeout=JevFailure, broken=JevFailure),
    openapi_extra={"requestBody": {"required": True, "content": {
        "application/json": {"schema": _inline(JevRequest.model_json_schema())}}}},
)
async def systemone(request: Request) -> JSONResponse:
    gateway = request.app.state.gateway
    try:
        body = read_body(await _read_limited(request), request.headers.get("content-type"),
                         request.headers.get("content-encoding"))
        rungs = [] if gateway.config_error else gateway.config.chain
        judge_request, provider = to_judge(body, rungs)
    except WireError as exc:
        return JSONResponse(exc.body, status_code=exc.status, headers=exc.headers)
    result = await run_in_threadpool(gateway.judge, judge_request, provider=provider)
    try:
        if result["status"] != "answered":
            status, error_body, headers = failure_status(result, gateway)
            return JSONResponse(error_body, status_code=status, headers=headers)
        jev_body, headers = to_jev(result, judge_request)
        return JSONResponse(jev_body, headers=headers)
    except Exception as exc:  # the last net: a translation bug is ours, said as such
        log.exception("Jev wire: translating a result failed")
        return JSONResponse({"detail": {"message": f"internal error in the Jev wire ({type(exc).__name__}); "
                                        f"please report it", "code": INTERNAL_ERROR}}, status_code=500)


@router.get("/v1/models", summary="Model names this gateway accepts", response_model=JevModelList)
async def list_models(request: Request) -> JSONResponse:
    return JSONResponse(models_list(request.app.state.gateway))


async def _read_limited(request: Request) -> bytes:
    """The body, refused as soon as it passes the limit (never read whole into memory)."""
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            raise _detail(413, f"request body exceeds {MAX_BODY_BYTES} bytes", "too_large")
        chunks.append(chunk)
    return b"".join(chunks)
