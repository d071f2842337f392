"""The canonical model (SPEC §2): one definition for validation and for the JSON Schemas.

Requests are pydantic models with `extra="forbid"`; their JSON Schemas are what
`system1 capabilities` (and later the MCP tool) serves. Results are built as plain dicts on
the hot path, and their schemas come from the result models at the bottom of this file; the
test suite validates every result the gateway produces against them.
"""

from __future__ import annotations

import math
from typing import Annotated, Any, Literal, Union

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    TypeAdapter,
    ValidationError,
    field_validator,
    model_validator,
)

SCHEMA_VERSION = "1"
NOUL_ALIASES = ("noul", "bool", "boolean", "yesno", "predicate")
MAX_CHOICE_LABELS = 256
MAX_SCORE_LEVELS = 10
MAX_QUESTIONS = 1000
MAX_DECIDE_QUESTION = 8000
MAX_DECIDE_OPTIONS = 50

# Text that may be a string or structured JSON (rendered deterministically, see render.py).
Text = Union[str, dict[str, Any], list[Any]]
Identifier = Annotated[str, Field(min_length=1, max_length=200)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class NoulQuestion(_Strict):
    """Yes/no question; answer is p_true."""

    type: Literal["noul", "bool", "boolean", "yesno", "predicate"]
    instructions: Text | None = None
    criteria: dict[Literal["true", "false"], Text | None] | None = Field(
        default=None, description="Optional descriptions of the true and false outcomes."
    )

    @field_validator("type")
    @classmethod
    def _canonical_type(cls, value: str) -> str:
        return "noul"

    @model_validator(mode="after")
    def _needs_text(self) -> "NoulQuestion":
        described = any(v not in (None, "") for v in (self.criteria or {}).values())
        if self.instructions in (None, "") and not described:
            raise ValueError("a noul question needs instructions or a described outcome")
        return self


class ChoiceQuestion(_Strict):
    """Pick one label; criteria are label→description (null: the label describes itself)."""

    type: Literal["choice"]
    instructions: Text | None = None
    criteria: dict[str, Text | None] | list[str] = Field(
        description=f"2..{MAX_CHOICE_LABELS} unique labels, as an object of label→description or a list"
    )

    @field_validator("criteria")
    @classmethod
    def _labels(cls, value: dict[str, Any] | list[str]) -> dict[str, Any] | list[str]:
        labels = list(value)
        if not 2 <= len(labels) <= MAX_CHOICE_LABELS:
            raise ValueError(f"needs 2 to {MAX_CHOICE_LABELS} labels, got {len(labels)}")
        if any(not label.strip() for label in labels):
            raise ValueError("labels must be non-empty strings")
        if len(set(labels)) != len(labels):
            dupes = sorted({label for label in labels if labels.count(label) > 1})
            raise ValueError(f"labels must be unique; repeated: {', '.join(dupes)}")
        return value

    @property
    def labels(self) -> list[str]:
        return list(self.criteria)

    def label_descriptions(self) -> list[tuple[str, Text | None]]:
        if isinstance(self.criteria, dict):
            return list(self.criteria.items())
        return [(label, None) for label in self.criteria]


class ScoreQuestion(_Strict):
    """Ordered levels, lowest first; answer is the expected level and its distribution."""

    type: Literal["score"]
    instructions: Text | None = None
    criteria: list[Text] = Field(
        min_length=2, max_length=MAX_SCORE_LEVELS, description="Ordered level descriptions, lowest first"
    )

    @property
    def labels(self) -> list[str]:
        return [str(i) for i in range(len(self.criteria))]


Question = Annotated[Union[NoulQuestion, ChoiceQuestion, ScoreQuestion], Field(discriminator="type")]


def _finite_unit(value: float | None) -> float | None:
    if value is not None and not (0.0 <= value <= 1.0 and math.isfinite(value)):
        raise ValueError("must be a number from 0 to 1")
    return value


class JudgeRequest(_Strict):
    """State (the evidence) plus typed questions keyed by caller-chosen ids."""

    schema_version: Literal["1"] = SCHEMA_VERSION
    request_id: Identifier | None = None
    state: Text = Field(description="The evidence: text, an object, or a list of records")
    questions: dict[Identifier, Question] = Field(min_length=1, max_length=MAX_QUESTIONS)
    min_confidence: float | None = Field(default=None, ge=0, le=1)

    _unit = field_validator("min_confidence")(_finite_unit)


class DecideRequest(_Strict):
    """One question with 2..50 options (a yes/no choice when options are absent)."""

    schema_version: Literal["1"] = SCHEMA_VERSION
    request_id: Identifier | None = None
    question: str = Field(min_length=1, max_length=MAX_DECIDE_QUESTION)
    options: list[Annotated[str, Field(min_length=1)]] | None = Field(
        default=None, min_length=2, max_length=MAX_DECIDE_OPTIONS
    )
    context: dict[str, Any] | None = None
    min_confidence: float | None = Field(default=None, ge=0, le=1)

    _unit = field_validator("min_confidence")(_finite_unit)

    @field_validator("options")
    @classmethod
    def _unique(cls, value: list[str] | None) -> list[str] | None:
        if value is not None and len(set(value)) != len(value):
            raise ValueError("options must be unique")
        return value

    def to_judge(self, request_id: str) -> JudgeRequest:
        """Decide is one choice question; yes/no is a two-option choice, never a raw noul."""
        question = ChoiceQuestion(
            type="choice", instructions=self.question, criteria=self.options or ["yes", "no"]
        )
        return JudgeRequest(
            request_id=request_id,
            state=self.context if self.context is not None else "",
            questions={DECIDE_QID: question},
            min_confidence=self.min_confidence,
        )


DECIDE_QID = "decision"


# --- results (schemas only; built as dicts by the core) -------------------------------------

Probability = Annotated[float, Field(ge=0, le=1)]


class _AnswerBase(BaseModel):
    model_config = ConfigDict(extra="forbid")
    probabilities: dict[str, Probability]
    confidence: Probability = Field(description="Gateway confidence: max probability after calibration")
    engine_confidence: Probability | None = Field(default=None, description="The engine's own number, if any")
    abstained: bool
    abstain_reason: Literal["below_threshold", "engine"] | None = None
    calibrated: bool
    rationale: str | None = None


class NoulAnswer(_AnswerBase):
    type: Literal["noul"]
    p_true: Probability


class ChoiceAnswer(_AnswerBase):
    type: Literal["choice"]
    choice: str


class ScoreAnswer(_AnswerBase):
    type: Literal["score"]
    score: float = Field(description="Expected level (probability-weighted mean), may be fractional")
    level: int = Field(description="Most probable level")


Answer = Annotated[Union[NoulAnswer, ChoiceAnswer, ScoreAnswer], Field(discriminator="type")]
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
    latency_ms: float
    attempts: list[Attempt]
    error: ErrorInfo | None


def json_schemas() -> dict[str, dict[str, Any]]:
    """Request and response JSON Schemas, all from the definitions above."""
    return {
        "judge_request": JudgeRequest.model_json_schema(),
        "judge_result": JudgeResult.model_json_schema(),
        "decide_request": DecideRequest.model_json_schema(),
        "decide_response": DecideResponse.model_json_schema(),
    }


_TAGS = {"noul", "bool", "boolean", "yesno", "predicate", "choice", "score"}


def describe_validation_error(exc: ValidationError, limit: int = 5) -> str:
    """`field.path: what was expected` for each problem, pydantic's internals stripped."""
    parts = []
    for err in exc.errors(include_url=False)[:limit]:
        loc = [str(p) for p in err["loc"] if not (isinstance(p, str) and ("[" in p or p in _TAGS))]
        # A question id may itself be "choice" etc.: keep the element right after "questions".
        raw = [str(p) for p in err["loc"]]
        if len(raw) > 1 and raw[0] == "questions" and (not loc[1:] or loc[1] != raw[1]):
            loc.insert(1, raw[1])
        where = ".".join(loc) or "request"
        msg = err["msg"]
        if err["type"] == "extra_forbidden":
            msg = "unknown field (not allowed)"
        elif err["type"] == "missing":
            msg = "required field is missing"
        elif msg.startswith("Value error, "):
            msg = msg[len("Value error, ") :]
        parts.append(f"{where}: {msg}")
    more = len(exc.errors()) - limit
    if more > 0:
        parts.append(f"and {more} more")
    return "; ".join(parts)


def parse_judge(payload: Any) -> JudgeRequest:
    return JudgeRequest.model_validate(payload)


def parse_decide(payload: Any) -> DecideRequest:
    return DecideRequest.model_validate(payload)


judge_result_adapter = TypeAdapter(JudgeResult)
decide_response_adapter = TypeAdapter(DecideResponse)
