"""`openai`: the OpenAI Decisions API (`gpt-6-luna`, `POST /v1/decisions`) through the official
`openai` SDK (`client.decisions.create`, `max_retries=0`).

* The credential is `SYSTEM1_OPENAI_API_KEY` only; a generic `OPENAI_API_KEY` is ignored (a
  key meant for something else must never start paid decisions), and `status` says so.
* Questions go in sequential batches of at most 400, answers are mapped back by position;
  `noul` ↔ `predicate` (true/false descriptions appended to the instructions); choice values
  and score levels are rebuilt from the request.
* A per-question `refusal` stays a typed no-answer entry (answer_check.py), never a fake value.
* Adding this rung to the order needs an interactive confirmation of the billing
  precautions (config/edit.py).
* The SDK is given one httpx client whose sockets are bounded by the attempt's deadline
  (deadline_http): httpx times each read on its own, so an endpoint dripping a byte at a time
  held a worker thread for as long as it liked.
"""

from __future__ import annotations

import json
import os
from typing import Any, ClassVar

from pydantic import Field

from ..model.errors import MalformedAnswer, ProviderFailure, ProviderTimeout
from ..model.render import render
from ..model.requests import JudgeRequest
from .base import (
    MAX_RESPONSE_BYTES,
    BaseProvider,
    Credentials,
    Health,
    Limits,
    Reply,
    RungSettings,
    Target,
    endpoint_id,
    parse_settings,
)
from .deadline_http import clamp, cut_for_size, within
from .failures import classify

KEY_ENV = "SYSTEM1_OPENAI_API_KEY"
BATCH = 400


class OpenAISettings(RungSettings):
    endpoint: str = Field(default="https://api.openai.com/v1", description="the SDK's base URL")
    model: str = "gpt-6-luna"
    max_options: int = Field(default=255, ge=2, le=255)
    max_response_bytes: int = Field(default=MAX_RESPONSE_BYTES, ge=1024, le=1 << 30,
                                    description="a longer response is a provider_error (cut as it arrives)")


