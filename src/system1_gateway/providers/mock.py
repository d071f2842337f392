"""`mock`: a deterministic engine for tests and demos, with failure and latency knobs.

The chosen answer is a hash of (state, question id, question), so the same request always
gets the same answer; `confidence` is the probability it gets. `mode` injects failures:
`abstain` (the engine abstains), `fail` (an operational failure of class `failure`),
`timeout` (sleeps past the attempt's timeout), `malformed` (one class of bad answer, chosen
by `malformed`, for proving the gateway's answer checks).
"""

from __future__ import annotations

import hashlib
import json
import time
from typing import Any, ClassVar, Literal

from pydantic import Field

from ..model.errors import ProviderFailure, ProviderTimeout
from ..model.requests import JudgeRequest
from .base import BaseProvider, Health, Limits, Reply, RungSettings, parse_settings

MALFORMED_KINDS = (
    "not_object", "missing", "wrong_type", "sum", "negative", "not_argmax",
    "unknown_label", "confidence_range", "p_true_range",
)


class MockSettings(RungSettings):
    model: str = "mock-1"
    latency_ms: float = Field(default=0.0, ge=0, le=600_000)
    mode: Literal["answer", "abstain", "fail", "timeout", "malformed"] = "answer"
    failure: Literal["engine", "credentials", "quota", "model", "rate_limit", "overload", "transport", "server", "endpoint"] = "engine"
    malformed: Literal[MALFORMED_KINDS] = "sum"  # type: ignore[valid-type]
    confidence: float = Field(default=0.9, gt=0, le=1)
    answer: str | None = Field(default=None, description="Force this label (or true/false) everywhere")
    max_options: int = Field(default=256, ge=2, le=256)  # to test what callers do with a small engine


class MockProvider(BaseProvider):
    kind: ClassVar[str] = "mock"
    self_timed: ClassVar[bool] = True  # never runs past its timeout: the core calls it inline

    def __init__(self, name: str, settings: dict[str, Any]):
        self.name = name
        self.settings: MockSettings = parse_settings(MockSettings, name, settings)
        self.limits = Limits(max_options=self.settings.max_options)

    def _pick(self, request: JudgeRequest, qid: str, labels: list[str]) -> int:
        s = self.settings
        if s.answer is not None and s.answer in labels:
            return labels.index(s.answer)
        question = request.questions[qid].model_dump(mode="json", exclude={"builtin"})
        key = json.dumps([request.state, qid, question], sort_keys=True, ensure_ascii=False)
        return int.from_bytes(hashlib.sha256(key.encode()).digest()[:4], "big") % len(labels)

    def _probabilities(self, labels: list[str], winner: int) -> dict[str, float]:
        top = self.settings.confidence
        rest = (1.0 - top) / (len(labels) - 1)
        if rest > top:  # keep the winner the argmax even for very low `confidence`
            top = rest = 1.0 / len(labels)
        return {label: (top if i == winner else rest) for i, label in enumerate(labels)}

    def judge(self, request: JudgeRequest, timeout_s: float) -> Reply:
        s = self.settings
        if s.mode == "timeout" or s.latency_ms / 1000 > timeout_s:
            time.sleep(timeout_s)  # an engine that would answer too late: give up at the timeout
            raise ProviderTimeout(f"{self.name}: no answer within {timeout_s:.2f} s")
        if s.latency_ms:
            time.sleep(s.latency_ms / 1000)
        if s.mode == "fail":
            raise ProviderFailure(f"mock failure ({s.failure})", kind=s.failure)
        answers: dict[str, dict[str, Any]] = {}
        for qid, q in request.questions.items():
            labels = ["true", "false"] if q.type == "noul" else q.labels
            probs = self._probabilities(labels, self._pick(request, qid, labels))
            if q.type == "noul":
                answer: dict[str, Any] = {"type": "noul", "p_true": probs["true"]}
            elif q.type == "choice":
                answer = {"type": "choice", "choice": max(probs, key=probs.__getitem__), "probabilities": probs}
            else:
                answer = {"type": "score", "probabilities": probs}
            answer["rationale"] = "mock: " + ", ".join(f"{k}={v:.2f}" for k, v in probs.items())
            if s.mode == "abstain":
                answer["abstained"] = True
            answers[qid] = answer
        if s.mode == "malformed":
            _break(answers, s.malformed)
        return Reply(answers=answers, model=s.model)

    def health(self, timeout_s: float) -> Health:
        if self.settings.mode == "fail":
            return Health(False, f"mock configured to fail ({self.settings.failure})", self.settings.model)
        return Health(True, "mock engine ready", self.settings.model)


def _break(answers: dict[str, dict[str, Any]], how: str) -> None:
    """Corrupt the first answer in one specific way."""
    qid, answer = next(iter(answers.items()))
    probs = answer.get("probabilities")
    if how == "not_object":
        answers[qid] = "yes"  # type: ignore[assignment]
    elif how == "missing":
        del answers[qid]
    elif how == "wrong_type":
        answer["type"] = "score" if answer["type"] != "score" else "choice"
    elif how == "p_true_range" or (probs is None and how != "confidence_range"):
        answer["p_true"] = 1.7
    # below, probs is never None (the branch above took that case): said again for the type checker
    elif how == "sum" and probs is not None:
        for k in probs:
            probs[k] *= 1.5
    elif how == "negative" and probs is not None:
        k = next(iter(probs))
        probs[k] = -0.2
    elif how == "not_argmax" and probs is not None:
        answer["choice"] = min(probs, key=probs.__getitem__)
    elif how == "unknown_label":
        answer["choice"] = "no-such-label"
    elif how == "confidence_range":
        answer["engine_confidence"] = 1.5
