"""Result models: the JSON Schemas of what the gateway returns (docs/requests.md).

Results are built as plain dicts on the hot path (core/gateway.py); these models only describe them,
for `capabilities` and for the tests, which validate every result against them. Kept apart
from the request models so the request path does not pay for building them.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from .requests import DecideRequest, JudgeRequest

Probability = Annotated[float, Field(ge=0, le=1)]


class CalibrationInfo(BaseModel):
    """The fit that rescaled an answer (docs/confidence.md): `system1 calibrate` writes them."""

    model_config = ConfigDict(extra="forbid")
    source: Literal["user", "shipped"]
    scope: Literal["question", "options"] = Field(description="fitted on this question, or on every "
                                                              "question with this many options")
    temperature: float = Field(gt=0)
    n: int = Field(description="labels the fit was measured on")
    provisional: bool = Field(description="fitted on fewer than 200 labels")
    threshold: Probability | None = Field(description="fitted min_confidence for this question, if any")


class _AnswerBase(BaseModel):
    model_config = ConfigDict(extra="forbid")
    probabilities: dict[str, Probability]
    confidence: Probability = Field(description="Gateway confidence: max probability after calibration")
    engine_confidence: Probability | None = Field(default=None, description="The engine's own number, if any")
    abstained: bool
    abstain_reason: Literal["below_threshold", "engine", "paused", "opaque", "bounds"] | None = Field(
        default=None, description="below_threshold: confidence under the bar; engine: the engine abstained; paused: "
        "`system1 toggle off`; opaque: what runs cannot be known from the text (a shell command built at run time, "
        "decoded or downloaded text fed to a shell); bounds: the evidence is past what is read")
    calibrated: bool
    calibration: CalibrationInfo | None = Field(default=None, description="the fit applied, if any")
    model: str | None = Field(default=None, description="the engine model that answered this question")
    rationale: str | None = None


class RefusalAnswer(BaseModel):
    """The engine refused this one question: no value, no probabilities, never faked."""

    model_config = ConfigDict(extra="forbid")
    type: Literal["refusal"]
    question_type: Literal["noul", "choice", "score"]
    abstained: Literal[True]
    abstain_reason: Literal["refused"]
    calibrated: Literal[False]
    rationale: str | None = None


class DecidingPart(BaseModel):
    """For a question read in parts (the `destructive` built-in of a shell command): the part
    that decided the answer (or that could not be read), and nothing else of the evidence."""

    model_config = ConfigDict(extra="forbid")
    index: int = Field(ge=1)
    of: int = Field(ge=1, description="parts read")
    text: str = Field(description="the part, shortened to 160 characters")
    rule: str | None = Field(description="the policy rule that decided it, or null (the engine did)")
    destructive: bool | None = Field(description="null when the part could not be judged")
    why: str = Field(description="the rule and its reason, the engine's probability, or why it is unsure")


class NoulAnswer(_AnswerBase):
    type: Literal["noul"]
    p_true: Probability
    part: DecidingPart | None = None


class ChoiceAnswer(_AnswerBase):
    type: Literal["choice"]
    choice: str


class ScoreAnswer(_AnswerBase):
    type: Literal["score"]
    score: float = Field(description="Expected level (probability-weighted mean), may be fractional")
    level: int = Field(description="Most probable level")


Answer = Annotated[Union[NoulAnswer, ChoiceAnswer, ScoreAnswer, RefusalAnswer], Field(discriminator="type")]
Outcome = Literal["ok", "timeout", "error", "malformed", "cooling", "skipped"]


class Attempt(BaseModel):
    model_config = ConfigDict(extra="forbid")
    provider: str
    outcome: Outcome
    latency_ms: float
    detail: str | None


class Usage(BaseModel):
    model_config = ConfigDict(extra="forbid")
    input_tokens: int | None
    output_tokens: int | None


ErrorCode = Literal[
    "invalid_request",
    "config_error",
    "provider_timeout",
    "provider_error",
    "malformed_response",
    "deadline_exceeded",
    "all_cooling",
    "internal_error",
]


class ErrorInfo(BaseModel):
    model_config = ConfigDict(extra="forbid")
    code: ErrorCode
    message: str


class JudgeResult(BaseModel):
    model_config = ConfigDict(extra="forbid")
    schema_version: Literal["1"]
    request_id: str
    status: Literal["answered", "error"]
    answers: dict[str, Answer]
    order: list[str] = Field(description="The configured provider chain for this request")
    provider: str | None
    model: str | None
    latency_ms: float
    attempts: list[Attempt]
    usage: Usage
    error: ErrorInfo | None


class DecideResponse(BaseModel):
    model_config = ConfigDict(extra="forbid")
    schema_version: Literal["1"]
    request_id: str
    status: Literal["decided", "abstained", "error"]
    decision: str | None
    confidence: Probability | None
    probabilities: dict[str, Probability] | None
    rationale: str | None
    provider: str | None
    model: str | None
    calibrated: bool
    calibration: CalibrationInfo | None = None
    abstain_reason: Literal["below_threshold", "engine", "paused", "refused"] | None = Field(
        default=None, description="Why the decision is null when status is abstained")
    latency_ms: float
    attempts: list[Attempt]
    error: ErrorInfo | None


ANY_JSON = {"anyOf": [{"type": t} for t in ("string", "number", "boolean", "object", "array", "null")]}


def _explicit(schema: Any) -> Any:
    """Spell out "any JSON value" where pydantic writes `{}` (portable-schema checkers flag a
    schema with no validation keyword as an accident)."""
    if isinstance(schema, dict):
        return {k: (ANY_JSON if v == {} and k in ("items", "additionalProperties") else _explicit(v))
                for k, v in schema.items()}
    if isinstance(schema, list):
        return [_explicit(v) for v in schema]
    return schema


def json_schemas() -> dict[str, dict[str, Any]]:
    """Request and response JSON Schemas, all from the model definitions, portable (no
    vendor keywords such as pydantic's `discriminator`; see schemas.py)."""
    from .schemas import portable

    return {
        "judge_request": portable(_explicit(JudgeRequest.model_json_schema())),
        "judge_result": portable(_explicit(JudgeResult.model_json_schema())),
        "decide_request": portable(_explicit(DecideRequest.model_json_schema())),
        "decide_response": portable(_explicit(DecideResponse.model_json_schema())),
    }



judge_result_adapter = TypeAdapter(JudgeResult)
decide_response_adapter = TypeAdapter(DecideResponse)


class Probe(BaseModel):
    provider: str
    ok: bool
    detail: str
    model: str | None
    latency_ms: float


class HealthResult(BaseModel):
    model_config = ConfigDict(extra="forbid")
    status: Literal["ok", "degraded", "down"]
    reason: str | None
    providers: list[Probe]


class BuiltinEntry(BaseModel):
    id: str
    name: str
    version: int
    type: str
    hash: str = Field(description="builtins.question_hash of the canonical wording")
    about: str
    instructions: str
    criteria: dict[str, str] | list[str] = Field(description="outcome or option descriptions, or score levels")
    current: bool = Field(True, description="false for an earlier version, still answerable by its id")


class CapabilitiesResult(BaseModel):
    name: str
    version: str
    codename: str = Field(description="the release's name (a chapter of *Thinking, Fast and Slow*)")
    schema_versions: dict[str, str]
    provider_chain: list[str] | None
    config_error: str | None
    thresholds: dict[str, float]
    timeouts: dict[str, float]
    providers: list[str]
    builtins: list[BuiltinEntry] = Field(description="built-in questions (name them with `builtin` in a question)")
    schemas: dict[str, dict[str, Any]]


class CoolingEntry(BaseModel):
    rung: str
    reason: str
    until: str
    remaining_s: float
    target: str = Field(description="the endpoint (and model) cooling; rungs naming it share the cooldown")
    set_by: str = Field(description="the rung whose failure set it")


class StateInfo(BaseModel):
    backend: Literal["sqlite", "redis", "memory"]
    ok: bool = Field(description="false while the shared state is unusable and this process holds it in memory")
    detail: str | None
    fallback_since: str | None


class StatusResult(BaseModel):
    order: list[str] | None
    config_error: str | None
    paused: bool
    min_confidence: float
    rungs: dict[str, dict[str, Any]] = Field(description="kind and credential presence per rung (never values)")
    cooldowns: list[CoolingEntry]
    preferred_start: str | None
    actual_start: str | None = Field(description="first rung with credentials present and not cooling")
    state: StateInfo = Field(description="where cooldowns, notices and counters are shared (SQLite file or Redis)")
    today: dict[str, int]
    last_route: dict[str, Any] | None


def tool_output_schemas() -> dict[str, dict[str, Any]]:
    from .schemas import portable

    return {
        "health": portable(_explicit(HealthResult.model_json_schema())),
        "capabilities": portable(_explicit(CapabilitiesResult.model_json_schema())),
        "status": portable(_explicit(StatusResult.model_json_schema())),
    }
