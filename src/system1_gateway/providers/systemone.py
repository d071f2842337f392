"""`systemone`: any server speaking the Jev `/v1/systemone` wire,
parsed tolerantly across its known dialects (error bodies, status codes, score legend and
probability key shapes, usage missing vs zero, `noul` vs `noul_raw` vs `probability`).

Failure classes: non-200 answers go through the shared classifier (failures.py: a wrong
route or a redirect makes the rung unusable, a 4xx that blames the request does not
advance); connection refused / reset / DNS / connect timeout → transport (30 s); a read past
the attempt's time → timeout (no cooling); a body that is not a valid answer → malformed (no
cooling); the key variable unset → the rung is skipped, not cooled.

The adapter never retries; the whole exchange, body included, is bounded by the attempt's
timeout: every socket operation waits at most until the deadline (deadline_http.py), so the
chain runs the attempt inline, without a worker thread (a slow-drip body is cut at the
deadline). Loopback endpoints bypass system proxies;
other hosts are refused unless `allow_remote = true`. The bearer key comes only from the
environment variable named by `api_key_env` and never appears in errors or logs.
"""

from __future__ import annotations

import json
import os
import time
from typing import Any, ClassVar
from urllib.parse import urlsplit

import httpx
from pydantic import Field, field_validator

from .. import bounded_json
from ..addresses import is_loopback
from ..config.settings import CREDENTIAL_KEYS as SECRET_KEYS
from ..model.errors import ConfigError, MalformedAnswer, MissingCredentials, ProviderFailure, ProviderTimeout
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
from .deadline_http import clamp, cut_for_size, is_clamped, within
from .failures import classify, error_message

__all__ = ["SystemOneProvider", "SystemOneSettings", "error_message", "is_loopback"]


class SystemOneSettings(RungSettings):
    endpoint: str = Field(description="base URL, e.g. http://127.0.0.1:8080 (or the full …/v1/systemone URL)")
    model: str = Field(min_length=1, description="model name sent with every request")
    api_key_env: str | None = Field(default=None, description="NAME of the environment variable holding the bearer key")
    allow_remote: bool = False
    max_options: int = Field(default=255, ge=2, le=256)
    expect_model: str | None = Field(default=None, description="reject answers reporting another model")
    max_response_bytes: int = Field(default=MAX_RESPONSE_BYTES, ge=1024, le=1 << 30,
                                    description="a longer response is a provider_error (it is never read whole)")

    @field_validator("endpoint")
    @classmethod
    def _url(cls, value: str) -> str:
        parts = urlsplit(value)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"{value!r} is not an http(s) URL")
        return value.rstrip("/")


