"""Loading an engine is charged to the load budget, never to a request's deadline, and HTTP
attempts run inline on the caller's thread, bounded by the deadline at the socket."""

import socket
import threading
import time

from conftest import judge_payload
from system1_gateway.config.settings import Config, GatewaySettings, ServeSettings
from system1_gateway.core.gateway import Gateway
from system1_gateway.providers.base import BaseProvider
from system1_gateway.providers.mock import MockProvider


class SlowLoading(MockProvider):
    """The mock engine behind a model load of `load_s` seconds (what the embedded engine does
    on a cold disk: join, hash, load, warm)."""

    def __init__(self, load_s: float):
        super().__init__("slow", {})
        self.load_s = load_s
        self.loads = 0
        self._lock = threading.Lock()
        self._loaded = False

    def warm(self) -> None:
        with self._lock:  # like the embedded engine's load lock
            if not self._loaded:
                self.loads += 1
                time.sleep(self.load_s)
                self._loaded = True

    def judge(self, request, timeout_s):
        self.warm()
        return super().judge(request, timeout_s)


def gateway(provider, deadline_s=0.5, load_budget_s=60.0):
    config = Config(gateway=GatewaySettings(provider="slow", timeout_s=deadline_s, deadline_s=deadline_s),
                    serve=ServeSettings(load_budget_s=load_budget_s))
    return Gateway(config, providers={"slow": provider})


def test_first_request_waits_for_the_load_outside_its_deadline():
    engine = SlowLoading(load_s=1.2)
    with gateway(engine, deadline_s=0.5) as gw:
        result = gw.judge(judge_payload())
    assert result["status"] == "answered", result
    attempt = result["attempts"][-1]
    assert attempt["outcome"] == "ok" and "loaded in 1.2 s" in attempt["detail"], attempt
    assert result["latency_ms"] >= 1200  # honest: the caller waited for the load
    assert engine.loads == 1


def test_concurrent_first_requests_and_warm_share_one_load():
    engine = SlowLoading(load_s=0.8)
    with gateway(engine, deadline_s=0.3) as gw:
        assert gw.ready() is False
        warm = threading.Thread(target=gw.warm)
        warm.start()
        results = []
        threads = [threading.Thread(target=lambda: results.append(gw.judge(judge_payload()))) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads + [warm]:
            t.join(10)
        assert gw.ready() is True
    assert [r["status"] for r in results] == ["answered"] * 4, results
    assert engine.loads == 1


def test_a_load_past_its_budget_is_a_timeout_that_says_so():
    engine = SlowLoading(load_s=2.0)
    with gateway(engine, deadline_s=0.3, load_budget_s=0.4) as gw:
        t0 = time.perf_counter()
        result = gw.judge(judge_payload())
        elapsed = time.perf_counter() - t0
    assert result["error"]["code"] == "provider_timeout", result
    assert "still loading its models" in result["error"]["message"]
    assert elapsed < engine.load_s, elapsed  # gave up at the 0.4 s budget, never waited out the load


def test_an_engine_with_nothing_to_load_never_waits():
    assert MockProvider.warm is BaseProvider.warm  # the mock loads nothing
    with gateway(MockProvider("slow", {})) as gw:
        assert gw.ready() is True
        result = gw.judge(judge_payload())
    assert result["status"] == "answered" and result["attempts"][-1]["detail"] is None


# -- HTTP attempts inline, bounded at the socket ------------------------------------------------
class Dribbler:
    """A raw TCP server that answers every request by sending its status line one byte every
    `pause` seconds (headers never complete: each read returns data, so a per-read timeout
    alone never fires)."""

    def __init__(self, pause: float = 0.05):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.pause = pause
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self._stop = threading.Event()
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        self.sock.settimeout(0.2)
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            threading.Thread(target=self._drip, args=(conn,), daemon=True).start()

    def _drip(self, conn):
        with conn:
            conn.recv(65536)
            for byte in b"HTTP/1.1 200 OK\r\nX-Padding: " + b"a" * 10_000:
                if self._stop.is_set():
                    return
                try:
                    conn.sendall(bytes([byte]))
                except OSError:
                    return
                time.sleep(self.pause)

    def close(self):
        self._stop.set()
        self.sock.close()


def test_an_engine_dripping_its_headers_is_cut_at_the_deadline_inline():
    server = Dribbler()
    try:
        config = Config(gateway=GatewaySettings(provider="drip", timeout_s=0.4, deadline_s=0.4),
                        providers={"drip": {"kind": "systemone", "endpoint": server.url, "model": "m"}})
        with Gateway(config) as gw:
            assert gw.rung("drip").self_timed is True
            t0 = time.perf_counter()
            result = gw.judge(judge_payload())
            elapsed = time.perf_counter() - t0
            assert gw._chain._pools == {}  # no worker thread was used
        assert result["attempts"][0]["outcome"] == "timeout", result
        assert result["error"]["code"] in ("provider_timeout", "deadline_exceeded"), result
        # Cut at the deadline: well under a second read timeout (2 × 0.4 s), let alone the
        # dribbler's 500 s of headers; the slack is for a busy machine's scheduling, not speed.
        assert elapsed < 2 * 0.4, elapsed
    finally:
        server.close()


def test_a_swapped_client_the_deadline_cannot_bound_runs_on_a_worker_thread():
    import httpx

    from system1_gateway.providers.systemone import SystemOneProvider

    provider = SystemOneProvider("x", {"endpoint": "http://127.0.0.1:9", "model": "m"})
    assert provider.self_timed is True
    provider._client = httpx.Client(transport=httpx.MockTransport(lambda r: httpx.Response(200, json={})))
    assert provider.self_timed is False
