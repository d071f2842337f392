"""What a connection may cost the server before it has sent a whole request.

uvicorn bounds neither: a connection that sends nothing, or a header a byte at a time, holds a
descriptor for as long as it likes, and `limit_concurrency` answers 503 only to a request that
arrived. Half-open connections (even against a keyed server: authentication needs a request)
ran the process out of descriptors, real requests timed out, and asyncio's accept loop logged
each EMFILE (≈ 20 MB in 25 s). Here, on uvicorn's own h11 protocol:

- **a connection cap**: past `max_connections` open connections a new one is closed at once
  (well under the descriptor limit, so `accept()` itself keeps working);
- **a request read timeout**: a request's head and body must arrive within
  `request_read_timeout_s` of the connection opening (or of the data that began the next
  request on a kept-alive connection); otherwise the connection is closed. A request that
  arrived whole is never cut, however long the answer or an MCP stream takes;
- **a quiet accept-error log**: the same asyncio/uvicorn message at most once a minute.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from ..logs import LOGGER

log = logging.getLogger(LOGGER)
REPEAT_S = 60.0  # the same noisy message at most once a minute


def protocol(max_connections: int, read_timeout_s: float) -> type[asyncio.Protocol]:
    """uvicorn's h11 protocol with the server's bounds (one class per server)."""

    class Bounded(_Bounded):
        MAX_CONNECTIONS = max_connections
        READ_TIMEOUT_S = read_timeout_s

    return Bounded


class _Bounded(H11Protocol):
    MAX_CONNECTIONS = 512
    READ_TIMEOUT_S = 10.0
    _read_timer: asyncio.TimerHandle | None = None
    _refused_logged = 0.0

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        if len(self.connections) >= self.MAX_CONNECTIONS:
            transport.abort()  # no reply: a client that floods gets nothing to read
            now = time.monotonic()
            if now - _Bounded._refused_logged >= REPEAT_S:
                _Bounded._refused_logged = now
                log.warning("refusing connections: %d already open (the cap; repeated at most once a minute)",
                            len(self.connections))
            return
        super().connection_made(transport)
        self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        if getattr(self, "transport", None) is None:  # refused in connection_made: never set up
            return
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self._reading():
            if self._read_timer is None:  # the next request on a kept-alive connection began
                self._arm()
        else:
            self._disarm()

    def _reading(self) -> bool:
        """True while the client is still sending a request (its head or its body)."""
        return self.conn.their_state in (h11.IDLE, h11.SEND_BODY) and not self.transport.is_closing()

    def _arm(self) -> None:
        self._disarm()
        self._read_timer = self.loop.call_later(self.READ_TIMEOUT_S, self._read_timeout)

    def _disarm(self) -> None:
        if self._read_timer is not None:
            self._read_timer.cancel()
            self._read_timer = None

    def _read_timeout(self) -> None:
        # Armed only while a request is unfinished (a kept-alive connection waiting for its next
        # request is uvicorn's keep-alive timeout's to close).
        self._read_timer = None
        if self._reading():
            self.transport.close()


class Quiet(logging.Filter):
    """Lets each distinct message through at most once every REPEAT_S seconds (the accept
    loop's EMFILE errors repeat hundreds of times a second)."""

    def __init__(self) -> None:
        super().__init__()
        self._last: dict[str, float] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        key = f"{record.name}:{record.msg}"[:300]
        now = time.monotonic()
        if now - self._last.get(key, -REPEAT_S) < REPEAT_S:
            return False
        if len(self._last) > 1000:
            self._last.clear()
        self._last[key] = now
        return True


def quiet_accept_errors() -> Any:
    """Install Quiet on the loggers that report accept failures (idempotent)."""
    for name in ("asyncio", "uvicorn.error"):
        logger = logging.getLogger(name)
        if not any(isinstance(f, Quiet) for f in logger.filters):
            logger.addFilter(Quiet())