class SystemOneProvider(BaseProvider):
    kind: ClassVar[str] = "systemone"

    # Dialects whose key lives in one fixed variable (SYSTEM1_JEV_API_KEY, …) set this; the
    # setting `api_key_env` is then refused rather than silently overridden.
    key_env: ClassVar[str | None] = None

    def __init__(self, name: str, settings: dict[str, Any]):
        if self.key_env:
            if "api_key_env" in settings:
                raise ConfigError(f"[providers.{name}] api_key_env: the {self.kind} key is read from {self.key_env} only")
            settings = {**settings, "api_key_env": self.key_env}
        secret = sorted(SECRET_KEYS & set(settings))
        if secret:
            raise ConfigError(f"[providers.{name}] {secret[0]}: secrets are never read from the config file; "
                              f"set api_key_env to the name of an environment variable holding the key")
        self.name = name
        self.settings: SystemOneSettings = self._parse(name, settings)
        host = urlsplit(self.settings.endpoint).hostname or ""
        self.local = is_loopback(host)
        if not self.local and not self.settings.allow_remote:
            raise ConfigError(f"[providers.{name}] endpoint: {host} is not a loopback address; "
                              f"set allow_remote = true to send decisions off this machine")
        base = self.settings.endpoint
        self.url = base if base.endswith("/v1/systemone") else base + "/v1/systemone"
        self.root = self.url[: -len("/v1/systemone")]
        self.limits = Limits(max_options=self.settings.max_options)
        # Local calls bypass system proxies (trust_env=False); remote ones honour them.
        self._client = httpx.Client(trust_env=not self.local, follow_redirects=False)
        clamp(self._client)

    @property
    def self_timed(self) -> bool:  # type: ignore[override]
        """Inline (no worker thread) while the client's sockets are deadline-bounded; a client
        swapped for one this module cannot bound (tests' mock transports) runs on a thread."""
        return is_clamped(self._client)

    def _parse(self, name: str, settings: dict[str, Any]) -> Any:
        return parse_settings(SystemOneSettings, name, settings)

    def _encode(self, body: bytes) -> tuple[bytes, dict[str, str]]:
        """Request body as sent, plus headers it needs (dialects may compress)."""
        return body, {}

    def credentials(self) -> Credentials:
        """(needed, present, variable name): checked locally, the value is never read out."""
        env = self.settings.api_key_env
        return Credentials(bool(env), bool(env and os.environ.get(env)), env)

    def secrets(self) -> tuple[str, ...]:
        key = self._key()
        return (key,) if key else ()

    def _key(self) -> str | None:
        env = self.settings.api_key_env
        return os.environ.get(env) or None if env else None

    def _headers(self) -> dict[str, str]:
        headers = {"content-type": "application/json", "accept": "application/json"}
        env = self.settings.api_key_env
        if env:
            key = self._key()
            if not key:
                raise MissingCredentials(f"{self.name}: environment variable {env} is not set")
            headers["authorization"] = f"Bearer {key}"
        return headers

    def target(self) -> Target:
        return Target(endpoint_id(self.root, self.settings.api_key_env), self.settings.model)

    def close(self) -> None:
        self._client.close()

    def _body(self, request: JudgeRequest) -> bytes:
        questions = {}
        for qid, q in request.questions.items():
            wire = q.model_dump(mode="json", exclude_none=True, exclude={"builtin"})  # ours, not the wire's
            wire["type"] = q.type  # canonical "noul" for every alias
            questions[qid] = wire
        return json.dumps({"model": self.settings.model, "state": request.state, "questions": questions}).encode()

    # -- the exchange ----------------------------------------------------------------------
    def _post(self, body: bytes, timeout_s: float, url: str | None = None) -> tuple[httpx.Response, bytes]:
        deadline = time.monotonic() + timeout_s
        timeout = httpx.Timeout(timeout_s, connect=min(timeout_s, 5.0))
        body, extra = self._encode(body)
        cap = self.settings.max_response_bytes
        resp = None
        try:
            with within(deadline, cap), self._client.stream("POST", url or self.url, content=body,
                                                       headers={**self._headers(), **extra}, timeout=timeout) as resp:
                chunks, size = [], 0
                for chunk in resp.iter_bytes():  # decoded: a compressed body is capped as it inflates
                    chunks.append(chunk)
                    size += len(chunk)
                    if size > cap:
                        raise self._too_large()
                    if time.monotonic() > deadline:  # a slow-drip body: stop at the deadline
                        raise ProviderTimeout(f"{self.name}: body still arriving after {timeout_s:.2f} s")
                return resp, b"".join(chunks)
        except (httpx.ConnectTimeout, httpx.ConnectError, httpx.RemoteProtocolError, httpx.ReadError,
                httpx.WriteError, httpx.PoolTimeout) as exc:
            if cut_for_size():
                raise self._too_large() from None
            raise ProviderFailure(f"{self.name}: transport failure ({type(exc).__name__})", kind="transport") from None
        except (httpx.ReadTimeout, httpx.WriteTimeout):
            if resp is not None:  # a slow-drip body, cut at the deadline
                raise ProviderTimeout(f"{self.name}: body still arriving after {timeout_s:.2f} s") from None
            raise ProviderTimeout(f"{self.name}: no answer within {timeout_s:.2f} s") from None
        except httpx.HTTPError as exc:  # anything else httpx raises (bad header, decoding, …)
            raise ProviderFailure(f"{self.name}: HTTP exchange failed ({type(exc).__name__})", kind="transport") from None

    def _too_large(self) -> ProviderFailure:
        return ProviderFailure(f"{self.name}: response larger than max_response_bytes "
                               f"({self.settings.max_response_bytes} bytes)", kind="server")

    def _exchange(self, body: bytes, timeout_s: float, url: str | None = None) -> dict[str, Any]:
        """POST, then the JSON object of a 200, or the failure its status and body mean."""
        resp, raw = self._post(body, timeout_s, url)
        try:
            data = bounded_json.loads(raw) if raw else None
        except (ValueError, RecursionError):  # not JSON, not UTF-8, or nested past the parser
            data = None
        if resp.status_code != 200:
            raise self._failure(resp, data)
        if not isinstance(data, dict):
            raise MalformedAnswer(f"{self.name}: response is not a JSON object")
        return data

    def judge(self, request: JudgeRequest, timeout_s: float) -> Reply:
        return self._reply(request, self._exchange(self._body(request), timeout_s))

    def _failure(self, resp: httpx.Response, body: Any) -> ProviderFailure:
        message = error_message(body) or resp.reason_phrase or ""
        return classify(self.name, resp.status_code, message, resp.headers, secrets=self.secrets())

    def _reply(self, request: JudgeRequest, body: dict[str, Any]) -> Reply:
        model = m if isinstance(m := body.get("model"), str) else self.settings.model
        expect = self.settings.expect_model
        if expect and model != expect:
            raise MalformedAnswer(f"{self.name}: answered by model {model!r}, expected {expect!r}")
        answers_in = body.get("answers")
        if not isinstance(answers_in, dict):
            raise MalformedAnswer(f"{self.name}: 'answers' missing or not an object")
        answers = {qid: _answer(request.questions[qid], answers_in[qid])
                   for qid in request.questions if qid in answers_in}
        usage = u if isinstance(u := body.get("usage"), dict) else {}
        return Reply(answers=answers, model=model, usage={
            k: usage[k] if isinstance(usage.get(k), int) and not isinstance(usage.get(k), bool) else None
            for k in ("input_tokens", "output_tokens")})

    def health(self, timeout_s: float) -> Health:
        try:
            headers = self._headers()
        except ProviderFailure as exc:
            return Health(False, exc.message, self.settings.model)
        last = "no health endpoint answered"
        for path in ("/health", "/healthz", "/v1/models"):
            try:
                resp = self._client.get(self.root + path, headers=headers, timeout=httpx.Timeout(timeout_s))
            except httpx.HTTPError as exc:
                return Health(False, f"unreachable ({type(exc).__name__})", self.settings.model)
            if resp.status_code == 200:
                return Health(True, f"{path} answered 200", self.settings.model)
            last = f"{path} answered {resp.status_code}"
        return Health(False, last, self.settings.model)


