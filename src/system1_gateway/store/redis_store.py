"""Shared state in Redis, for a team: several `system1 serve` replicas behind one load balancer
in front of one hosted engine (one rate limit, one bill) see one set of cooldowns, one notice
memory and one set of counters.

Atomicity: every cooldown step is one Lua script, so the one-retry lease and the
later-expiry-wins rule hold across replicas; expiry times are taken from the Redis server's
clock (`TIME`), so replicas whose clocks drift still agree. Notices are `SET NX PX`.

Failure: Redis unreachable never fails a request. The first failed call switches this
process to an in-memory store (a warning once; `status.state` and the `system1_state_fallback`
gauge say so); a background thread pings every second and, when Redis answers again, pushes
what was kept meanwhile (cooldowns, later expiry wins; counters, added) and switches back.

Connecting: a host name is resolved on the resolver pool (resolver.py) within the connect
timeout (redis-py's own getaddrinfo is not bounded by it: a slow DNS server held every request
for seconds), then redis-py connects to each address in turn; TLS still checks the certificate
against, and sends SNI for, the host name.

Secrets: the password, TLS files and username come from environment variables only
(SYSTEM1_STATE_PASSWORD, SYSTEM1_STATE_USERNAME, SYSTEM1_STATE_CA_FILE,
SYSTEM1_STATE_CERT_FILE, SYSTEM1_STATE_KEY_FILE); the URL shown anywhere has no password.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from typing import Any, Callable, TypeVar
from urllib.parse import urlsplit, urlunsplit

import redis
from redis.backoff import NoBackoff
from redis.connection import Connection, SSLConnection
from redis.exceptions import RedisError
from redis.retry import Retry

from .. import resolver
from ..logs import LOGGER
from .base import COUNTERS, PROBE_LEASE_S, Cooling, CounterBuffer, Counts, StateStore, iso, today
from .memory import MemoryStore

log = logging.getLogger(LOGGER)
T = TypeVar("T")

SOCKET_TIMEOUT_S = 0.25  # a hung Redis costs one request this much, once; then memory
RESYNC_EVERY_S = 1.0
COUNTS_KEEP_S = 3 * 86400

# Shared preamble: the server's clock, and the blocking (latest live) cooldown among KEYS[2..].
_NOW_AND_BLOCKING = """
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local best, found = nil, 0
for i = 2, #KEYS do
  local v = redis.call('HMGET', KEYS[i], 'until', 'reason', 'rung')
  if v[1] then
    found = found + 1
    local u = tonumber(v[1])
    if u > now and (best == nil or u > best[2]) then best = {KEYS[i], u, v[2], v[3]} end
  end
end
if best then return {'cooling', best[1], string.format('%.6f', best[2] - now), best[3], best[4]} end
"""
# KEYS: the set of cooling keys, then the rung's keys; ARGV: lease seconds, "peek"|"claim".
CHECK = _NOW_AND_BLOCKING + """
if found == 0 or ARGV[2] == 'peek' then return {'free'} end
local lease = string.format('%.6f', now + tonumber(ARGV[1]))
for i = 2, #KEYS do
  if redis.call('EXISTS', KEYS[i]) == 1 then redis.call('HSET', KEYS[i], 'until', lease, 'leased', '1') end
end
return {'claimed'}
"""
# KEYS: the set, the key; ARGV: seconds, reason, rung. Later expiry wins, except over a lease.
COOL = """
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local untl = now + tonumber(ARGV[1])
local old = redis.call('HMGET', KEYS[2], 'until', 'leased')
if (not old[1]) or old[2] == '1' or untl > tonumber(old[1]) then
  redis.call('HSET', KEYS[2], 'until', string.format('%.6f', untl), 'reason', ARGV[2], 'rung', ARGV[3], 'leased', '0')
end
redis.call('SADD', KEYS[1], KEYS[2])
local v = redis.call('HMGET', KEYS[2], 'until', 'reason', 'rung')
redis.call('PEXPIRE', KEYS[2], math.floor((tonumber(v[1]) - now + 86400) * 1000))
return {string.format('%.6f', tonumber(v[1]) - now), v[2], v[3]}
"""
# KEYS: the set, then keys to forget.
RECOVER = """
local n = 0
for i = 2, #KEYS do
  n = n + redis.call('DEL', KEYS[i])
  redis.call('SREM', KEYS[1], KEYS[i])
