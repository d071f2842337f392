"""Error codes (SPEC §2) and the exceptions that carry them through the core."""

from __future__ import annotations

INVALID_REQUEST = "invalid_request"
CONFIG_ERROR = "config_error"
PROVIDER_TIMEOUT = "provider_timeout"
PROVIDER_ERROR = "provider_error"
MALFORMED_RESPONSE = "malformed_response"
DEADLINE_EXCEEDED = "deadline_exceeded"
ALL_COOLING = "all_cooling"


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

    `outcome` is the attempt outcome recorded (error / timeout / malformed); `kind` says
    which failure class it was (credentials, quota, model, rate_limit, overload,
    transport, timeout, malformed, unsupported, engine) so cooldowns can be derived later.
    """

    def __init__(self, message: str, *, kind: str = "engine", code: str = PROVIDER_ERROR,
                 outcome: str = "error", retry_after_s: float | None = None, advance: bool = True):
        super().__init__(message, code)
        self.kind = kind
        self.outcome = outcome
        self.retry_after_s = retry_after_s
        # False for a refusal of this very request (SPEC §3: never advances the waterfall).
        self.advance = advance


class MalformedAnswer(ProviderFailure):
    def __init__(self, message: str):
        super().__init__(message, kind="malformed", code=MALFORMED_RESPONSE, outcome="malformed")


class ProviderTimeout(ProviderFailure):
    def __init__(self, message: str):
        super().__init__(message, kind="timeout", code=PROVIDER_TIMEOUT, outcome="timeout")