def _answer(question: Any, raw: Any) -> Any:
    """One wire answer in canonical raw form; shapes the gateway cannot use pass through
    for answer_check.py to reject with a precise message."""
    if not isinstance(raw, dict):
        return raw
    out: dict[str, Any] = {"type": "noul" if raw.get("type") in ("noul", "bool", "boolean", "predicate") else raw.get("type")}
    if isinstance(raw.get("confidence"), (int, float)):
        out["engine_confidence"] = raw["confidence"]
    if question.type == "noul":
        for key in ("noul_raw", "noul", "probability", "p_true"):
            if raw.get(key) is not None:
                out["p_true"] = raw[key]
                break
        out.pop("engine_confidence", None)  # noul confidences are max(p, 1-p) or banded: not comparable
    elif question.type == "choice":
        out["choice"] = raw.get("choice")
        out["probabilities"] = raw.get("probabilities")
    else:
        probs = raw.get("probabilities")
        if isinstance(probs, list):  # [{"value": i, "probability": p}] or [p0, p1, …]
            probs = {str(p.get("value", i)) if isinstance(p, dict) else str(i):
                     (p.get("probability") if isinstance(p, dict) else p) for i, p in enumerate(probs)}
        elif isinstance(probs, dict):
            probs = {str(k): v for k, v in probs.items()}
        out["probabilities"] = probs
    if raw.get("abstained") is True or raw.get("abstention") is True:
        out["abstained"] = True
    return out
