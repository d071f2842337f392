"""The HTTP face, `system1 serve`: FastAPI on the gateway core, run by uvicorn.

Routes (docs/serve.md has the status mapping, security and examples):
  POST /v1/judge, POST /v1/decide   the native API: exactly the payload `Gateway.judge` /
                                    `decide` take, exactly the result dict they return;
                                    `?chain=A,B` (or `?provider=`) is the CLI's `--chain`:
                                    this call's rung order
  GET  /v1/status, GET /v1/health   what `system1 status` / `system1 health` print
  GET  /healthz                     liveness + readiness (`loading` until the first rung is warm); no auth
  /mcp                              MCP Streamable HTTP (the SDK's own transport, the stdio server's tools)
  GET  /metrics                     Prometheus text (metrics.py)
  POST /v1/systemone, GET /v1/models  the Jev wire (jev_wire.py's router)

The request and response models of /openapi.json are model.py's and results.py's, so the
OpenAPI is generated; the body is read raw and validated by the gateway itself (one
validator, one message format), never by FastAPI.

Gateway calls block (engines, SQLite): they run in worker threads, so requests are served
concurrently. Security (every route): the Host header is checked on loopback binds
(DNS rebinding), a cross-site Origin is refused, a configured bearer key is required
everywhere but /healthz (constant-time compare), and bodies over 1 MiB are refused while
they stream. The access log holds method, path, status, latency and request id only.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
import logging
import math
import os
import signal
import socket
import sys
import threading
import time
from typing import Any, Callable

import anyio
import uvicorn
from fastapi import FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from pydantic import BaseModel
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Route

from . import __version__
from .config import Config, load_config
from .addresses import is_loopback
from .core import Gateway, error_result
from .errors import (
    ALL_COOLING, CONFIG_ERROR, DEADLINE_EXCEEDED, INTERNAL_ERROR, INVALID_REQUEST, MALFORMED_RESPONSE,
    PROVIDER_ERROR, PROVIDER_TIMEOUT, ConfigError, InvalidRequest,
)
from .logs import LOGGER, configure, request_id_var
from .metrics import CONTENT_TYPE, Metrics, Observed, face_var
from .model import DecideRequest, JudgeRequest
from .results import DecideResponse, HealthResult, JudgeResult, StatusResult

log = logging.getLogger(LOGGER)

MAX_BODY = 1024 * 1024  # 1 MiB: far above any real request, far below what would hurt
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")
MIN_KEY_LENGTH = 16
REF = "#/components/schemas/{model}"

# A result's error code → HTTP status. Answered and abstained results are 200.
ERROR_STATUS = {
    INVALID_REQUEST: 422,
    CONFIG_ERROR: 503,
    PROVIDER_ERROR: 502,
    MALFORMED_RESPONSE: 502,
    PROVIDER_TIMEOUT: 504,
    DEADLINE_EXCEEDED: 504,
    ALL_COOLING: 503,
    INTERNAL_ERROR: 500,
}
UNREADABLE_BODY = 400  # not JSON at all; a JSON value that is not a valid request is 422
UNTRACKED = ("/healthz", "/metrics")  # probes and scrapes do not keep the daemon from idling


# -- the HTTP-level error body (auth, Host, size, routing): one small shape everywhere -------
class HttpErrorInfo(BaseModel):
    code: str
    message: str


class HttpError(BaseModel):
    """A request refused before it reached the gateway."""

    error: HttpErrorInfo


def _http_error(status: int, code: str, message: str, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"error": {"code": code, "message": message}}, status_code=status, headers=headers)


# -- state the routes and Serving share ------------------------------------------------------
class Readiness:
    """`loading` until the first warm-up finished (whatever its outcome: a rung that fails to
    load is reported by the requests and by /v1/health, not by hanging readiness)."""

    def __init__(self) -> None:
        self.started = time.monotonic()
        self.load_s: float | None = None

    @property
    def status(self) -> str:
        return "loading" if self.load_s is None else "ok"


class Activity:
    """In-flight count and when the last request ended (the daemon's idle exit). Touched only
    on the event loop thread; read from any thread (a torn read costs one poll)."""

    def __init__(self) -> None:
        self.in_flight = 0
        self.last_end = time.monotonic()

    def idle_s(self) -> float:
        return 0.0 if self.in_flight else time.monotonic() - self.last_end


# -- ASGI middleware -------------------------------------------------------------------------
class Front:
    """Outermost: the face of the request (for metrics), activity, the access log (metadata
    only) and the HTTP response counter; ends open MCP streams when the server stops."""

    def __init__(self, app: Any, state: Any):
        self.app = app
        self.state = state

    async def __call__(self, scope: dict, receive: Callable, send: Callable) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        path = scope["path"]
        face_var.set("mcp" if path.startswith("/mcp") else "jev" if path == "/v1/systemone" else "http")
        tracked = path not in UNTRACKED
        started = time.perf_counter()
        status, rid = 500, "-"

        async def watch(message: dict) -> None:
            nonlocal status, rid
            if message["type"] == "http.response.start":
                status = message["status"]
                rid = next((v.decode("latin-1") for k, v in message.get("headers", []) if k == b"x-request-id"), "-")
            await send(message)

        if path.startswith("/mcp") and scope["method"] == "GET":
            receive = _until_stopping(receive, self.state.stopping)
        activity = self.state.activity
        activity.in_flight += tracked
        try:
            await self.app(scope, receive, watch)
        finally:
            if tracked:
                activity.in_flight -= 1
                activity.last_end = time.monotonic()
            route = scope.get("route")
            self.state.metrics.http_responses.labels(getattr(route, "path", "other"), str(status)).inc()
            token = request_id_var.set(rid)
            log.info("http %s %s %d %.1f ms", scope["method"], path, status, (time.perf_counter() - started) * 1000)
            request_id_var.reset(token)


def _until_stopping(receive: Callable, stopping: asyncio.Event) -> Callable:
    """`receive` that reports a disconnect once the server stops, so a long-lived MCP GET
    stream ends and a graceful stop does not wait for the client to hang up."""

    async def receive_or_stop() -> dict:
        incoming = asyncio.ensure_future(receive())
        stop = asyncio.ensure_future(stopping.wait())
        done, _ = await asyncio.wait({incoming, stop}, return_when=asyncio.FIRST_COMPLETED)
        if incoming in done:
            stop.cancel()
            return incoming.result()
        incoming.cancel()
        return {"type": "http.disconnect"}

    return receive_or_stop


class Guard:
    """Host and Origin checks, the bearer key and the body limit, before any route runs."""

    def __init__(self, app: Any, api_key: str | None, allowed_hosts: set[str] | None):
        self.app = app
        self.api_key = api_key.encode("utf-8") if api_key else None
        self.allowed_hosts = allowed_hosts
        self.allowed_origins = {f"http://{h}" for h in allowed_hosts or ()}

    async def __call__(self, scope: dict, receive: Callable, send: Callable) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        refusal = self._refusal(scope["path"], headers)
        if refusal is not None:
            return await refusal(scope, receive, send)
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
            return _http_error(421, "forbidden_host", f"Host header {host[:100]!r} is not this server's "
                               f"(expected one of: {', '.join(sorted(self.allowed_hosts))})")
        origin = headers.get("origin")
        if origin is not None and origin.lower() not in self.allowed_origins | {f"http://{host}".lower(),
                                                                               f"https://{host}".lower()}:
            return _http_error(403, "forbidden_origin", f"Origin {origin[:100]!r} is not allowed: this server "
                               "answers local clients, not web pages of other sites")
        if self.api_key is None or path == "/healthz":
            return None
        scheme, _, given = headers.get("authorization", "").partition(" ")
        if scheme.lower() == "bearer" and hmac.compare_digest(given.strip().encode("utf-8", "replace"), self.api_key):
            return None
        problem = "missing" if not given else "wrong"
        return _http_error(401, "unauthorized", f"Authorization: {problem} bearer key (send "
                           "'Authorization: Bearer <key>', the key from [serve] api_key_env)",
                           {"WWW-Authenticate": 'Bearer realm="system1"'
                            + ('' if problem == "missing" else ', error="invalid_token"')})


def _too_large() -> Response:
    return _http_error(413, "payload_too_large", f"request body: larger than {MAX_BODY} bytes (1 MiB)")


# -- the MCP face ----------------------------------------------------------------------------
class McpFace:
    """The gateway as the MCP tools see it: every call is counted under face `mcp` (the tools
    run in worker threads, where the HTTP front's face does not reach)."""

    def __init__(self, gateway: Gateway):
        self._gateway = gateway

    def judge(self, payload: Any, *, provider: str | None = None, deadline_s: float | None = None) -> dict[str, Any]:
        face_var.set("mcp")
        return self._gateway.judge(payload, provider=provider, deadline_s=deadline_s)

    def decide(self, payload: Any, *, provider: str | None = None, deadline_s: float | None = None) -> dict[str, Any]:
        face_var.set("mcp")
        return self._gateway.decide(payload, provider=provider, deadline_s=deadline_s)

    def __getattr__(self, name: str) -> Any:  # health, status, capabilities, warm, …
        return getattr(self._gateway, name)


def _mcp_security(allowed_hosts: set[str] | None) -> TransportSecuritySettings:
    # The Guard already refused foreign Hosts and Origins with a JSON body; the SDK's own check
    # stays on as a second line on loopback binds (the MCP spec asks for it).
    if allowed_hosts is None:
        return TransportSecuritySettings(enable_dns_rebinding_protection=False)
    return TransportSecuritySettings(enable_dns_rebinding_protection=True, allowed_hosts=sorted(allowed_hosts),
                                     allowed_origins=sorted(f"http://{h}" for h in allowed_hosts))


# -- the app ---------------------------------------------------------------------------------
def create_app(gateway: Gateway, *, api_key: str | None = None, allowed_hosts: Any = None,
               mcp_server: Any = None) -> FastAPI:
    """The ASGI app. `allowed_hosts`: the Host header values accepted (None: any; `Serving`
    passes the loopback names with the bound port). `mcp_server`: an already built MCP
    server to mount at /mcp (default: `mcp_server.build_server` on this gateway)."""
    from .jev_wire import router as jev_router
    from .mcp_server import build_server

    hosts = None if allowed_hosts is None else {h.lower() for h in allowed_hosts}
    metrics = Metrics(gateway)
    gateway = Observed(gateway, metrics)  # every face below records what it answers
    server = mcp_server if mcp_server is not None else build_server(McpFace(gateway), delegate=False)
    sessions = StreamableHTTPSessionManager(app=server, security_settings=_mcp_security(hosts),
                                            max_request_body_size=MAX_BODY)
    readiness = Readiness()

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI):
        app.state.stopping = asyncio.Event()
        threading.Thread(target=_warm, args=(gateway, readiness, metrics), name="system1-warm", daemon=True).start()
        async with sessions.run():
            yield
        app.state.stopping.set()

    app = FastAPI(title="System-1 Gateway", version=__version__, lifespan=lifespan, docs_url=None,
                  redoc_url=None, description="Typed one-pass decisions behind one interface (docs/serve.md).")
    app.state.gateway = gateway
    app.state.metrics = metrics
    app.state.readiness = readiness
    app.state.activity = Activity()
    app.state.stopping = asyncio.Event()
    _add_routes(app)
    app.include_router(jev_router, responses=_guard_responses())
    app.router.routes.append(Route("/mcp", endpoint=StreamableHTTPASGIApp(sessions), include_in_schema=False))
    app.add_exception_handler(StarletteHTTPException, _http_exception)
    app.add_exception_handler(RequestValidationError, _validation_exception)
    app.add_middleware(Guard, api_key=api_key, allowed_hosts=hosts)
    app.add_middleware(Front, state=app.state)
    _generated_openapi(app)
    return app


def _warm(gateway: Gateway, readiness: Readiness, metrics: Metrics) -> None:
    t0 = time.perf_counter()
    gateway.warm()  # never raises
    readiness.load_s = time.perf_counter() - t0
    metrics.engine_load.set(readiness.load_s)
    metrics.ready.set(1)
    log.info("first rung warm after %.2f s", readiness.load_s)


def _responses(result_model: type[BaseModel]) -> dict[int, dict[str, Any]]:
    out: dict[int, dict[str, Any]] = {200: {"model": result_model, "description": "answered (abstentions included)"}}
    for status, what in ((400, "body is not JSON"), (422, "invalid_request (or a bad ?provider= / ?chain=)"),
                         (500, "internal_error"), (502, "provider_error, malformed_response"),
                         (503, "all_cooling (Retry-After), config_error"),
                         (504, "provider_timeout, deadline_exceeded")):
        out[status] = {"model": result_model, "description": what}
    return {**out, **_guard_responses()}


def _guard_responses() -> dict[int, dict[str, Any]]:
    return {status: {"model": HttpError, "description": what} for status, what in (
        (401, "bearer key missing or wrong"), (403, "Origin of another site"),
        (413, "body over 1 MiB"), (421, "Host header not this server's"))}


def _body(model: type[BaseModel]) -> dict[str, Any]:
    return {"requestBody": {"required": True, "content": {
        "application/json": {"schema": {"$ref": REF.format(model=model.__name__)}}}}}


# No constraints FastAPI would enforce itself: every refusal of a native call is the gateway's result shape.
PROVIDER = Query(None, description="Use only this rung for the call (a configured rung name or a provider kind); "
                                   "several, comma-separated, are a chain as ?chain=")
CHAIN = Query(None, description="This call's rung order, comma-separated (e.g. jev,openai): configured rung names "
                                "or provider kinds, each once; cooldowns and consent still apply")


def _add_routes(app: FastAPI) -> None:
    @app.post("/v1/judge", responses=_responses(JudgeResult), openapi_extra=_body(JudgeRequest),
              summary="Answer typed questions about a state")
    async def judge(request: Request, provider: str | None = PROVIDER, chain: str | None = CHAIN) -> JSONResponse:
        return await _answer(request, "judge", provider, chain)

    @app.post("/v1/decide", responses=_responses(DecideResponse), openapi_extra=_body(DecideRequest),
              summary="Decide one question among options")
    async def decide(request: Request, provider: str | None = PROVIDER, chain: str | None = CHAIN) -> JSONResponse:
        return await _answer(request, "decide", provider, chain)

    @app.get("/v1/status", responses={200: {"model": StatusResult}, **_guard_responses()},
             summary="Order, cooldowns, last route, today's counts")
    async def status(request: Request) -> JSONResponse:
        return JSONResponse(await anyio.to_thread.run_sync(request.app.state.gateway.status))

    @app.get("/v1/health", responses={200: {"model": HealthResult, "description": "ok or degraded"},
                                      503: {"model": HealthResult, "description": "down"}, **_guard_responses()},
             summary="Probe every rung of the chain")
    async def health(request: Request) -> JSONResponse:
        report = await anyio.to_thread.run_sync(request.app.state.gateway.health)
        return JSONResponse(report, status_code=503 if report.get("status") == "down" else 200)

    @app.get("/healthz", responses={200: {"model": Healthz}, **_guard_responses()},
             summary="Liveness and readiness (no auth)")
    async def healthz(request: Request) -> JSONResponse:
        ready: Readiness = request.app.state.readiness
        return JSONResponse({"status": ready.status, "version": __version__, "pid": os.getpid(),
                             "uptime_s": round(time.monotonic() - ready.started, 3),
                             "load_s": None if ready.load_s is None else round(ready.load_s, 3),
                             "max_options": request.app.state.gateway.max_options()})

    @app.get("/metrics", response_class=Response, summary="Prometheus metrics",
             responses={200: {"content": {CONTENT_TYPE.split(";")[0]: {"schema": {"type": "string"}}}},
                        **_guard_responses()})
    async def metrics(request: Request) -> Response:
        text = await anyio.to_thread.run_sync(request.app.state.metrics.exposition)
        return Response(text, media_type=CONTENT_TYPE)


class Healthz(BaseModel):
    status: str
    version: str
    pid: int
    uptime_s: float
    load_s: float | None
    max_options: int | None


async def _answer(request: Request, kind: str, provider: str | None, chain: str | None) -> JSONResponse:
    gateway: Gateway = request.app.state.gateway
    body = await request.body()

    def work() -> tuple[int, dict[str, Any]]:
        override, problem = _override(gateway, provider, chain)
        if problem:
            return ERROR_STATUS[INVALID_REQUEST], _rejected(request, kind, problem)
        try:
            payload = _json(body)
        except ValueError as exc:
            return UNREADABLE_BODY, _rejected(request, kind, str(exc))
        result = (gateway.judge if kind == "judge" else gateway.decide)(payload, provider=override)
        error = result.get("error")
        return (ERROR_STATUS.get(error["code"], 500) if error else 200), result

    status, result = await anyio.to_thread.run_sync(work)
    headers = {}
    if _header_safe(result.get("request_id")):
        headers["X-Request-Id"] = result["request_id"]
    if result.get("error") and result["error"]["code"] == ALL_COOLING:
        headers["Retry-After"] = str(await anyio.to_thread.run_sync(_retry_after_s, gateway, result))
    return JSONResponse(result, status_code=status, headers=headers)


def _json(body: bytes) -> Any:
    if not body.strip():
        raise ValueError("request: empty body (expected a JSON object)")
    try:
        return json.loads(body)
    except RecursionError:
        raise ValueError("request: JSON nested too deeply") from None
    except UnicodeDecodeError:
        raise ValueError("request: body is not UTF-8 text (expected a JSON object)") from None
    except ValueError as exc:  # JSONDecodeError, or an integer past the digit limit
        raise ValueError(f"request: body is not valid JSON ({str(exc)[:200]})") from None


def _override(gateway: Gateway, provider: str | None, chain: str | None) -> tuple[str | None, str | None]:
    """(this call's chain override or None, the problem with the query). `?chain=` and
    `?provider=` are two spellings of one thing, so giving both is refused rather than
    guessing which one wins. Checked before the body is parsed: a bad override is a 422
    naming the parameter, whatever the body."""
    if provider is not None and chain is not None:
        return None, ("provider, chain: both query parameters given (expected one: ?chain=A,B for this call's "
                      "rung order, or ?provider=NAME)")
    where, value = ("chain", chain) if chain is not None else ("provider", provider)
    if value is None or gateway.config_error:
        return value, None  # a broken config is the gateway's own config_error answer
    try:
        return ",".join(gateway.override(value, where)), None
    except InvalidRequest as exc:
        return None, exc.message


def _rejected(request: Request, kind: str, message: str) -> dict[str, Any]:
    """The gateway's own error result shape for a request it never saw (unreadable body,
    a bad ?provider= or ?chain=), counted like any other result."""
    result = error_result(kind, InvalidRequest(message))
    request.app.state.metrics.observe("http", result)
    return result


def _header_safe(value: Any) -> bool:
    return isinstance(value, str) and 0 < len(value) <= 200 and all(33 <= ord(c) <= 126 for c in value)


def _retry_after_s(gateway: Gateway, result: dict[str, Any]) -> int:
    """Whole seconds until the soonest rung of this request's chain is back (at least 1)."""
    chain = list(result.get("order") or [])
    try:
        left = [c.remaining_s for c in gateway.cooling(chain or None).values()]
    except Exception:  # noqa: BLE001 - the state file vanished: a short, honest guess
        left = []
    return max(1, math.ceil(min(left))) if left else 1


async def _http_exception(request: Request, exc: StarletteHTTPException) -> JSONResponse:
    codes = {404: "not_found", 405: "method_not_allowed"}
    message = {404: f"{request.url.path}: no such route (see /openapi.json)",
               405: f"{request.method} {request.url.path}: method not allowed"}.get(exc.status_code, str(exc.detail))
    return _http_error(exc.status_code, codes.get(exc.status_code, "http_error"), message,
                       dict(exc.headers) if exc.headers else None)


async def _validation_exception(request: Request, exc: RequestValidationError) -> JSONResponse:
    parts = [f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()[:5]]
    return _http_error(422, INVALID_REQUEST, "; ".join(parts) or "invalid request")


def _generated_openapi(app: FastAPI) -> None:
    """FastAPI's OpenAPI plus the request models (bodies are read raw, so FastAPI does not
    see them): each model's JSON Schema and its definitions go into components."""
    base = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            schema = base()
            components = schema.setdefault("components", {}).setdefault("schemas", {})
            for model in (JudgeRequest, DecideRequest):
                definition = model.model_json_schema(ref_template=REF)
                components.update(definition.pop("$defs", {}))
                components[model.__name__] = definition
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]