class OpenAIProvider(BaseProvider):
    kind: ClassVar[str] = "openai"
    requires: ClassVar[dict[str, str]] = {"openai": "openai"}
    credentials_note = "only SYSTEM1_OPENAI_API_KEY is read; a generic OPENAI_API_KEY is ignored on purpose"

    def __init__(self, name: str, settings: dict[str, Any]):
        self.name = name
        self.settings: OpenAISettings = parse_settings(OpenAISettings, name, settings)
        self.limits = Limits(max_options=self.settings.max_options, max_questions=100_000)
        self._http: Any = None  # one deadline-bounded httpx client, made on first use (the SDK is heavy)

    def credentials(self) -> Credentials:
        return Credentials(True, bool(os.environ.get(KEY_ENV)), KEY_ENV)

    def secrets(self) -> tuple[str, ...]:
        key = os.environ.get(KEY_ENV)
        return (key,) if key else ()

    def target(self) -> Target:
        return Target(endpoint_id(self.settings.endpoint, KEY_ENV), self.settings.model)

    def _client(self, timeout_s: float) -> Any:
        from openai import DefaultHttpxClient, OpenAI  # heavy: imported only when this rung runs

        if self._http is None:
            # Redirects are never followed (a 3xx means the endpoint is wrong: failures.py).
            http = DefaultHttpxClient(follow_redirects=False)
            # the SDK's client is an httpx2.Client (openai 3.x), not the httpx.Client clamp is annotated
            # with: clamp reads the same private attributes of both, and says False when it cannot
            if not clamp(http):  # type: ignore[arg-type]  # httpx internals it cannot wrap: never run unbounded
                http.close()
                raise ProviderFailure(f"{self.name}: cannot bound the HTTP client by the deadline "
                                      f"(unknown httpx transport)", kind="transport")
            self._http = http
        return OpenAI(api_key=os.environ.get(KEY_ENV, ""), base_url=self.settings.endpoint,
                      max_retries=0, timeout=timeout_s, http_client=self._http)

    def close(self) -> None:
        if self._http is not None:
            self._http.close()

    @staticmethod
    def _question(q: Any) -> dict[str, Any]:
        instr = render(q.instructions) if q.instructions is not None else ""
        if q.type == "noul":
            crit = q.criteria or {}
            for word, key in (("True", "true"), ("False", "false")):
                if crit.get(key) not in (None, ""):
                    instr += f"\n{word} means: {render(crit[key])}"
            return {"type": "predicate", "instructions": instr}
        if q.type == "choice":
            choices = [{"value": label, **({"description": render(d)} if d not in (None, "") else {})}
                       for label, d in q.label_descriptions()]
            return {"type": "choice", "instructions": instr, "choices": choices}
        levels = [{"label": str(i), "description": render(d)} for i, d in enumerate(q.criteria)]
        return {"type": "score", "instructions": instr, "levels": levels}

    @staticmethod
    def _answer(q: Any, raw: Any) -> Any:
        raw = raw if isinstance(raw, dict) else (raw.model_dump() if hasattr(raw, "model_dump") else raw)
        if not isinstance(raw, dict):
            return raw
        kind = raw.get("type")
        if kind == "refusal":
            return {"type": "refusal"}
        out: dict[str, Any] = {"type": "noul" if kind == "predicate" else kind}
        if isinstance(raw.get("confidence"), (int, float)):
            out["engine_confidence"] = raw["confidence"]
        if kind == "predicate":
            out["p_true"] = raw.get("probability")
        elif kind in ("choice", "score"):
            if kind == "choice":
                out["choice"] = raw.get("choice")
            pairs = raw.get("probabilities")  # [{"value", "probability"}]; anything else is malformed
            out["probabilities"] = ({str(p.get("value")): p.get("probability") for p in pairs if isinstance(p, dict)}
                                    if isinstance(pairs, list) else None)
        return out

    def judge(self, request: JudgeRequest, timeout_s: float) -> Reply:
        import time

        import httpcore
        import httpx
        import openai

        deadline = time.monotonic() + timeout_s
        state = request.state if isinstance(request.state, str) else json.dumps(request.state, separators=(",", ":"))
        items = list(request.questions.items())
        answers: dict[str, Any] = {}
        usage: dict[str, int | None] = {"input_tokens": None, "output_tokens": None}
        model = self.settings.model
        for start in range(0, len(items), BATCH):  # sequential: the batches share one deadline
            batch = items[start : start + BATCH]
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise ProviderTimeout(f"{self.name}: no time left for batch {start // BATCH + 1}")
            try:
                # every connect, read and write ends by the deadline; reads stop at the size cap
                with within(deadline, self.settings.max_response_bytes):
                    resp = self._client(remaining).decisions.create(
                        model=self.settings.model, input=state, questions=[self._question(q) for _, q in batch])
            except openai.APIStatusError as exc:
                raise self._failure(exc) from None
            except openai.APITimeoutError:
                raise ProviderTimeout(f"{self.name}: no answer within {remaining:.2f} s") from None
            # httpx's and httpcore's own: the SDK reads the body after send, where they pass unmapped
            except (openai.APIConnectionError, httpx.TransportError, httpcore.NetworkError,
                    httpcore.TimeoutException) as exc:
                if cut_for_size():
                    raise ProviderFailure(f"{self.name}: response larger than max_response_bytes "
                                          f"({self.settings.max_response_bytes} bytes)", kind="server") from None
                if isinstance(exc, (httpx.TimeoutException, httpcore.TimeoutException)):
                    raise ProviderTimeout(f"{self.name}: body still arriving after {remaining:.2f} s") from None
                raise ProviderFailure(f"{self.name}: transport failure ({type(exc).__name__})", kind="transport") from None
            except (ValueError, RecursionError, OverflowError) as exc:  # the SDK could not decode the body
                raise MalformedAnswer(f"{self.name}: unreadable response body ({type(exc).__name__})") from None
            got = getattr(resp, "answers", None) if not isinstance(resp, (str, bytes, int, float, list)) else None
            if not isinstance(got, list):
                raise MalformedAnswer(f"{self.name}: response is not a decision object")
            if len(got) != len(batch):
                raise MalformedAnswer(f"{self.name}: {len(got)} answers for {len(batch)} questions")
            for (qid, q), raw in zip(batch, got, strict=False):  # by position: `name` may be null
                answers[qid] = self._answer(q, raw)
            reported = getattr(resp, "model", None)
            model = reported if isinstance(reported, str) and reported else model
            u = getattr(resp, "usage", None)
            for key in ("input_tokens", "output_tokens"):
                value = getattr(u, key, None) if u is not None else None
                if isinstance(value, int):
                    usage[key] = (usage[key] or 0) + value
        return Reply(answers=answers, model=model, usage=usage)

    def _failure(self, exc: Any) -> ProviderFailure:
        body = exc.body if isinstance(exc.body, dict) else {}
        err = body.get("error", body)
        err = err if isinstance(err, dict) else {}
        message = str(err.get("message") or exc.message)
        headers = exc.response.headers if exc.response is not None else {}
        return classify(self.name, exc.status_code, message, headers, code=str(err.get("code") or ""),
                        secrets=self.secrets())

    def warm(self) -> None:
        """Import the SDK (a few hundred ms, cold) before the first request's deadline starts:
        the chain charges warm() to the load budget. Imported on a worker thread at the
        deadline instead, it held the GIL past the deadline (fuzz: +53 ms over 50)."""
        import openai  # noqa: F401

    def health(self, timeout_s: float) -> Health:
        if not os.environ.get(KEY_ENV):
            return Health(False, f"{KEY_ENV} is not set ({self.credentials_note})", self.settings.model)
        return Health(True, "credentials present (not probed: every call may be billed)", self.settings.model)
