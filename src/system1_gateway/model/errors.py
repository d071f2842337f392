"""Error codes (docs/requests.md) and the exceptions that carry them through the core."""

from __future__ import annotations

import re

INVALID_REQUEST = "invalid_request"
CONFIG_ERROR = "config_error"
PROVIDER_TIMEOUT = "provider_timeout"
PROVIDER_ERROR = "provider_error"
MALFORMED_RESPONSE = "malformed_response"
DEADLINE_EXCEEDED = "deadline_exceeded"
ALL_COOLING = "all_cooling"
INTERNAL_ERROR = "internal_error"  # a bug in the gateway itself, never blamed on an engine


# Engine error text is stored (attempts, notices, state.db, status) and shown: anything that
# looks like a credential is replaced before it gets there. Provider text is also bounded.
_SECRET_PATTERNS = re.compile(
    r"(?i)\b(bearer|basic)(\s+)[^\s\"',;]{6,}"
    r"|(?i:\b(token|api[_-]?key|access[_-]?key|secret|password)([\"']?\s*[:=]\s*[\"']?))[^\s\"',;]{6,}"
    r"|\b(?:sk|pk|rk|sess|ghp|gho|xox[abp])[-_][A-Za-z0-9_\-]{6,}|\bAKIA[A-Z0-9]{12,}"
    r"|\b[A-Fa-f0-9]{40,}\b"
    r"|(?<![A-Za-z0-9+_\-])(?=[A-Za-z0-9+_\-]*[0-9])(?=[A-Za-z0-9+_\-]*[A-Za-z])[A-Za-z0-9+_\-]{40,}={0,2}"
)
MAX_DETAIL = 500


def scrub(text: str, secrets: tuple[str, ...] = ()) -> str:
    """`text` without anything that looks like a key (and without the given secrets)."""
    for secret in secrets:
        if secret and len(secret) >= 4:
            text = text.replace(secret, "[redacted]")

    def mask(m: re.Match) -> str:
        for word, sep in ((1, 2), (3, 4)):  # keep "Bearer " / "api_key=" so the message still reads
            if m.group(word):
                return f"{m.group(word)}{m.group(sep)}[redacted]"
        return "[redacted]"

    return _SECRET_PATTERNS.sub(mask, text)


def bounded(text: str, limit: int = MAX_DETAIL) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def encodable(text: str) -> str:
    """`text` with lone surrogates (JSON "\\ud800" from an engine) replaced by "?": every
    string the gateway passes on must encode as UTF-8 (stdout, MCP, logs)."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-8", "replace").decode("utf-8")


class GatewayError(Exception):
    """An error with a public code and a message naming the field or rung at fault."""

    code = PROVIDER_ERROR

    def __init__(self, message: str, code: str | None = None):
        super().__init__(message)
        self.message = message
        if code:
            self.code = code

    def as_dict(self) -> dict[str, str]:
        return {"code": self.code, "message": self.message}


class InvalidRequest(GatewayError):
    code = INVALID_REQUEST


class ConfigError(GatewayError):
    code = CONFIG_ERROR


class ProviderFailure(GatewayError):
    """An operational failure of one rung: the waterfall may advance past it.

    `outcome` is the attempt outcome recorded (error / timeout / malformed / skipped); `kind`
    says which failure class it was, and so whether and how long the rung cools
    (state.COOLING): credentials, quota, model, endpoint (the rung's URL is wrong: a
    route that does not exist, a redirect), rate_limit, overload, server, transport cool;
    timeout, malformed, engine, rejected, unsupported and no_credentials do not.

    Its message is the text stored and shown everywhere: secrets scrubbed, length bounded.
    """

    def __init__(self, message: str, *, kind: str = "engine", code: str = PROVIDER_ERROR,
                 outcome: str = "error", retry_after_s: float | None = None, advance: bool = True):
        self._raw = message  # kept so redact() sees a secret the bound would cut in half
        super().__init__(bounded(scrub(encodable(message))), code)
        self.kind = kind
        self.outcome = outcome
        self.retry_after_s = retry_after_s
        # False for a refusal of this very request: a refusal never advances the waterfall.
        self.advance = advance


    def redact(self, secrets: tuple[str, ...]) -> "ProviderFailure":
        """Remove the rung's own secrets from the message (chain.py does it for every failure,
        whatever path the engine's text took into it)."""
        cleaned = bounded(scrub(encodable(self._raw), secrets))
        if cleaned != self.message:
            self.message = cleaned
            self.args = (cleaned,)
        return self


class MissingCredentials(ProviderFailure):
    """The rung's key variable is unset or empty locally: skipped, never cooled (nothing
    was sent; the rung works again the moment the variable is set)."""

    def __init__(self, message: str):
        super().__init__(message, kind="no_credentials", outcome="skipped")


class Unsupported(ProviderFailure):
    """The request is beyond what this rung can answer (limits): skipped, not a failure."""

    def __init__(self, message: str):
        super().__init__(message, kind="unsupported", outcome="skipped")


class MalformedAnswer(ProviderFailure):
    def __init__(self, message: str):
        super().__init__(message, kind="malformed", code=MALFORMED_RESPONSE, outcome="malformed")


class ProviderTimeout(ProviderFailure):
    def __init__(self, message: str):
        super().__init__(message, kind="timeout", code=PROVIDER_TIMEOUT, outcome="timeout")