# -- serving ---------------------------------------------------------------------------------
def loopback_hosts(port: int) -> set[str]:
    """The Host header values a loopback server answers (DNS-rebinding protection)."""
    hosts = {f"{name}:{port}" for name in LOOPBACK_NAMES}
    return hosts | set(LOOPBACK_NAMES) if port == 80 else hosts


def _url(host: str, port: int) -> str:
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


class _Uvicorn(uvicorn.Server):
    """uvicorn without its signal handling (`main` and the daemon own the signals; uvicorn
    would re-raise them after shutdown) and with a hook once the server listens."""

    def __init__(self, config: uvicorn.Config, on_started: Callable[[], None], app: FastAPI):
        super().__init__(config)
        self._on_started = on_started
        self._app = app
        self.failed = False  # on_started raised: run() reports 1

    @contextlib.contextmanager
    def capture_signals(self):
        yield

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        if self.started and not self.should_exit:
            try:
                self._on_started()
            except Exception:  # e.g. the daemon could not write its port file
                log.exception("on_started failed; stopping")
                self.failed = True
                self.should_exit = True

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        self._app.state.stopping.set()  # ends open MCP GET streams, so in-flight work is what we wait for
        await super().shutdown(sockets)


class Serving:
    """One `system1 serve` run: `run()` blocks serving; `stop()` (any thread) is graceful."""

    def __init__(self, host: str | None = None, port: int | None = None, gateway: Gateway | None = None):
        # This process is the server: its Gateway is built here (not through answerer.py), so
        # its embedded rungs load their own engine and never delegate to a daemon.
        self._gateway = gateway
        settings = (gateway.config if gateway is not None else _config()).serve
        self.settings = settings
        self.host = host or settings.host
        self.port = settings.port if port is None else port
        self._server: _Uvicorn | None = None
        self._app: FastAPI | None = None
        self._stop = False
        self._created = time.monotonic()

    def refusal(self) -> str | None:
        """Why this bind must not start, or None (checked before anything is bound)."""
        name = self.settings.api_key_env
        key = os.environ.get(name, "") if name else ""
        if name and not key:
            return f"[serve] api_key_env names {name}, which is not set (or empty): set it, or remove api_key_env"
        if key and len(key) < MIN_KEY_LENGTH:
            return f"the bearer key in {name} is shorter than {MIN_KEY_LENGTH} characters"
        if not is_loopback(self.host) and not key:
            return (f"refusing to bind {self.host}: it is not a loopback address and no bearer key is configured "
                    "(set [serve] api_key_env to the NAME of an environment variable holding a key, and set it; "
                    "or bind 127.0.0.1)")
        if not 0 <= self.port <= 65535:
            return f"port: {self.port} is not a TCP port (expected 0..65535; 0 = any free port)"
        return None

    def run(self, on_started: Callable[[str, int], None] | None = None) -> int:
        """Serve until `stop()`. Exit codes: 0 stopped, 1 could not serve (bind failed,
        on_started raised), 2 refused (a non-loopback bind without a key, a bad key)."""
        refused = self.refusal()
        if refused:
            print(f"system1 serve: {refused}", file=sys.stderr, flush=True)
            return 2
        try:
            sock = _bind(self.host, self.port)
        except OSError as exc:
            print(f"system1 serve: cannot listen on {_url(self.host, self.port)}: {exc.strerror or exc}",
                  file=sys.stderr, flush=True)
            return 1
        port = sock.getsockname()[1]
        owned = self._gateway is None
        gateway = self._gateway or Gateway.from_environment()
        name = self.settings.api_key_env
        app = create_app(gateway, api_key=os.environ.get(name) if name else None,
                         allowed_hosts=loopback_hosts(port) if is_loopback(self.host) else None)
        grace = self.settings.load_budget_s + gateway.config.gateway.deadline_s + 5  # the longest request
        config = uvicorn.Config(app, log_config=None, access_log=False, lifespan="on", server_header=False,
                                timeout_graceful_shutdown=int(grace), ws="none")
        server = _Uvicorn(config, lambda: on_started(self.host, port) if on_started else None, app)
        self._app, self._server = app, server
        server.should_exit = self._stop
        try:
            server.run(sockets=[sock])
        finally:
            sock.close()
            if owned:
                gateway.close()
        return 1 if server.failed or not server.started else 0

    def stop(self) -> None:
        """Graceful: stop accepting, let in-flight requests finish (up to the longest a request
        may take), then exit `run()`."""
        self._stop = True
        if self._server is not None:
            self._server.should_exit = True

    def idle_s(self) -> float:
        """Seconds since the last request ended; 0 while one is in flight."""
        if self._app is None:
            return time.monotonic() - self._created
        return self._app.state.activity.idle_s()