end
return n
"""
# KEYS: the set; ARGV: "list"|"clear".
ACTIVE = """
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local out, n = {}, 0
for _, k in ipairs(redis.call('SMEMBERS', KEYS[1])) do
  local v = redis.call('HMGET', k, 'until', 'reason', 'rung')
  if not v[1] then
    redis.call('SREM', KEYS[1], k)
  elseif ARGV[1] == 'clear' then
    n = n + redis.call('DEL', k)
  elseif tonumber(v[1]) > now then
    table.insert(out, {k, string.format('%.6f', tonumber(v[1]) - now), v[2], v[3]})
  end
end
if ARGV[1] == 'clear' then redis.call('DEL', KEYS[1]); return n end
return out
"""


def public_url(url: str) -> str:
    """The URL without user or password, for status and logs."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    netloc = host + (f":{parts.port}" if parts.port else "")
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def _tcp(conn: Connection) -> Any:
    """redis-py's TCP connect (`Connection._connect`: its socket options and timeouts) to each
    address of `conn.host`, resolved within `socket_connect_timeout` (socket.timeout, which
    redis-py reports as its TimeoutError, past it). The connection's host stays the name for
    everything else: errors, and TLS (SNI and the certificate check)."""
    name = conn.host
    if not resolver.needs_lookup(name):
        return Connection._connect(conn)
    bound = conn.socket_connect_timeout
    addresses = resolver.resolve(name, conn.port, time.monotonic() + (bound if bound is not None else 30.0))
    failure: OSError | None = None
    for address in addresses:
        conn.host = address  # an IP literal: redis-py's getaddrinfo of it is no lookup
        try:
            return Connection._connect(conn)
        except OSError as exc:
            failure = exc
        finally:
            conn.host = name
    assert failure is not None  # resolve returns at least one address or raises
    raise failure


class BoundedConnection(Connection):
    """redis:// with the host name resolved within the connect timeout."""

    def _connect(self) -> Any:
        return _tcp(self)


class BoundedSSLConnection(SSLConnection):
    """rediss:// with the host name resolved within the connect timeout; the TLS layer sees the
    name (SSLConnection._connect, with its TCP step bounded)."""

    def _connect(self) -> Any:
        sock = _tcp(self)
        try:
            return self._wrap_socket_with_ssl(sock)
        except (OSError, RedisError):
            sock.close()
            raise


def connect(url: str) -> redis.Redis:
    """A client that fails fast (no retries of its own: the fallback is ours), whose connects,
    name resolution included, end within SOCKET_TIMEOUT_S."""
    env = os.environ
    scheme = urlsplit(url).scheme
    options: dict[str, Any] = {"socket_timeout": SOCKET_TIMEOUT_S, "socket_connect_timeout": SOCKET_TIMEOUT_S,
                               "retry": Retry(NoBackoff(), 0), "decode_responses": True}
    for var, option in (("SYSTEM1_STATE_PASSWORD", "password"), ("SYSTEM1_STATE_USERNAME", "username")):
        if env.get(var):
            options[option] = env[var]
    if scheme in ("redis", "rediss"):  # (unix:// has no host name)
        options["connection_class"] = BoundedSSLConnection if scheme == "rediss" else BoundedConnection
    if scheme == "rediss":
        for var, option in (("SYSTEM1_STATE_CA_FILE", "ssl_ca_certs"), ("SYSTEM1_STATE_CERT_FILE", "ssl_certfile"),
                            ("SYSTEM1_STATE_KEY_FILE", "ssl_keyfile")):
            if env.get(var):
                options[option] = env[var]
    return redis.Redis.from_url(url, **options)


