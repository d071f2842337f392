"""The gateway's check of provider answers, and their canonical form (docs/requests.md).

Adapters translate wire dialects; this module decides whether what they produced is an
answer at all. Anything it rejects becomes `malformed_response` for that rung. It also
computes the canonical confidence (max probability) and applies the threshold.
"""

from __future__ import annotations

import math
from typing import Any, Callable

from ..model.errors import MalformedAnswer, encodable
from ..model.requests import JudgeRequest
from .calibration import Fit, scale

# (question wording hash, option count, the answer's model) -> the fit in force, or None
FitLookup = Callable[[str, int, str], "Fit | None"]

SUM_TOLERANCE = 0.01
MAX_RATIONALE = 2000  # an engine's free text is passed on, not stored unbounded


def _number(value: Any, where: str) -> float:
    if not isinstance(value, bool) and isinstance(value, (int, float)):
        try:
            number = float(value)  # an int beyond float range overflows here
        except OverflowError:
            number = math.inf
        if math.isfinite(number):
            return number
    shown = repr(value) if not isinstance(value, int) or abs(value) < 10**30 else "an integer of that size"
    raise MalformedAnswer(f"{where}: expected a finite number, got {shown[:80]}")


def _distribution(raw: Any, labels: list[str], where: str) -> dict[str, float]:
    if not isinstance(raw, dict):
        raise MalformedAnswer(f"{where}.probabilities: missing or not an object")
    keys = [str(k) for k in raw]
    if sorted(keys) != sorted(labels):
        missing = [label for label in labels if label not in keys]
        extra = [k for k in keys if k not in labels]
        raise MalformedAnswer(
            f"{where}.probabilities: keys must be exactly the labels"
            + (f"; missing {missing}" if missing else "")
            + (f"; unknown {extra}" if extra else "")
        )
    probs = {str(k): _number(v, f"{where}.probabilities.{k}") for k, v in raw.items()}
    if any(p < 0 for p in probs.values()):
        raise MalformedAnswer(f"{where}.probabilities: negative probability")
    total = sum(probs.values())
    if abs(total - 1.0) > SUM_TOLERANCE:
        raise MalformedAnswer(f"{where}.probabilities: sum to {total:.4f}, expected 1 ± {SUM_TOLERANCE}")
    return {label: probs[label] / total for label in labels}  # caller's label order


def _canonical(question: Any, raw: Any, where: str) -> dict[str, Any]:
    if not isinstance(raw, dict):
        raise MalformedAnswer(f"{where}: answer is not an object")
    if raw.get("type") != question.type:
        raise MalformedAnswer(f"{where}: answer type {raw.get('type')!r}, question type {question.type!r}")
    out: dict[str, Any] = {"type": question.type}
    if question.type == "noul":
        p_true = _number(raw.get("p_true"), f"{where}.p_true")
        if not 0.0 <= p_true <= 1.0:
            raise MalformedAnswer(f"{where}.p_true: {p_true} is outside [0, 1]")
        out["p_true"] = p_true
        probs = {"true": p_true, "false": 1.0 - p_true}
    elif question.type == "choice":
        labels = question.labels
        probs = _distribution(raw.get("probabilities"), labels, where)
        choice = raw.get("choice")
        if not isinstance(choice, str) or choice not in labels:
            raise MalformedAnswer(f"{where}.choice: {choice!r} is not one of the labels")
        if probs[choice] < max(probs.values()) - 1e-9:
            raise MalformedAnswer(f"{where}.choice: {choice!r} is not the most probable label")
        out["choice"] = choice
    else:
        probs = _distribution(raw.get("probabilities"), question.labels, where)
        out["score"] = sum(int(k) * p for k, p in probs.items())
        out["level"] = int(max(probs, key=probs.__getitem__))
    out["probabilities"] = probs
    if raw.get("engine_confidence") is not None:
        conf = _number(raw["engine_confidence"], f"{where}.engine_confidence")
        if not 0.0 <= conf <= 1.0:
            raise MalformedAnswer(f"{where}.engine_confidence: {conf} is outside [0, 1]")
        out["engine_confidence"] = conf
    out["engine_abstained"] = bool(raw.get("abstained", False))
    out["engine_calibrated"] = raw.get("calibrated") is True  # e.g. a learned head's fitted temperature
    if isinstance(raw.get("model"), str) and raw["model"]:  # per question (a head) when the engine says
        out["model"] = encodable(raw["model"][:200])
    if isinstance(raw.get("rationale"), str):
        out["rationale"] = encodable(raw["rationale"][:MAX_RATIONALE])
    return out


def _rounded(probs: dict[str, float]) -> dict[str, float]:
    return {k: round(v, 6) for k, v in probs.items()}


def _apply(answer: dict[str, Any], fit: Fit) -> None:
    """Rescale an answer's distribution by the fit's temperature (argmax unchanged)."""
    probs = scale(answer["probabilities"], fit.temperature)
    answer["probabilities"] = probs
    if "p_true" in answer:
        answer["p_true"] = probs["true"]
    if "score" in answer:
        answer["score"] = sum(int(k) * p for k, p in probs.items())


def finalize(request: JudgeRequest, raw_answers: Any, threshold: float | None, default_threshold: float = 0.6,
             model: str = "", fits: FitLookup | None = None) -> dict[str, dict[str, Any]]:
    """Check every answer, calibrate it, then add confidence and abstention; raises
    MalformedAnswer. `threshold`: the request's own min_confidence (None: the question's
    fitted threshold if any, else `default_threshold`). `model`: the reply's model, for
    answers that do not name their own."""
    if not isinstance(raw_answers, dict):
        raise MalformedAnswer("answers: not an object keyed by question id")
    result = {}
    for qid, question in request.questions.items():
        if qid not in raw_answers:
            raise MalformedAnswer(f"answers.{qid}: missing")
        raw = raw_answers[qid]
        if isinstance(raw, dict) and raw.get("type") == "refusal":
            # A per-question refusal is a typed no-answer entry: never coerced into a value,
            # never a reason to advance the waterfall.
            result[qid] = {"type": "refusal", "question_type": question.type, "abstained": True,
                           "abstain_reason": "refused", "calibrated": False,
                           "rationale": encodable(raw["rationale"][:MAX_RATIONALE])
                           if isinstance(raw.get("rationale"), str) else None}
            continue
        answer = _canonical(question, raw, f"answers.{qid}")
        answer_model = answer.pop("model", None) or model
        fit = fits(question.wording_hash(), len(answer["probabilities"]), answer_model) if fits else None
        if fit is not None:
            _apply(answer, fit)  # calibration comes before the threshold
        bar = threshold if threshold is not None else (
            fit.threshold if fit is not None and fit.threshold is not None else default_threshold)
        confidence = max(answer["probabilities"].values())
        engine_abstained = answer.pop("engine_abstained")
        calibrated = answer.pop("engine_calibrated") or fit is not None
        abstained = engine_abstained or confidence < bar
        answer["probabilities"] = _rounded(answer["probabilities"])
        if "p_true" in answer:
            answer["p_true"] = round(answer["p_true"], 6)
        if "score" in answer:
            answer["score"] = round(answer["score"], 4)
        answer.update(
            confidence=round(confidence, 6),
            abstained=abstained,
            abstain_reason=("engine" if engine_abstained else "below_threshold") if abstained else None,
            calibrated=calibrated,
            calibration=fit.info() if fit is not None else None,
            model=answer_model or None,
        )
        result[qid] = answer
    return result
