"""Shared state: one contract for SQLite, Redis (a real redis-server) and memory;
cooldowns keyed by physical target; the one-retry lease; Redis outages; the [state] config."""

from __future__ import annotations

import logging
import threading
import time

import pytest

from redis_server import RedisServer
from system1_gateway.config.settings import parse_config_text
from system1_gateway.model.errors import ConfigError
from system1_gateway.store import Cooling, MemoryStore, SQLiteStore, key_for, target_keys
from system1_gateway.store.redis_store import RedisStore, public_url

KEYS = target_keys("https://engine.example key:K", "m1")


@pytest.fixture(scope="module")
def redis_server(tmp_path_factory):
    server = RedisServer(tmp_path_factory.mktemp("redis"))
    yield server
    server.stop()


@pytest.fixture(params=["memory", "sqlite", "redis"])
def store(request, tmp_path):
    if request.param == "memory":
        made = [MemoryStore()]
    elif request.param == "sqlite":
        made = [SQLiteStore(tmp_path / "s.db")]
    else:
        server = request.getfixturevalue("redis_server")
        made = [RedisStore(server.url, prefix=f"t{time.monotonic_ns()}")]
    yield made[0]
    made[0].close()


def twin(store, tmp_path):
    """Another process (or replica) on the same shared state; memory has no other process."""
    if isinstance(store, SQLiteStore):
        return SQLiteStore(store.path)
    if isinstance(store, RedisStore):
        return RedisStore(store.url, store.prefix)
    return store


# -- the contract, on every backend ---------------------------------------------------------
def test_recooling_keeps_the_later_expiry(store):
    first = store.cool(KEYS[0], "a", 300, "quota: no credit")
    second = store.cool(KEYS[0], "b", 30, "rate_limit: slow down")
    assert second.until == pytest.approx(first.until, abs=0.01) and second.reason == "quota: no credit"
    third = store.cool(KEYS[0], "b", 600, "credentials: bad key")
    assert third.until > first.until and third.reason == "credentials: bad key" and third.rung == "b"


def test_check_sees_any_key_of_the_rung_and_returns_the_latest(store):
    assert store.check(KEYS) is False and store.peek(KEYS) is None
    store.cool(KEYS[1], "a", 30, "rate_limit: per model")
    store.cool(KEYS[0], "a", 5, "transport: refused")
    found = store.check(KEYS)
    assert isinstance(found, Cooling) and found.key == KEYS[1] and 29 < found.remaining_s <= 30
    assert store.peek(("endpoint:elsewhere",)) is None


def test_expiry_lets_exactly_one_caller_retry_and_its_failure_recools(store, tmp_path):
    other = twin(store, tmp_path)
    store.cool(KEYS[0], "a", 0.05, "transport: refused")
    time.sleep(0.1)
    assert other.peek(KEYS) is None  # peeking claims nothing
    assert store.check(KEYS) is True  # this caller re-tries the target
    held = other.check(KEYS)
    assert isinstance(held, Cooling) and 9 < held.remaining_s <= 10  # the others wait for its outcome
    # The probe failed with Retry-After: 7: the target cools 7 s, not the rest of the lease.
    again = store.cool(KEYS[0], "a", 7, "rate_limit: 429")
    assert 6.5 < again.remaining_s <= 7 and again.reason == "rate_limit: 429"
    assert store.recovered(KEYS) and other.check(KEYS) is False and not store.recovered(KEYS)


