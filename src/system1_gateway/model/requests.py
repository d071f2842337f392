"""The canonical model (docs/requests.md): one definition for validation and for the JSON Schemas.

Requests are pydantic models with `extra="forbid"`; their JSON Schemas are what
`system1 capabilities` (and later the MCP tool) serves. Results are built as plain dicts on
the hot path, and their schemas come from the result models at the bottom of this file; the
test suite validates every result the gateway produces against them.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Annotated, Any, Final, Literal, Union

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

SCHEMA_VERSION: Final = "1"
NOUL_ALIASES = ("noul", "bool", "boolean", "yesno", "predicate")
MAX_CHOICE_LABELS = 256
MAX_SCORE_LEVELS = 10
MAX_QUESTIONS = 1000
MAX_DECIDE_QUESTION = 8000
MAX_DECIDE_OPTIONS = 50

MAX_DEPTH = 48  # nesting levels of JSON in a request (engines, renderers and logs recurse)

# Text that may be a string or structured JSON (rendered deterministically, see render.py).
Text = Union[str, dict[str, Any], list[Any]]
Identifier = Annotated[str, Field(min_length=1, max_length=200)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _problem(value: Any, limit: int) -> str | None:
    """What makes `value` unusable as request JSON — nesting deeper than `limit`, or a lone
    surrogate in a string (JSON "\\ud800" decodes to one; no engine can encode it) — or
    None. Iterative: no recursion on hostile depth."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError as exc:
                return f"text contains a lone surrogate (U+{ord(item[exc.start]):04X})"
            continue
        children: list[Any] | tuple[Any, ...]
        if isinstance(item, dict):
            children = [*item.keys(), *item.values()]
        elif isinstance(item, (list, tuple)):
            children = item
        else:
            continue
        if depth > limit:
            return f"nested deeper than {limit} levels"
        stack.extend((child, depth + 1) for child in children)
    return None


def _sane(payload: Any) -> Any:
    """Refuse over-deep JSON and lone surrogates, naming the top-level field, before anything
    (validation included) walks the request recursively or an engine tries to encode it."""
    if isinstance(payload, dict):
        for key, value in payload.items():
            problem = _problem(key, MAX_DEPTH) or _problem(value, MAX_DEPTH)
            if problem:
                raise ValueError(f"{key if isinstance(key, str) and _problem(key, 1) is None else 'field name'}: {problem}")
    return payload


BUILTIN_FIELD = Field(default=None, max_length=200, description=(
    "A built-in question's id (e.g. system1/destructive@1) or short name: its canonical instructions "
    "and criteria are filled in (when given, they must be identical) and the embedded engine answers "
    "it with its learned head. `system1 capabilities` lists the built-ins."))


class _QuestionBase(_Strict):
    builtin: str | None = BUILTIN_FIELD
    if TYPE_CHECKING:  # every question has these fields, each of its own type (declared here they would be fields)
        type: str
        instructions: Text | None
        criteria: Any

    def wording_hash(self) -> str:
        """The identity of this question's wording (builtins.question_hash)."""
        from . import builtins

        return builtins.question_hash(self.type, _plain(self.instructions), _plain(self.criteria))


def _plain(value: Any) -> Any:
    return value.model_dump() if isinstance(value, BaseModel) else value


class NoulQuestion(_QuestionBase):
    """Yes/no question; answer is p_true."""

    if TYPE_CHECKING:  # a validated question's type: its aliases are accepted as input only (_canonical_type)
        type: Literal["noul"]
    else:
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


class ChoiceQuestion(_QuestionBase):
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


class ScoreQuestion(_QuestionBase):
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
    # Below 10 ms no engine can answer: such a deadline is a mistake, refused up front.
    deadline_s: float | None = Field(default=None, ge=0.01, le=600, description="overrides the configured deadline_s")

    _unit = field_validator("min_confidence")(_finite_unit)
    _raw = model_validator(mode="before")(_sane)
    _builtins = model_validator(mode="before")(lambda payload: _expand_builtins(payload))


def _expand_builtins(payload: Any) -> Any:
    """Questions that name a built-in get its canonical wording (a copy: the caller's payload
    is not changed). Wording sent along must be the canonical one, so that a question never
    says one thing while its built-in head answers another."""
    from . import builtins

    questions = payload.get("questions") if isinstance(payload, dict) else None
    if not isinstance(questions, dict) or not any(isinstance(q, dict) and "builtin" in q for q in questions.values()):
        return payload
    expanded = {}
    for qid, question in questions.items():
        if isinstance(question, dict) and question.get("builtin") is not None:
            question = _expand_one(f"questions.{qid}", question, builtins)
        expanded[qid] = question
    return {**payload, "questions": expanded}


def _expand_one(where: str, question: dict[str, Any], builtins: Any) -> dict[str, Any]:
    ref = question["builtin"]
    found = builtins.get(ref) if isinstance(ref, str) else None
    if found is None:
        raise ValueError(f"{where}.builtin: unknown built-in {str(ref)[:80]!r}; known: {', '.join(builtins.known())}")
    qtype = question.get("type", found.type)
    if (qtype in NOUL_ALIASES and found.type != "noul") or (qtype not in NOUL_ALIASES and qtype != found.type):
        raise ValueError(f"{where}.type: {found.id} is a {found.type} question, got {str(qtype)[:40]!r}")
    canonical = found.question()
    for field in ("instructions", "criteria"):
        if field in question and question[field] != canonical[field]:
            raise ValueError(f"{where}.{field}: differs from the canonical text of {found.id} "
                             "(omit it, or send it verbatim)")
    return {**question, **canonical, "builtin": found.id}


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
    builtin: str | None = Field(default=None, max_length=200, description=(
        "Ask a built-in yes/no question (id or short name, e.g. destructive) about `question`, which is "
        "then the text judged (a command, a prompt); the decision is yes or no."))

    _unit = field_validator("min_confidence")(_finite_unit)
    _raw = model_validator(mode="before")(_sane)

    @model_validator(mode="after")
    def _builtin_form(self) -> "DecideRequest":
        if self.builtin is None:
            return self
        from . import builtins

        found = builtins.get(self.builtin)
        if found is None:
            raise ValueError(f"builtin: unknown built-in {self.builtin[:80]!r}; known: {', '.join(builtins.known())}")
        if found.type != "noul":
            raise ValueError(f"builtin: {found.id} is a {found.type} question; ask it with judge")
        if self.options is not None:
            raise ValueError("options: not allowed with builtin (a built-in has its own answers)")
        if self.context is not None:
            raise ValueError("context: not allowed with builtin (the question text is what is judged)")
        return self

    @field_validator("options")
    @classmethod
    def _unique(cls, value: list[str] | None) -> list[str] | None:
        if value is not None and len(set(value)) != len(value):
            raise ValueError("options must be unique")
        return value

    def to_judge(self, request_id: str) -> JudgeRequest:
        """Decide is one choice question; yes/no is a two-option choice, never a raw noul.
        A built-in is its own (noul) question about `question`, the text judged; the decide
        response reads its p_true as yes/no."""
        if self.builtin is not None:
            # the built-in's wording is filled in by validation (_expand_builtins)
            return JudgeRequest.model_validate({"request_id": request_id, "state": self.question,
                                                "questions": {DECIDE_QID: {"builtin": self.builtin}},
                                                "min_confidence": self.min_confidence})
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


def answer_labels(question: Any) -> list[str]:
    """The keys of a question's answer distribution, in order: true/false, labels or levels."""
    return ["true", "false"] if question.type == "noul" else list(question.labels)


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


