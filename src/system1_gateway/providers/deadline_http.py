"""httpx clients whose every socket operation ends by the attempt's deadline.

httpx times each operation (connect, each read, each write) on its own, so an engine that
drips one byte per read timeout keeps a request alive indefinitely. The chain used to bound
HTTP attempts by running them on a worker thread and abandoning it at the deadline; that
hand-off (a thread wake-up on each side) cost more than the gateway's whole in-process work.

Here the deadline lives in the network layer instead: `clamp(client)` wraps the httpcore
network backend of each of the client's transports, and every connect, TLS handshake, read
and write waits at most until the deadline set by `within(deadline)` for the calling thread
(a `time.monotonic()` value). Past it the operation raises httpcore's timeout, which httpx
maps to its own (`ConnectTimeout` / `ReadTimeout` / `WriteTimeout`). The attempt then runs
inline on the caller's thread. Pooled connections keep their wrapper, so each request is
bounded by its own deadline.

`within(deadline, max_bytes)` also caps what the thread's reads may receive (headers and body
as they come off the wire): past it the read fails and `cut_for_size()` says why, so a rung
can answer with a clear error instead of holding a 200 MB body in memory.

A host name is resolved here too, on a small pool of resolver threads (resolver.py), so
resolution ends by the deadline as well (inside `socket.create_connection` a slow resolver held
a 2 s attempt for 10 s); each resolved address is then tried in turn within what is left. TLS still verifies the
origin's host name (httpcore passes it to `start_tls` separately).
"""

from __future__ import annotations

import contextlib
import threading
import time
from typing import Any, Iterator

import httpcore
import httpx

from .. import resolver

_local = threading.local()


@contextlib.contextmanager
def within(deadline: float, max_bytes: int | None = None) -> Iterator[None]:
    """Bound every socket operation of this thread's clamped clients by `deadline`, and with
    `max_bytes` what their reads may receive in all (an enclosing cap still applies)."""
    previous = getattr(_local, "deadline", None)
    previous_budget = getattr(_local, "budget", None)
    _local.deadline = deadline if previous is None else min(previous, deadline)
    if max_bytes is not None:
        _local.budget = [max_bytes] if previous_budget is None else [min(max_bytes, previous_budget[0])]
        _local.cut = False
    try:
        yield
    finally:
        _local.deadline = previous
        if max_bytes is not None:
            if previous_budget is not None:
                previous_budget[0] = min(previous_budget[0], _local.budget[0])
            _local.budget = previous_budget


def cut_for_size() -> bool:
    """Whether this thread's last capped exchange was cut because it received too much."""
    return getattr(_local, "cut", False)


def _clamp(timeout: float | None, error: type[Exception]) -> float | None:
    deadline = getattr(_local, "deadline", None)
    if deadline is None:
        return timeout
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise error("the attempt's deadline has passed")
    return remaining if timeout is None else min(timeout, remaining)


class _Stream(httpcore.NetworkStream):
    def __init__(self, inner: httpcore.NetworkStream):
        self._inner = inner

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        data = self._inner.read(max_bytes, _clamp(timeout, httpcore.ReadTimeout))
        budget = getattr(_local, "budget", None)
        if budget is not None:
            budget[0] -= len(data)
            if budget[0] < 0:
                _local.cut = True
                raise httpcore.ReadError("the response is larger than the rung's max_response_bytes")
        return data

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._inner.write(buffer, _clamp(timeout, httpcore.WriteTimeout))

    def close(self) -> None:
        self._inner.close()

    def start_tls(self, ssl_context: Any, server_hostname: str | None = None,
                  timeout: float | None = None) -> httpcore.NetworkStream:
        return _Stream(self._inner.start_tls(ssl_context, server_hostname, _clamp(timeout, httpcore.ConnectTimeout)))

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


class _Backend(httpcore.NetworkBackend):
    def __init__(self, inner: httpcore.NetworkBackend):
        self._inner = inner

    def connect_tcp(self, host: str, port: int, timeout: float | None = None, local_address: str | None = None,
                    socket_options: Any = None) -> httpcore.NetworkStream:
        failure: Exception | None = None
        for address in _resolve(host, port):
            try:
                return _Stream(self._inner.connect_tcp(address, port, _clamp(timeout, httpcore.ConnectTimeout),
                                                       local_address, socket_options))
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                failure = exc  # the next address, within what is left
        assert failure is not None  # _resolve returns at least one address or raises
        raise failure

    def connect_unix_socket(self, path: str, timeout: float | None = None,
                            socket_options: Any = None) -> httpcore.NetworkStream:
        return _Stream(self._inner.connect_unix_socket(path, _clamp(timeout, httpcore.ConnectTimeout), socket_options))

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


def _resolve(host: str, port: int) -> list[str]:
    """The addresses to try for `host`, resolved by the deadline (a name without a deadline,
    an IP literal and `localhost` are left to the socket layer as before)."""
    deadline = getattr(_local, "deadline", None)
    if deadline is None or not resolver.needs_lookup(host):
        return [host]
    try:
        return resolver.resolve(host, port, deadline)
    except TimeoutError:
        raise httpcore.ConnectTimeout(f"resolving {host!r} did not finish by the attempt's deadline") from None
    except OSError as exc:
        raise httpcore.ConnectError(str(exc)) from None


def _pools(client: httpx.Client) -> list[Any]:
    transports = [client._transport, *client._mounts.values()]  # see the module note
    return [getattr(t, "_pool", None) for t in transports if t is not None]


def is_clamped(client: httpx.Client) -> bool:
    """True when every transport of `client` is bounded by `within` (cheap: an attempt asks)."""
    pools = _pools(client)
    return bool(pools) and all(isinstance(getattr(p, "_network_backend", None), _Backend) for p in pools)


def clamp(client: httpx.Client) -> bool:
    """Install the deadline on every transport of `client` (its default one and the proxy
    mounts). False when a transport is not an httpcore pool this module knows how to wrap
    (e.g. a mock transport, or httpx internals that changed): the caller must then bound
    its calls another way."""
    pools = _pools(client)
    if not pools or any(not hasattr(pool, "_network_backend") for pool in pools):
        return False
    for pool in pools:
        if not isinstance(pool._network_backend, _Backend):
            pool._network_backend = _Backend(pool._network_backend)
    return True
