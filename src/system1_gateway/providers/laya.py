"""`laya`: Laya through `laya-serve` 0.2.1 (Jev-compatible, `/healthz`)
or upstream `laya[serve]` (`/health`, the answering checkpoint in `routing.model`).

What differs from the generic `systemone` wire (docs/engines.md):
  * the checkpoint is pinned (`model` = english | multilingual | typed-decisions). Upstream
    silently auto-routes names it does not know, so an answer whose `routing.model` is not
    the pinned checkpoint is `malformed_response`; laya-serve accepts only Jev-style names
    (`laya`), reports a static id and cannot be verified (recorded as such);
  * yes/no questions are sent as a two-option choice (`yes`/`no`), never as `noul`;
  * more than 20 options: the rung is skipped (`max_options = 20`) so a fallback answers;
  * on the English-only checkpoint, evidence whose letters are more than 30 % non-Latin is
    answered but marked abstained;
  * the probability source is `probabilities` / `answer_confidence` (calibrated max p), never
    Laya's entropy `confidence`;
  * the bearer key comes only from `SYSTEM1_LAYA_API_KEY`.
"""

from __future__ import annotations

import json
import time
import unicodedata
from typing import Any, ClassVar, Literal

import httpx
from pydantic import Field

from ..model.errors import MalformedAnswer, ProviderFailure
from ..model.render import render
from ..model.requests import JudgeRequest
from .base import Credentials, Health, Limits, Reply, parse_settings
from .deadline_http import within
from .systemone import SystemOneProvider, SystemOneSettings

KEY_ENV = "SYSTEM1_LAYA_API_KEY"
MAX_OPTIONS = 20
NON_LATIN_LIMIT = 0.30
ENGLISH_ONLY = {"english"}


class LayaSettings(SystemOneSettings):
    endpoint: str = "http://127.0.0.1:8000"
    model: Literal["english", "multilingual", "typed-decisions"] = "typed-decisions"
    max_options: int = Field(default=MAX_OPTIONS, ge=2, le=MAX_OPTIONS)


def non_latin_share(text: str) -> float:
    letters = [c for c in text if c.isalpha()]
    if not letters:
        return 0.0
    latin = sum(1 for c in letters if "LATIN" in unicodedata.name(c, ""))
    return 1 - latin / len(letters)


