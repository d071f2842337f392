"""The provider contract (docs/adding-a-provider.md). One module per engine implements it.

A provider instance is built from its settings (a dict from the config file and
`SYSTEM1_<NAME>_<KEY>` variables); its constructor raises ConfigError on unusable settings.
`judge` gets a validated JudgeRequest and the attempt's timeout, which it must pass to its
own I/O; it never retries. It returns raw answers that the gateway checks (answer_check.py):

    noul:   {"type": "noul", "p_true": 0.8}
    choice: {"type": "choice", "choice": "a", "probabilities": {"a": 0.8, "b": 0.2}}
    score:  {"type": "score", "probabilities": {"0": 0.1, "1": 0.9}}

each optionally with "engine_confidence", "rationale" and "abstained": true. Operational
failures are raised as errors.ProviderFailure.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar, NamedTuple
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, ValidationError

from ..model.errors import ConfigError
from ..model.requests import JudgeRequest, describe_validation_error

ALL_TYPES = frozenset({"noul", "choice", "score"})


@dataclass(frozen=True)
class Limits:
    max_options: int = 256
    max_questions: int = 1000
    types: frozenset[str] = ALL_TYPES


@dataclass
class Reply:
    answers: dict[str, dict[str, Any]]
    model: str
    usage: dict[str, int | None] = field(
        default_factory=lambda: {"input_tokens": None, "output_tokens": None}
    )


@dataclass(frozen=True)
class Health:
    ok: bool
    detail: str
    model: str | None = None


class Credentials(NamedTuple):
    """Whether a rung needs a credential, whether its variable is set (never its value), and the
    variable's name."""
    needed: bool
    present: bool
    variable: str | None


class Target(NamedTuple):
    """Where a rung's requests go, for cooldowns: the endpoint (with its credential) and the model."""
    endpoint: str
    model: str | None


# The most an HTTP rung reads of one response (setting `max_response_bytes`): a decision is a
# few kilobytes, and a 200 MB body read whole would sit in memory (and be parsed under the GIL).
MAX_RESPONSE_BYTES = 8 * 1024 * 1024


class RungSettings(BaseModel):
    """Base for a provider's settings model: unknown keys are errors, env strings coerce."""

    model_config = ConfigDict(extra="forbid")


class BaseProvider:
    """What every provider is; subclasses override what their engine needs.

    `judge` and `health` are the contract. The rest have defaults the core relies on, so it
    never probes for optional methods:
      * `limits`: what the rung can answer (beyond them the core skips it);
      * `self_timed`: True when judge() itself never runs past its timeout (in-memory
        engines): the core then calls it inline instead of on a worker thread;
      * `requires`: {module: extra} the provider imports at run time; a missing one is a
        config_error at build time naming the extra (providers.build);
      * `credentials()` → (needed, present, variable name), checked locally, never the value;
        `secrets()` → the values themselves, only so failure text can be scrubbed of them;
      * `target()` → (endpoint, model) it sends to: the key of its cooldowns;
      * `warm()` loads models before a request's clock starts; `close()` frees clients.
    """

    kind: ClassVar[str] = ""
    requires: ClassVar[dict[str, str]] = {}
    self_timed: ClassVar[bool] = False
    credentials_note: ClassVar[str | None] = None
    name: str
    limits: Limits = Limits()

    def judge(self, request: JudgeRequest, timeout_s: float) -> Reply:
        raise NotImplementedError

    def health(self, timeout_s: float) -> Health:
        raise NotImplementedError

    def credentials(self) -> Credentials:
        return Credentials(False, True, None)

    def secrets(self) -> tuple[str, ...]:
        """The credential values this rung sends, so the core can remove them from any
        failure text before it is stored or shown (never logged or returned)."""
        return ()

    def target(self) -> Target:
        """(endpoint, model) this rung sends to, for cooldowns: rungs naming the same endpoint
        and credential share one cooldown, per-model failures cool only the model.
        An engine inside this process is its own target."""
        return Target(f"rung:{self.name}", None)

    def warm(self) -> None:
        return None

    # A second, optional stage of loading: what only some requests need (the embedded
    # engine's accurate tier). A long-lived server loads it up front (Gateway.warm(full=True));
    # a one-shot process loads it when a request first needs it, charged to the load budget.
    def warm_full(self) -> None:
        return None

    def needs_full(self, request: Any) -> bool:
        """True when this request needs the second stage and it is not loaded yet."""
        return False

    def close(self) -> None:
        return None


def endpoint_id(url: str, credential_env: str | None) -> str:
    """One spelling per physical endpoint: scheme and host lower-cased, default ports and
    trailing slashes dropped, plus the credential variable (another key is another account)."""
    parts = urlsplit(url.strip())
    host = (parts.hostname or "").lower()
    port = parts.port
    if port is not None and (parts.scheme, port) not in (("http", 80), ("https", 443)):
        host = f"{host}:{port}"
    path = parts.path.rstrip("/")
    return f"{parts.scheme.lower()}://{host}{path}" + (f" key:{credential_env}" if credential_env else "")


def parse_settings(model: type[RungSettings], name: str, raw: dict[str, Any]) -> Any:
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        raise ConfigError(f"[providers.{name}] {describe_validation_error(exc)}") from None