class RedisStore(StateStore):
    backend = "redis"

    def __init__(self, url: str, prefix: str = "system1"):
        self.url = public_url(url)
        self.prefix = prefix
        self._client = connect(url)
        self._check = self._client.register_script(CHECK)
        self._cool = self._client.register_script(COOL)
        self._recover = self._client.register_script(RECOVER)
        self._active = self._client.register_script(ACTIVE)
        self._lock = threading.Lock()  # guards the switch to memory and back
        self._memory: MemoryStore | None = None
        # The cooldowns this process has seen in Redis (key → Cooling): an outage starts the
        # memory fallback from them, so it does not call a throttled engine once more.
        self._seen: dict[str, Cooling] = {}
        self._seen_lock = threading.Lock()
        self._since: float | None = None
        self._error: str | None = None
        self._closed = threading.Event()
        self.fallbacks = 0  # times this process fell back (tests, /metrics)
        self._counts = CounterBuffer(self._write_counts)

    # -- keys --------------------------------------------------------------------------------
    def _k(self, *parts: str) -> str:
        return ":".join((self.prefix, *parts))

    def _keys(self, keys: tuple[str, ...]) -> list[str]:
        return [self._k("cooling")] + [self._k("cool", key) for key in keys]

    def _key_of(self, redis_key: str) -> str:
        return redis_key[len(self._k("cool", "")):]

    # -- the switch ----------------------------------------------------------------------------
    def _run(self, remote: Callable[[], T], local: Callable[[MemoryStore], T]) -> T:
        if self._memory is not None:
            with self._lock:
                if self._memory is not None:
                    return local(self._memory)
        try:
            return remote()
        except (redis.RedisError, OSError) as exc:
            with self._lock:
                if self._memory is None:
                    self._fall_back(exc)
                return local(self._memory)  # type: ignore[arg-type]

    def _fall_back(self, exc: Exception) -> None:
        memory, now = MemoryStore(), time.time()
        with self._seen_lock:
            seen = list(self._seen.values())
        for cooling in seen:
            if cooling.until > now:
                memory.cool(cooling.key, cooling.rung, cooling.until - now, cooling.reason)
        self._memory, self._since, self.fallbacks = memory, now, self.fallbacks + 1
        self._error = f"{type(exc).__name__}: {str(exc)[:200]}"
        log.warning("shared state %s unreachable (%s); this process keeps cooldowns and counters in memory "
                    "and re-syncs when it is back", self.url, self._error)
        threading.Thread(target=self._resync, name="system1-state-resync", daemon=True).start()

    def _resync(self) -> None:
        """Wait for Redis, push what memory holds, switch back. One thread per outage."""
        while not self._closed.wait(RESYNC_EVERY_S):
            try:
                self._client.ping()
                with self._lock:
                    memory = self._memory
                    if memory is None:
                        return
                    cooldowns, counts, last = memory.snapshot()
                    for c in cooldowns:
                        self._cool(keys=[self._k("cooling"), self._k("cool", c.key)],
                                   args=[f"{max(0.0, c.until - time.time()):.6f}", c.reason, c.rung])
                    self._push_counts(counts, last)
                    self._memory, self._since, self._error = None, None, None
                log.warning("shared state %s is back: re-synced %d cooldown(s) and the counters kept meanwhile",
                            self.url, len(cooldowns))
                return
            except (redis.RedisError, OSError):
                continue

    # -- cooldowns -----------------------------------------------------------------------------
    def _cooling(self, key: str, remaining: str, reason: str, rung: str) -> Cooling:
        return self._saw(Cooling(rung, time.time() + float(remaining), reason, self._key_of(key)))

    def _saw(self, cooling: Cooling) -> Cooling:
        """Remember a cooldown read from or written to Redis (bounded: the expired go first)."""
        with self._seen_lock:
            if len(self._seen) > 1000:
                now = time.time()
                self._seen = {k: c for k, c in self._seen.items() if c.until > now}
            self._seen[cooling.key] = cooling
        return cooling

    def _forget(self, keys: tuple[str, ...] | None = None) -> None:
        """A recovered target (or, with None, every one after a clear) is no longer cooling."""
        with self._seen_lock:
            if keys is None:
                self._seen.clear()
            for key in keys or ():
                self._seen.pop(key, None)

    def _look(self, keys: tuple[str, ...], mode: str) -> Cooling | bool:
        reply = self._check(keys=self._keys(keys), args=[PROBE_LEASE_S, mode])
        if reply[0] == "cooling":
            return self._cooling(*reply[1:])
        return reply[0] == "claimed"

    def check(self, keys: tuple[str, ...]) -> Cooling | bool:
        return self._run(lambda: self._look(keys, "claim"), lambda mem: mem.check(keys))

    def peek(self, keys: tuple[str, ...]) -> Cooling | None:
        def remote() -> Cooling | None:
            found = self._look(keys, "peek")
            return found if isinstance(found, Cooling) else None

        return self._run(remote, lambda mem: mem.peek(keys))

    def cool(self, key: str, rung: str, seconds: float, reason: str) -> Cooling:
        def remote() -> Cooling:
            remaining, reason_now, rung_now = self._cool(keys=[self._k("cooling"), self._k("cool", key)],
                                                        args=[f"{seconds:.6f}", reason, rung])
            return self._saw(Cooling(rung_now, time.time() + float(remaining), reason_now, key))

        return self._run(remote, lambda mem: mem.cool(key, rung, seconds, reason))

    def recovered(self, keys: tuple[str, ...]) -> bool:
        self._forget(keys)
        return self._run(lambda: bool(self._recover(keys=self._keys(keys))), lambda mem: mem.recovered(keys))

    def active(self) -> list[Cooling]:
        def remote() -> list[Cooling]:
            rows = self._active(keys=[self._k("cooling")], args=["list"])
            return sorted((self._cooling(*row) for row in rows), key=lambda c: c.until)

        return self._run(remote, lambda mem: mem.active())

    def clear(self) -> int:
        self._forget()
        return self._run(lambda: int(self._active(keys=[self._k("cooling")], args=["clear"])), lambda mem: mem.clear())

    # -- notices and counters ------------------------------------------------------------------
    def claim_notice(self, key: str, window_s: float) -> bool:
        return self._run(lambda: bool(self._client.set(self._k("notice", key), "1", nx=True,
                                                       px=max(1, int(window_s * 1000)))),
                         lambda mem: mem.claim_notice(key, window_s))

    def count(self, deltas: dict[str, int], last_route: dict[str, Any] | None) -> None:
        self._counts.add(deltas, last_route)

    def _push_counts(self, by_day: Counts, last_route: dict[str, Any] | None) -> None:
        with self._client.pipeline(transaction=False) as pipe:
            for day, deltas in by_day.items():
                for name, n in deltas.items():
                    if n:
                        pipe.hincrby(self._k("counts", day), name, n)
                pipe.expire(self._k("counts", day), COUNTS_KEEP_S)
            if last_route is not None:
                pipe.set(self._k("last_route"), json.dumps(last_route))
            pipe.execute()

    def _write_counts(self, by_day: Counts, last_route: dict[str, Any] | None) -> None:
        self._run(lambda: self._push_counts(by_day, last_route), lambda mem: mem.add_counts(by_day, last_route))

    def today(self) -> dict[str, Any]:
        self._counts.flush()

        def remote() -> dict[str, Any]:
            with self._client.pipeline(transaction=False) as pipe:
                pipe.hgetall(self._k("counts", today()))
                pipe.get(self._k("last_route"))
                counts, last = pipe.execute()
            merged = dict.fromkeys(COUNTERS, 0)
            merged.update({name: int(n) for name, n in counts.items()})
            return {"today": merged, "last_route": json.loads(last) if last else None}

        return self._run(remote, lambda mem: mem.today())

    def describe(self) -> dict[str, Any]:
        if self._memory is None:
            return {"backend": self.backend, "ok": True, "detail": f"{self.url} (prefix {self.prefix!r})",
                    "fallback_since": None}
        since = iso(self._since or time.time())
        return {"backend": self.backend, "ok": False, "fallback_since": since,
                "detail": f"{self.url} unreachable ({self._error}); this process keeps cooldowns and counters "
                          f"in memory and re-syncs when it is back"}

    def close(self) -> None:
        self._counts.close()
        self._closed.set()
        try:
            self._client.close()
        except (redis.RedisError, OSError):
            pass