class LayaProvider(SystemOneProvider):
    kind: ClassVar[str] = "laya"
    key_env: ClassVar[str | None] = KEY_ENV

    def __init__(self, name: str, settings: dict[str, Any]):
        super().__init__(name, settings)
        self.limits = Limits(max_options=self.settings.max_options)  # the key is optional

    def _parse(self, name: str, settings: dict[str, Any]) -> Any:
        return parse_settings(LayaSettings, name, settings)

    # -- the server flavour, found once from its health route --------------------------------
    _flavour: str | None = None

    def flavour(self, timeout_s: float) -> str:
        if self._flavour is None:
            for path, flavour in (("/healthz", "laya-serve"), ("/health", "laya[serve]")):
                try:
                    resp = self._client.get(self.root + path, timeout=httpx.Timeout(timeout_s))
                except httpx.HTTPError as exc:
                    raise ProviderFailure(f"{self.name}: transport failure ({type(exc).__name__})", kind="transport") from None
                if resp.status_code == 200:
                    self._flavour = flavour
                    break
            else:
                raise ProviderFailure(f"{self.name}: neither /healthz nor /health answered 200", kind="transport")
        return self._flavour

    def credentials(self) -> Credentials:
        return Credentials(False, True, KEY_ENV)  # a key is optional: local Laya servers usually have none

    def _headers(self) -> dict[str, str]:
        headers = {"content-type": "application/json", "accept": "application/json"}
        key = self._key()
        if key:
            headers["authorization"] = f"Bearer {key}"
        return headers

    def _body(self, request: JudgeRequest) -> bytes:
        questions = {}
        for qid, q in request.questions.items():
            if q.type == "noul":  # yes/no as a two-option choice, never noul
                crit = q.criteria or {}
                wire: dict[str, Any] = {"type": "choice", "criteria": {"yes": crit.get("true"), "no": crit.get("false")}}
            elif q.type == "choice":
                wire = {"type": "choice", "criteria": dict(q.label_descriptions())}  # laya-serve rejects lists
            else:
                wire = {"type": "score", "criteria": list(q.criteria)}
            if q.instructions is not None:
                wire["instructions"] = q.instructions
            questions[qid] = wire
        model = self.settings.model if self._flavour == "laya[serve]" else "laya"
        return json.dumps({"model": model, "state": request.state, "questions": questions}).encode()

    def judge(self, request: JudgeRequest, timeout_s: float) -> Reply:
        started = time.monotonic()
        with within(started + timeout_s):  # the probe shares the attempt's deadline
            self.flavour(min(timeout_s, 2.0))
        return super().judge(request, timeout_s - (time.monotonic() - started))

    def _reply(self, request: JudgeRequest, body: dict[str, Any]) -> Reply:
        pinned = self.settings.model
        if self._flavour == "laya[serve]":
            routing = body.get("routing")
            routed = routing.get("model") if isinstance(routing, dict) else None
            if routed is None:
                raise MalformedAnswer(f"{self.name}: no routing.model in the answer (LAYA_JEV_STRICT on?); "
                                      f"cannot verify the pinned checkpoint {pinned!r}")
            if routed != pinned:
                raise MalformedAnswer(f"{self.name}: answered by checkpoint {routed!r}, pinned {pinned!r}")
            model = f"laya/{routed}"
        else:
            reported = body.get("model") if isinstance(body.get("model"), str) else "?"
            model = f"laya-serve/{reported} (checkpoint unverified)"
        answers_in = body.get("answers")
        if not isinstance(answers_in, dict):
            raise MalformedAnswer(f"{self.name}: 'answers' missing or not an object")
        abstain = pinned in ENGLISH_ONLY and non_latin_share(render(request.state)) > NON_LATIN_LIMIT
        answers = {}
        for qid, q in request.questions.items():
            if qid in answers_in:
                answers[qid] = self._answer(q, answers_in[qid], abstain)
        usage = u if isinstance(u := body.get("usage"), dict) else {}
        # laya's output_tokens is always 0 by design: unknown, not zero.
        inp = usage.get("input_tokens")
        return Reply(answers=answers, model=model, usage={
            "input_tokens": inp if isinstance(inp, int) and not isinstance(inp, bool) and inp > 0 else None,
            "output_tokens": None})

    def _answer(self, question: Any, raw: Any, abstain: bool) -> Any:
        if not isinstance(raw, dict):
            return raw
        probs = raw.get("probabilities")
        probs = {str(k): v for k, v in probs.items()} if isinstance(probs, dict) else probs
        out: dict[str, Any] = {"type": question.type}
        if question.type == "noul":
            p_yes = probs.get("yes") if isinstance(probs, dict) else None
            out["p_true"] = p_yes
            shown = probs
        else:
            out["probabilities"] = probs
            if question.type == "choice":
                out["choice"] = raw.get("choice")
            shown = probs
        if isinstance(raw.get("answer_confidence"), (int, float)):
            out["engine_confidence"] = raw["answer_confidence"]  # never the entropy `confidence`
        if isinstance(shown, dict):
            labels = question.labels if question.type == "choice" else (
                ["yes", "no"] if question.type == "noul" else question.labels)
            parts = [f"{label}={shown[label]:.2f}" for label in labels
                     if isinstance(shown.get(label), float) or (isinstance(shown.get(label), int) and abs(shown[label]) <= 1)]
            out["rationale"] = f"laya {self.settings.model}: " + ", ".join(parts)
        if abstain:
            out["abstained"] = True
            out["rationale"] = out.get("rationale", "") + " (abstained: mostly non-Latin text on the English checkpoint)"
        return out

    def health(self, timeout_s: float) -> Health:
        try:
            flavour = self.flavour(timeout_s)
        except ProviderFailure as exc:
            return Health(False, exc.message, self.settings.model)
        if flavour == "laya-serve":
            return Health(True, "laya-serve /healthz ok (checkpoint routing cannot be verified on this server)",
                          self.settings.model)
        try:
            resp = self._client.get(self.root + "/health", headers=self._headers(), timeout=httpx.Timeout(timeout_s))
            body = resp.json() if resp.status_code == 200 else None
        except httpx.HTTPError as exc:
            return Health(False, f"unreachable ({type(exc).__name__})", self.settings.model)
        except (ValueError, RecursionError):
            return Health(False, "/health answered 200 with a body that is not JSON", self.settings.model)
        loaded = body.get("loaded") if isinstance(body, dict) else None
        if isinstance(loaded, list) and self.settings.model not in loaded:
            return Health(True, f"warning: pinned checkpoint {self.settings.model!r} is not preloaded "
                                f"(loaded: {', '.join(map(str, loaded)) or 'none'}); the first call will load it",
                          self.settings.model)
        return Health(True, "laya[serve] /health ok", self.settings.model)

