"""What every request passes before any route runs: the Host header on loopback binds (DNS
rebinding), a cross-site Origin refused, a configured bearer key (constant-time compare,
everywhere but /healthz) and the body limit, counted while the body streams. Refusals have one
small JSON shape (`HttpError`)."""

from __future__ import annotations

import hmac
from typing import Any, Callable

from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel

MAX_BODY = 1024 * 1024  # 1 MiB: far above any real request, far below what would hurt
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")
MIN_KEY_LENGTH = 16
AUTHENTICATED = "system1.authenticated"  # scope key: the request carried a key (or none is asked)


def loopback_hosts(port: int) -> set[str]:
    """The Host header values a loopback server answers (DNS-rebinding protection)."""
    hosts = {f"{name}:{port}" for name in LOOPBACK_NAMES}
    return hosts | set(LOOPBACK_NAMES) if port == 80 else hosts


# -- the HTTP-level error body (auth, Host, size, routing): one small shape everywhere -------
class HttpErrorInfo(BaseModel):
    code: str
    message: str


class HttpError(BaseModel):
    """A request refused before it reached the gateway."""

    error: HttpErrorInfo


def http_error(status: int, code: str, message: str, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"error": {"code": code, "message": message}}, status_code=status, headers=headers)


class Guard:
    """Host and Origin checks, the bearer key and the body limit, before any route runs."""

    def __init__(self, app: Any, keys: tuple[str, ...], allowed_hosts: set[str] | None):
        self.app = app
        self.keys = tuple(key.encode("utf-8") for key in keys)  # any one of them authenticates
        self.allowed_hosts = allowed_hosts
        self.allowed_origins = {f"http://{h}" for h in allowed_hosts or ()}

    async def __call__(self, scope: dict, receive: Callable, send: Callable) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        refusal = self._refusal(scope["path"], headers)
        if refusal is not None:
            return await refusal(scope, receive, send)
        scope[AUTHENTICATED] = self._authenticated(headers)  # /healthz says more to its owner
        declared = headers.get("content-length", "")
        if declared.isdigit() and int(declared) > MAX_BODY:
            return await _too_large()(scope, receive, send)
        body, more = bytearray(), True
        tail: list[dict] = []
        while more:  # count the bytes as they stream: chunked bodies have no Content-Length
            message = await receive()
            if message["type"] != "http.request":
                tail.append(message)
                break
            body += message.get("body", b"")
            if len(body) > MAX_BODY:
                return await _too_large()(scope, receive, send)
            more = message.get("more_body", False)
        replay = [{"type": "http.request", "body": bytes(body), "more_body": False}, *tail]

        async def replayed() -> dict:
            return replay.pop(0) if replay else await receive()

        await self.app(scope, replayed, send)

    def _refusal(self, path: str, headers: dict[str, str]) -> Response | None:
        host = headers.get("host", "")
        if self.allowed_hosts is not None and host.lower() not in self.allowed_hosts:
            return http_error(421, "forbidden_host", f"Host header {host[:100]!r} is not this server's "
                               f"(expected one of: {', '.join(sorted(self.allowed_hosts))})")
        origin = headers.get("origin")
        if origin is not None and origin.lower() not in self.allowed_origins | {f"http://{host}".lower(),
                                                                               f"https://{host}".lower()}:
            return http_error(403, "forbidden_origin", f"Origin {origin[:100]!r} is not allowed: this server "
                               "answers local clients, not web pages of other sites")
        if path == "/healthz" or self._authenticated(headers):
            return None
        given = headers.get("authorization", "").partition(" ")[2]
        problem = "missing" if not given else "wrong"
        return http_error(401, "unauthorized", f"Authorization: {problem} bearer key (send 'Authorization: "
                           "Bearer <key>': the key in [serve] api_key_env's variable, or for the per-user "
                           "daemon the token in ~/.system1-gateway/daemon/daemon.token)",
                           {"WWW-Authenticate": 'Bearer realm="system1"'
                            + ('' if problem == "missing" else ', error="invalid_token"')})


    def _authenticated(self, headers: dict[str, str]) -> bool:
        """No key configured, or the request carries one of them."""
        return authenticates(self.keys, headers.get("authorization", ""))


def authenticates(keys: tuple[bytes, ...], authorization: str) -> bool:
    """No key configured, or this Authorization header value carries one of them (also
    asked by the connection cap, http/connections.py, to tell the owner's connections)."""
    if not keys:
        return True
    # Only the whitespace HTTP allows around a value (SP, HTAB; h11 strips it, other servers
    # may not): str.strip() also dropped control characters (\x0b, \x1c-\x1f), so
    # "Bearer <token>\x0b" passed (fuzz).
    # Between scheme and token only spaces (RFC 9110 §11.4: `auth-scheme 1*SP token68`).
    scheme, _, given = authorization.strip(" \t").partition(" ")
    presented = given.lstrip(" ").encode("utf-8", "replace")
    # compare_digest with every key, always: the time taken says nothing about which matched
    matches = [hmac.compare_digest(presented, key) for key in keys]
    return scheme.lower() == "bearer" and any(matches)


def _too_large() -> Response:
    return http_error(413, "payload_too_large", f"request body: larger than {MAX_BODY} bytes (1 MiB)")

