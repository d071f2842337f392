"""What a connection may cost the server before it has sent a whole request.

uvicorn bounds neither: a connection that sends nothing, or a header a byte at a time, holds a
descriptor for as long as it likes, and `limit_concurrency` answers 503 only to a request that
arrived. Half-open connections (even against a keyed server: authentication needs a request)
ran the process out of descriptors, real requests timed out, and asyncio's accept loop logged
each EMFILE (≈ 20 MB in 25 s). Here, on uvicorn's own h11 protocol:

- **a connection cap** (well under the descriptor limit, so `accept()` itself keeps working).
  At the cap, the connection that has waited longest without presenting a key (no whole
  request head yet, or one without a valid bearer key) is closed to make room for the new one;
  a connection whose request carried a key is never closed for room. So a flood of half-open
  connections only pushes its own connections out, and the owner's request, whose head
  arrives at once, is served (a new connection is refused only when every place is held by
  an authenticated one);
- **the per-user daemon's own user only** (Linux): a connection from another local user's
  socket is closed before it counts (its owner found with sock_diag, one netlink round trip);
- **a request read timeout**: a request's head and body must arrive within
  `request_read_timeout_s` of the connection opening (or of the data that began the next
  request on a kept-alive connection); otherwise the connection is closed. A request that
  arrived whole is never cut, however long the answer or an MCP stream takes;
- **a quiet accept-error log**: the same asyncio/uvicorn message at most once a minute.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import struct
import time
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from ..logs import LOGGER
from .security import authenticates

log = logging.getLogger(LOGGER)
REPEAT_S = 60.0  # the same noisy message at most once a minute


def protocol(max_connections: int, read_timeout_s: float, keys: tuple[str, ...] = (),
             owner_uid: int | None = None) -> type[asyncio.Protocol]:
    """uvicorn's h11 protocol with the server's bounds (one class per server). `keys`: the
    bearer keys that make a connection the owner's; `owner_uid`: close connections from other
    local users' sockets (the per-user daemon, Linux)."""

    class Bounded(_Bounded):
        MAX_CONNECTIONS = max_connections
        READ_TIMEOUT_S = read_timeout_s
        KEYS = tuple(key.encode("utf-8") for key in keys)
        OWNER_UID = owner_uid
        waiting: dict[_Bounded, None] = {}  # connections without a key yet, oldest first (dicts keep order)

    return Bounded


class _Bounded(H11Protocol):
    MAX_CONNECTIONS = 512
    READ_TIMEOUT_S = 10.0
    KEYS: tuple[bytes, ...] = ()
    OWNER_UID: int | None = None
    waiting: dict[_Bounded, None]
    _read_timer: asyncio.TimerHandle | None = None
    _logged: dict[str, float] = {}

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        if self.OWNER_UID is not None:
            uid = peer_uid(transport.get_extra_info("socket"))
            if uid is not None and uid != self.OWNER_UID:
                transport.abort()  # before it counts: another user cannot crowd the owner out
                _say("other-user", "closing connections from uid %d: this daemon serves uid %d only "
                     "(repeated at most once a minute)", uid, self.OWNER_UID)
                return
        if len(self.connections) >= self.MAX_CONNECTIONS:
            oldest = next(iter(self.waiting), None)
            if oldest is None:  # every place is held by an authenticated connection
                transport.abort()  # no reply: a client that floods gets nothing to read
                _say("refused", "refusing connections: %d already open (the cap; repeated at most once a minute)",
                     len(self.connections))
                return
            # Make room by closing the connection that has waited longest without a key: a
            # flood pushes out its own connections, not the owner's request arriving now.
            self.waiting.pop(oldest)
            oldest.transport.abort()
            _say("evicted", "%d connections open (the cap): closing the ones waiting longest without "
                 "a request that carries a key (repeated at most once a minute)", len(self.connections))
        super().connection_made(transport)
        self.waiting[self] = None
        self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        if getattr(self, "transport", None) is None:  # refused in connection_made: never set up
            return
        self.waiting.pop(self, None)
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self in self.waiting and self.conn.their_state is not h11.IDLE and \
                authenticates(self.KEYS, _authorization(self.headers or [])):
            del self.waiting[self]  # a request head with a key: the owner's, never closed for room
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


def _authorization(headers: list[tuple[bytes, bytes]]) -> str:
    """The request's Authorization value (the last one, as security.Guard reads headers)."""
    values = [value for name, value in headers if name == b"authorization"]
    return values[-1].decode("latin-1") if values else ""


def _say(kind: str, message: str, *args: Any) -> None:
    now = time.monotonic()
    if now - _Bounded._logged.get(kind, -REPEAT_S) >= REPEAT_S:
        _Bounded._logged[kind] = now
        log.warning(message, *args)


def peer_uid(sock: Any) -> int | None:
    """The uid owning the other end of a TCP connection when that end is a socket on this
    host (Linux sock_diag: the kernel looks the peer's socket up by its address pair), else
    None (a remote peer, another network namespace, no netlink). ≈ 50 µs."""
    try:
        family, here, there = sock.family, sock.getsockname(), sock.getpeername()
        if family not in (socket.AF_INET, socket.AF_INET6):
            return None
        # struct inet_diag_req_v2 for the peer's socket: its source is our peer, its
        # destination is us; any state, no extensions, no cookie (~0: match by address only).
        sockid = struct.pack("!HH", there[1], here[1]) + socket.inet_pton(family, there[0]).ljust(16, b"\0") + \
            socket.inet_pton(family, here[0]).ljust(16, b"\0") + struct.pack("=III", 0, 0xFFFFFFFF, 0xFFFFFFFF)
        request = struct.pack("=BBBBI", family, socket.IPPROTO_TCP, 0, 0, 0xFFFFFFFF) + sockid
        # nlmsghdr: length, SOCK_DIAG_BY_FAMILY (20), NLM_F_REQUEST (1), sequence, port id
        message = struct.pack("=IHHII", 16 + len(request), 20, 1, 1, 0) + request
        with socket.socket(socket.AF_NETLINK, socket.SOCK_DGRAM, 4) as netlink:  # NETLINK_SOCK_DIAG
            netlink.settimeout(0.2)
            netlink.sendto(message, (0, 0))
            reply = netlink.recv(4096)
    except (OSError, AttributeError, ValueError, IndexError):  # AttributeError: no AF_NETLINK here
        return None
    # An answer is nlmsghdr + struct inet_diag_msg, whose idiag_uid is at byte 64; "not
    # found" is an NLMSG_ERROR (type 2).
    if len(reply) < 16 + 72 or struct.unpack_from("=H", reply, 4)[0] != 20:
        return None
    return int(struct.unpack_from("=I", reply, 16 + 64)[0])


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