def _config() -> Config:
    try:
        return load_config()
    except ConfigError:
        return Config()  # the gateway reports the broken config itself (health down, config_error)


def _bind(host: str, port: int) -> socket.socket:
    family, kind, proto, _, address = socket.getaddrinfo(host.strip("[]"), port, type=socket.SOCK_STREAM,
                                                         flags=socket.AI_PASSIVE)[0]
    sock = socket.socket(family, kind, proto)
    try:
        if os.name != "nt":  # on Windows SO_REUSEADDR would let a second server steal the port
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(2048)
    except OSError:
        sock.close()
        raise
    sock.set_inheritable(True)
    return sock


def main(host: str | None = None, port: int | None = None) -> int:
    """`system1 serve`: serve in the foreground; SIGTERM/SIGINT stop gracefully (a second
    SIGINT stops at once)."""
    config = _config()
    configure(config.gateway.log_level, config.gateway.log_file)
    serving = Serving(host, port)

    def on_signal(signum: int, _frame: Any) -> None:
        if serving._stop and signum == signal.SIGINT and serving._server is not None:
            serving._server.force_exit = True
        serving.stop()

    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, on_signal)

    def started(bound_host: str, bound_port: int) -> None:
        print(f"system1 serve: listening on {_url(bound_host, bound_port)} (MCP at /mcp; SIGTERM or Ctrl-C stops)",
              file=sys.stderr, flush=True)

    return serving.run(on_started=started)