def test_one_claim_among_many_threads(store):
    store.cool(KEYS[0], "a", 0.05, "transport")
    time.sleep(0.1)
    results = []
    barrier = threading.Barrier(8)

    def race():
        barrier.wait()
        results.append(store.check(KEYS))

    threads = [threading.Thread(target=race) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results.count(True) == 1 and all(isinstance(r, Cooling) for r in results if r is not True)


def test_active_clear_notices_and_counters(store, tmp_path):
    store.cool("endpoint:x", "x", 30, "server: 500")
    store.cool("endpoint:y", "y", 60, "quota: none left")
    assert [c.key for c in store.active()] == ["endpoint:x", "endpoint:y"]  # soonest first
    assert store.clear() == 2 and store.active() == []
    other = twin(store, tmp_path)
    assert store.claim_notice("cooling:x", 60) is True
    assert other.claim_notice("cooling:x", 60) is False  # shown once for every process
    other.count({"requests": 1, "errors": 1}, None)
    other.today()  # a read flushes this process's counts at once
    store.count({"requests": 1, "answered": 1, "abstained": 2}, {"provider": "fault", "request_id": "r1"})
    today = store.today()
    assert today["today"] == {"requests": 2, "answered": 1, "abstained": 2, "errors": 1}
    assert today["last_route"] == {"provider": "fault", "request_id": "r1"}
    assert store.describe()["ok"] is True


def test_counts_reach_the_other_processes_within_a_second(store, tmp_path):
    """Counters are written by a background flush, not on the request path."""
    other = twin(store, tmp_path)
    store.count({"requests": 3, "answered": 3}, {"provider": "p"})
    time.sleep(1.6)
    assert other.today()["today"]["requests"] == 3 and other.today()["last_route"] == {"provider": "p"}


def test_per_model_failures_cool_the_model_the_rest_the_endpoint():
    keys = target_keys("http://127.0.0.1:9 key:K", "fast")
    assert key_for(keys, "rate_limit") == key_for(keys, "model") == "endpoint:http://127.0.0.1:9 key:K model:fast"
    assert {key_for(keys, k) for k in ("credentials", "quota", "transport", "server", "overload")} == {keys[0]}
    assert target_keys("rung:embedded", None) == ("endpoint:rung:embedded",)


# -- the gateway: rungs naming one target share its cooldown ---------------------------------
@pytest.mark.parametrize("mode, b_model, b_tried", [
    ("429", "fault-1", False),  # same endpoint and model: one cooldown
    ("429", "fault-2", True),  # a rate limit is per model: the other model is still tried
    ("401", "fault-2", False),  # a bad key concerns the whole endpoint: every model waits
])
def test_rungs_on_one_target_share_its_cooldown(mode, b_model, b_tried):
    from fault_engine import FaultEngine
    from system1_gateway.config.settings import Config, GatewaySettings
    from system1_gateway.core.gateway import Gateway

    engine = FaultEngine(mode)
    rung = {"kind": "systemone", "endpoint": engine.url, "model": "fault-1"}
    config = Config(gateway=GatewaySettings(provider="a", fallback=["b", "mock"], timeout_s=2, deadline_s=4),
                    providers={"a": rung, "b": {**rung, "endpoint": engine.url + "/v1/systemone/", "model": b_model}})
    try:
        with Gateway(config) as gw:
            result = gw.judge({"state": "s", "questions": {"q": {"type": "noul", "instructions": "?"}}})
            outcomes = [(a["provider"], a["outcome"]) for a in result["attempts"]]
            assert result["provider"] == "mock" and len(engine.requests) == (2 if b_tried else 1)
            assert outcomes[1] == ("b", "error" if b_tried else "cooling")
            if not b_tried:
                assert "shared target with rung 'a'" in result["attempts"][1]["detail"]
                cooling = {c["rung"]: c for c in gw.status()["cooldowns"]}
                assert set(cooling) == {"a", "b"} and cooling["b"]["set_by"] == "a"
                assert gw.starting_rung() == "mock"
    finally:
        engine.close()


# -- Redis: outages --------------------------------------------------------------------------
def test_redis_outage_falls_back_to_memory_once_and_resyncs(tmp_path, caplog):
    server = RedisServer(tmp_path / "r")
    store = RedisStore(server.url, prefix="outage")
    try:
        store.count({"requests": 1}, None)
        server.stop()
        with caplog.at_level(logging.WARNING):
            t0 = time.perf_counter()
            cooled = store.cool(KEYS[0], "a", 60, "quota: none left")  # answered from memory
            elapsed = time.perf_counter() - t0
            assert isinstance(store.check(KEYS), Cooling) and store.claim_notice("n", 60)
            store.count({"requests": 2, "answered": 2}, {"provider": "a"})
        assert elapsed < 1.0 and cooled.remaining_s > 59
        described = store.describe()
        assert described["ok"] is False and "unreachable" in described["detail"] and store.fallbacks == 1
        assert sum("unreachable" in r.getMessage() for r in caplog.records) == 1  # said once
        assert "127.0.0.1" in described["detail"]
        server.start()  # Redis comes back empty (no persistence)
        deadline = time.monotonic() + 10
        while not store.describe()["ok"] and time.monotonic() < deadline:
            time.sleep(0.1)
        assert store.describe()["ok"] is True
        other = RedisStore(server.url, prefix="outage")  # a replica that never fell back
        pushed = other.peek(KEYS)
        assert pushed is not None and pushed.reason == "quota: none left" and pushed.remaining_s > 55
        assert other.today()["today"]["requests"] == 3  # every count: the outage's too, re-synced
        other.close()
    finally:
        store.close()
        server.stop()


def test_a_hung_redis_costs_one_short_timeout_then_memory(tmp_path):
    """A listener that accepts and never answers (a hung Redis, a black-holed port)."""
    import socket

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    store = RedisStore(f"redis://127.0.0.1:{listener.getsockname()[1]}/0")
    try:
        t0 = time.perf_counter()
        assert store.check(KEYS) is False
        first = time.perf_counter() - t0
        t0 = time.perf_counter()
        for _ in range(20):
            store.check(KEYS)
        rest = time.perf_counter() - t0
        assert first < 1.0 and rest < 0.1 and store.describe()["ok"] is False
    finally:
        store.close()
        listener.close()


def test_public_url_never_shows_a_password():
    assert public_url("rediss://user:s3cret@cache.internal:6380/2") == "rediss://cache.internal:6380/2"


# -- [state] config ----------------------------------------------------------------------------
def test_state_config_url_prefix_and_errors(tmp_path):
    path = tmp_path / "config.toml"
    config = parse_config_text('[state]\nurl = "redis://127.0.0.1:6379/1"\nprefix = "team-a"\n', path)
    assert config.state.url == "redis://127.0.0.1:6379/1" and config.state.prefix == "team-a"
    assert parse_config_text("", path).state.url is None
    env = parse_config_text("", path, {"SYSTEM1_STATE_URL": "redis://10.0.0.5:6379/0"})
    assert env.state.url == "redis://10.0.0.5:6379/0"
    with pytest.raises(ConfigError, match=r"line 2, \[state\] url: a password is never read from the config file"):
        parse_config_text('[state]\nurl = "redis://:hunter2@127.0.0.1:6379/0"\n', path)
    with pytest.raises(ConfigError, match=r"\[state\].*url.*not a redis://"):
        parse_config_text('[state]\nurl = "http://127.0.0.1:6379"\n', path)
    with pytest.raises(ConfigError, match=r"SYSTEM1_STATE_PREFIX"):
        parse_config_text("", path, {"SYSTEM1_STATE_PREFIX": "has space"})
    with pytest.raises(ConfigError, match=r"\[state\].*colour"):
        parse_config_text('[state]\ncolour = "red"\n', path)


def test_a_redis_outage_keeps_the_cooldowns_this_process_knew(tmp_path):
    """The memory fallback started empty, so each replica called a throttled
    engine once more when Redis went away. It starts from the cooldowns this process saw."""
    server = RedisServer(tmp_path / "r")
    store, replica = RedisStore(server.url, prefix="keep"), RedisStore(server.url, prefix="keep")
    try:
        store.cool(KEYS[0], "a", 120, "rate_limit: slow down")  # set before the outage, here
        seen = replica.peek(KEYS)  # and seen by another replica
        assert isinstance(seen, Cooling)
        server.stop()
        for each in (store, replica):
            during = each.check(KEYS)  # answered from memory, not a probe of the engine
            assert isinstance(during, Cooling) and during.reason == "rate_limit: slow down", during
            assert 100 < during.remaining_s <= 120 and each.fallbacks == 1
    finally:
        store.close()
        replica.close()
        server.stop()


def test_a_held_sqlite_lock_costs_half_a_second_and_the_store_comes_back(tmp_path, monkeypatch):
    """A write lock held by another process made requests wait 5 s (past their
    deadline), and once on memory the store never went back to the shared file (a daemon's
    cooldowns stopped being shared until restart)."""
    import sqlite3

    from system1_gateway.store import sqlite as sqlite_state

    path = tmp_path / "state.db"
    store = SQLiteStore(path)
    store.peek(KEYS)  # the file exists, WAL on
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")  # another process holds the write lock
    try:
        t0 = time.perf_counter()
        cooled = store.cool(KEYS[0], "a", 60, "quota: none left")
        assert time.perf_counter() - t0 < sqlite_state.BUSY_TIMEOUT_S + 0.5 and cooled.remaining_s > 59
        assert store.describe()["ok"] is False
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    monkeypatch.setattr(sqlite_state, "REATTACH_S", 0.2)
    time.sleep(0.3)
    assert isinstance(store.peek(KEYS), Cooling) and store.describe()["ok"] is True  # back on the file
    shared = SQLiteStore(path).peek(KEYS)  # and what it kept meanwhile is shared again
    assert shared is not None and shared.reason == "quota: none left" and shared.remaining_s > 55
    store.close()


def _slow_dns(monkeypatch, names: dict[str, float]):
    """socket.getaddrinfo, where each name in `names` takes that many seconds to resolve, to
    127.0.0.1 (a slow or black-holed DNS server)."""
    import socket

    real = socket.getaddrinfo
    looked_up: list[str] = []

    def getaddrinfo(host, *args, **kwargs):
        if host in names:
            looked_up.append(host)
            time.sleep(names[host])
            host = "127.0.0.1"
        return real(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    return looked_up


def test_a_slow_dns_lookup_of_the_redis_host_is_bounded_by_the_connect_timeout(monkeypatch, redis_server):
    """redis-py resolves the host with a blocking getaddrinfo that its
    socket_connect_timeout does not cover: a 3 s lookup held the request 3 s. Now the lookup
    waits at most the connect timeout, and the store falls back to memory as for any outage;
    a name that resolves in time still reaches the real server."""
    from system1_gateway.store import redis_store

    looked_up = _slow_dns(monkeypatch, {"slow-dns.test": 3.0, "fast-dns.test": 0.02})
    slow = RedisStore(redis_server.url.replace("127.0.0.1", "slow-dns.test"), prefix=f"dns{time.monotonic_ns()}")
    try:
        t0 = time.perf_counter()
        assert slow.check(KEYS) is False  # memory: nothing cooling there
        took = time.perf_counter() - t0
        assert "slow-dns.test" in looked_up
        assert took < redis_store.SOCKET_TIMEOUT_S + 0.5, f"{took:.2f} s"
        described = slow.describe()
        assert slow.fallbacks == 1 and described["ok"] is False and "Timeout" in described["detail"], described
    finally:
        slow.close()
    fast = RedisStore(redis_server.url.replace("127.0.0.1", "fast-dns.test"), prefix=f"dns{time.monotonic_ns()}")
    try:
        fast.cool(KEYS[0], "a", 60, "rate_limit: slow down")
        seen = RedisStore(redis_server.url, prefix=fast.prefix)  # the same Redis, by its address
        try:
            assert isinstance(seen.peek(KEYS), Cooling)
        finally:
            seen.close()
        assert fast.fallbacks == 0 and "fast-dns.test" in looked_up
    finally:
        fast.close()


def test_rediss_resolves_within_the_bound_and_tls_still_sees_the_host_name(monkeypatch):
    """With rediss://, the address comes from the bounded lookup but TLS (SNI and the
    certificate check) is given the host name, not the address."""
    import socket
    import ssl

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(4)
    _slow_dns(monkeypatch, {"cache.internal.test": 0.01})
    seen: list[tuple[str | None, str]] = []

    def wrap_socket(self, sock, *args, server_hostname=None, **kwargs):
        seen.append((server_hostname, sock.getpeername()[0]))
        raise ssl.SSLError("stop here: the handshake is not under test")

    monkeypatch.setattr(ssl.SSLContext, "wrap_socket", wrap_socket)
    store = RedisStore(f"rediss://cache.internal.test:{listener.getsockname()[1]}/0")
    try:
        assert store.check(KEYS) is False and store.fallbacks == 1
        assert seen and seen[0] == ("cache.internal.test", "127.0.0.1"), seen
    finally:
        store.close()
        listener.close()
