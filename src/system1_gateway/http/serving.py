"""One `system1 serve` run: the bind, uvicorn (without its signal handling), a graceful stop,
and the command's foreground `main`. The daemon's lifecycle (daemon/lifecycle.py) is handed `Serving`."""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import socket
import sys
import time
from typing import Any, Callable

import uvicorn
from fastapi import FastAPI

from ..addresses import http_url, is_loopback
from ..config.settings import Config, load_config
from ..core.gateway import Gateway
from ..logs import LOGGER, configure
from ..model.errors import ConfigError
from .app import create_app
from .connections import protocol, quiet_accept_errors
from .security import MIN_KEY_LENGTH, loopback_hosts

log = logging.getLogger(LOGGER)


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

    def __init__(self, host: str | None = None, port: int | None = None, gateway: Gateway | None = None,
                 token: str | None = None, session: str | None = None):
        # This process is the server: its Gateway is built here (not through daemon/dispatch.py), so
        # its embedded rungs load their own engine and never delegate to a daemon.
        self._gateway = gateway
        settings = (gateway.config if gateway is not None else _config()).serve
        self.settings = settings
        self.host = host or settings.host
        self.port = settings.port if port is None else port
        self.token = token  # the daemon's per-user secret (daemon_files.daemon_token), besides any api key
        self.session = session  # the daemon's token for this start (the port file's)
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
            print(f"system1 serve: cannot listen on {http_url(self.host, self.port)}: {exc.strerror or exc}",
                  file=sys.stderr, flush=True)
            return 1
        port = sock.getsockname()[1]
        owned = self._gateway is None
        gateway = self._gateway or Gateway.from_environment()
        name = self.settings.api_key_env
        api_key = os.environ.get(name) if name else None
        app = create_app(gateway, api_key=api_key, token=self.token, session=self.session,
                         allowed_hosts=loopback_hosts(port) if is_loopback(self.host) else None)
        grace = self.settings.load_budget_s + gateway.config.gateway.deadline_s + 5  # the longest request
        quiet_accept_errors()
        # The per-user daemon (it has a token) serves its own user only: on Linux, connections
        # from another local user's sockets are closed before they take a place under the cap.
        owner = os.getuid() if self.token and sys.platform.startswith("linux") else None
        cap = connection_cap(self.settings.max_connections)
        http = protocol(cap, self.settings.request_read_timeout_s,
                        keys=tuple(k for k in (api_key, self.token, self.session) if k), owner_uid=owner)
        config = uvicorn.Config(app, log_config=None, access_log=False, lifespan="on", server_header=False,
                                timeout_graceful_shutdown=int(grace), ws="none", http=http,
                                backlog=accept_batch(cap))
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


def connection_cap(configured: int) -> int:
    """`max_connections`, kept under half this process's descriptor limit: the cap must bite
    before accept() runs out of descriptors (the engines, logs and state need some too)."""
    try:
        import resource

        soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    except (ImportError, OSError, ValueError):  # no resource module (Windows)
        return configured
    return configured if soft == resource.RLIM_INFINITY else max(4, min(configured, soft // 2))


def accept_batch(cap: int) -> int:
    """uvicorn's `backlog`: asyncio accepts up to this many connections in one go (and it is
    the listen queue). Past the cap each new connection closes an old one, but only a moment
    later: a batch of 2048 under a limit of 256 descriptors ran accept() out of them, and
    asyncio then stops accepting for a second, the owner's request waiting with the flood."""
    try:
        import resource

        soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    except (ImportError, OSError, ValueError):
        return 2048
    return 2048 if soft == resource.RLIM_INFINITY else max(16, min(2048, soft - cap - 64))


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
        print(f"system1 serve: listening on {http_url(bound_host, bound_port)} (MCP at /mcp; SIGTERM or Ctrl-C stops)",
              file=sys.stderr, flush=True)

    return serving.run(on_started=started)
