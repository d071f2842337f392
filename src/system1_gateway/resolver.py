"""Host names resolved by a deadline.

`socket.getaddrinfo` blocks for as long as the system resolver likes (a slow or black-holed DNS
server: 5 s per try, several tries) and cannot be cancelled, and neither httpx's connect timeout
nor redis-py's `socket_connect_timeout` covers it. Here a lookup runs on a small pool of
resolver threads per host name, made on first use, and the caller waits for it at most until
its deadline: a name whose lookups hang ties up its own threads only, never another target's.

Used by the HTTP rungs (providers/deadline_http.py) and the Redis state store. Stdlib only.
"""

from __future__ import annotations

import ipaddress
import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout

_resolvers: dict[str, ThreadPoolExecutor] = {}
_lock = threading.Lock()
RESOLVER_THREADS = 2


def needs_lookup(host: str) -> bool:
    """False for an IP literal (bracketed or not) and `localhost` (the hosts file answers at
    once): those go to the socket layer as they are."""
    if host == "localhost":
        return False
    try:
        ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return True
    return False


def resolve(host: str, port: int, deadline: float) -> list[str]:
    """The addresses of `host` (in getaddrinfo's order, each once), looked up by `deadline` (a
    `time.monotonic()` value). TimeoutError (an OSError) when the lookup does not finish by
    then; OSError when it fails or finds nothing."""
    with _lock:
        pool = _resolvers.get(host)
        if pool is None:
            pool = _resolvers[host] = ThreadPoolExecutor(RESOLVER_THREADS, thread_name_prefix="system1-dns")
    future = pool.submit(socket.getaddrinfo, host, port, type=socket.SOCK_STREAM)
    try:
        infos = future.result(timeout=max(0.0, deadline - time.monotonic()))
    except FutureTimeout:
        future.cancel()
        raise TimeoutError(f"resolving {host!r} did not finish by the deadline") from None
    except OSError as exc:
        raise OSError(f"cannot resolve {host!r}: {exc.strerror or exc}") from None
    addresses = list(dict.fromkeys(str(info[4][0]) for info in infos))
    if not addresses:
        raise OSError(f"cannot resolve {host!r}: no address")
    return addresses
