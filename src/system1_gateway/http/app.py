"""The ASGI app: the routes, the Jev wire and /mcp behind two middlewares — `Front`
(outermost: the face, activity, the access log, the response counter) and `security.Guard`
— with JSON error bodies and an OpenAPI generated from the request models. The access log
holds method, path, status, latency and request id only."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from typing import Any, Callable

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Route

from .. import __version__
from ..core.gateway import Gateway, freeze_heap
from ..logs import LOGGER, printable, request_id_var
from ..model.errors import INVALID_REQUEST
from ..model.requests import DecideRequest, JudgeRequest
from .mcp import McpFace, transport_security
from .prometheus import Metrics, Observed, face_var
from .routes import REF, add_routes, guard_responses
from .security import AUTHENTICATED, MAX_BODY, Guard, http_error

log = logging.getLogger(LOGGER)

# MCP-over-HTTP sessions: the SDK's defaults (10 000 sessions, each kept 30 min) let one caller
# hold ≈ 420 MB; a session past the cap is a 503, and an idle one is closed after 10 min.
MCP_MAX_SESSIONS = 128
MCP_SESSION_IDLE_S = 600.0
UNTRACKED = ("/healthz", "/metrics")  # probes and scrapes do not keep the daemon from idling


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
                if scope.get(AUTHENTICATED, False):  # a refused request (401, foreign Host) keeps
                    activity.last_end = time.monotonic()  # no daemon from idling out
            route = scope.get("route")
            self.state.metrics.http_responses.labels(getattr(route, "path", "other"), str(status)).inc()
            token = request_id_var.set(rid)
            log.info("http %s %s %d %.1f ms", scope["method"], printable(path), status,
                     (time.perf_counter() - started) * 1000)
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


# -- the app ---------------------------------------------------------------------------------
def create_app(gateway: Gateway, *, api_key: str | None = None, token: str | None = None, session: str | None = None,
               allowed_hosts: Any = None, mcp_server: Any = None) -> FastAPI:
    """The ASGI app. `api_key` ([serve] api_key_env's), `token` (the daemon's lasting per-user
    secret) and `session` (this daemon start's): each one is accepted as the bearer key; with none, no key is asked. `allowed_hosts`: the Host header values accepted (None: any; `Serving`
    passes the loopback names with the bound port). `mcp_server`: an already built MCP
    server to mount at /mcp (default: `mcp_server.build_server` on this gateway)."""
    from ..mcp_server import build_server
    from .jev_wire import router as jev_router

    hosts = None if allowed_hosts is None else {h.lower() for h in allowed_hosts}
    metrics = Metrics(gateway)
    # every face below records what it answers. Observed and McpFace stand for the gateway (they forward
    # what they do not wrap with __getattr__), which their callers' `Gateway` annotations cannot say.
    gateway = Observed(gateway, metrics)  # type: ignore[assignment]
    server = mcp_server if mcp_server is not None else \
        build_server(McpFace(gateway), delegate=False)  # type: ignore[arg-type]
    sessions = StreamableHTTPSessionManager(app=server, security_settings=transport_security(hosts),
                                            max_request_body_size=MAX_BODY, max_sessions=MCP_MAX_SESSIONS,
                                            session_idle_timeout=MCP_SESSION_IDLE_S)
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
    add_routes(app)
    app.include_router(jev_router, responses=guard_responses())
    app.router.routes.append(Route("/mcp", endpoint=StreamableHTTPASGIApp(sessions), include_in_schema=False))
    # Starlette types a handler as taking any Exception; each of these is registered for its own class only
    app.add_exception_handler(StarletteHTTPException, _http_exception)  # type: ignore[arg-type]
    app.add_exception_handler(RequestValidationError, _validation_exception)  # type: ignore[arg-type]
    app.add_middleware(Guard, keys=tuple(k for k in (api_key, token, session) if k), allowed_hosts=hosts)
    app.add_middleware(Front, state=app.state)
    _generated_openapi(app)
    return app


def _warm(gateway: Gateway, readiness: Readiness, metrics: Metrics) -> None:
    t0 = time.perf_counter()
    gateway.warm()  # never raises
    readiness.load_s = time.perf_counter() - t0
    metrics.engine_load.set(readiness.load_s)
    metrics.ready.set(1)
    frozen = freeze_heap()  # what start-up built is never scanned again by a request's collection
    log.info("first rung warm after %.2f s (%d start-up objects frozen)", readiness.load_s, frozen)


async def _http_exception(request: Request, exc: StarletteHTTPException) -> JSONResponse:
    codes = {404: "not_found", 405: "method_not_allowed"}
    message = {404: f"{request.url.path}: no such route (see /openapi.json)",
               405: f"{request.method} {request.url.path}: method not allowed"}.get(exc.status_code, str(exc.detail))
    return http_error(exc.status_code, codes.get(exc.status_code, "http_error"), message,
                       dict(exc.headers) if exc.headers else None)


async def _validation_exception(request: Request, exc: RequestValidationError) -> JSONResponse:
    parts = [f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()[:5]]
    return http_error(422, INVALID_REQUEST, "; ".join(parts) or "invalid request")


def _generated_openapi(app: FastAPI) -> None:
    """FastAPI's OpenAPI plus the request models (bodies are read raw, so FastAPI does not
    see them): each model's JSON Schema and its definitions go into components."""
    base = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is not None:
            return app.openapi_schema
        schema = base()  # FastAPI's: builds and keeps app.openapi_schema, and returns it
        components = schema.setdefault("components", {}).setdefault("schemas", {})
        for model in (JudgeRequest, DecideRequest):
            definition = model.model_json_schema(ref_template=REF)
            components.update(definition.pop("$defs", {}))
            components[model.__name__] = definition
        return schema

    app.openapi = openapi  # type: ignore[method-assign]

