"""The stdlib client of the daemon: finding it, every way a daemon can fail (a clear
DaemonUnavailable within the caller's deadline), the settings it reads without pydantic, and
the stdio MCP server delegating to the daemon."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time

import pytest

from conftest import lock_holder, run_cli
from helpers.daemon import MOCK_CONFIG, route
from system1_gateway.config.settings import load_config
from system1_gateway.daemon import client, dispatch
from system1_gateway.daemon import files as daemon_files


def write_record(port: int, pid: int | None = None, started: float | None = None, fingerprint: str | None = None) -> None:
    record = {"pid": pid or os.getpid(), "host": "127.0.0.1", "port": port, "url": f"http://127.0.0.1:{port}",
              "fingerprint": fingerprint or daemon_files.fingerprint(), "version": "0",
              "started": time.time() - 3600 if started is None else started}
    daemon_files.write_private(daemon_files.port_path(), json.dumps(record))


class FaultServer:
    """A loopback socket that misbehaves one way per connection (fault injection)."""

    def __init__(self, behaviour: str):
        self.behaviour = behaviour
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.stop = threading.Event()
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        self.sock.settimeout(0.1)
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            threading.Thread(target=self._one, args=(conn,), daemon=True).start()

    def _one(self, conn: socket.socket) -> None:
        bodies = {
            "not_json": (200, b"<html>hello</html>"),
            "500": (500, b'{"detail": "boom"}'),
            "list": (200, b"[1, 2]"),
            "result_422": (422, json.dumps({"status": "error", "attempts": [], "error": {
                "code": "invalid_request", "message": "question: required"}}).encode()),
        }
        try:
            conn.recv(65536)
            if self.behaviour == "reset":
                conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
                conn.close()
                return
            if self.behaviour == "hang":
                self.stop.wait(30)
                return
            if self.behaviour == "drip":  # headers, then bytes one at a time, no pause, for up to 10 s
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 10000000\r\n\r\n")
                until = time.monotonic() + 10
                while time.monotonic() < until and not self.stop.is_set():
                    conn.sendall(b" ")
                return
            if self.behaviour == "huge":  # a body no result ever is: refused as it arrives
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % (64 << 20))
                chunk = b" " * 65536
                for _ in range(1024):
                    conn.sendall(chunk)
                return
            if self.behaviour == "half":
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{\"status\"")
                conn.close()
                return
            code, body = bodies[self.behaviour]
            conn.sendall(b"HTTP/1.1 %d X\r\nContent-Type: application/json\r\nContent-Length: %d\r\n"
                         b"Connection: close\r\n\r\n%s" % (code, len(body), body))
        except OSError:  # the client gave up mid-reply (drip, huge): what those tests expect
            pass
        finally:
            conn.close()

    def close(self) -> None:
        self.stop.set()
        self.sock.close()


@pytest.fixture
def sleeper():
    """A live pid holding daemon.lock that is not a daemon (the port file names it)."""
    proc = lock_holder()
    yield proc.pid
    proc.kill()
    proc.wait()


def test_find_needs_a_whole_port_file_a_live_pid_and_our_fingerprint(sleeper):
    assert client.find() is None  # no file
    daemon_files.write_private(daemon_files.port_path(), '{"pid": 1, "host": "127.0.0.1"')  # torn
    assert client.find() is None
    write_record(9, pid=sleeper)
    found = client.find()
    assert found is not None and found.pid == sleeper and found.port == 9
    write_record(9, pid=sleeper, fingerprint="0" * 32)
    assert client.find() is None
    daemon, same = client.locate()
    assert daemon is not None and same is False  # there, but with other settings
    write_record(9, pid=os.getpid())
    assert client.find() is None  # never itself (the daemon process asking its own port file)


@pytest.mark.parametrize("behaviour, expected", [
    ("reset", "ConnectionResetError"), ("not_json", "not JSON"), ("500", "HTTP 500"),
    ("list", "not a JSON object"), ("half", "incomplete reply"),
    ("huge", "reply larger than 16777216 bytes"),
])
def test_every_broken_answer_is_a_clear_daemon_unavailable(behaviour, expected, sleeper):
    server = FaultServer(behaviour)
    try:
        write_record(server.port, pid=sleeper)
        with pytest.raises(client.DaemonUnavailable) as caught:
            client.find().post("/v1/decide", {"question": "q"}, timeout_s=2.0)
        assert expected in str(caught.value) and "/v1/decide" in str(caught.value)
    finally:
        server.close()


def test_a_reply_still_arriving_at_the_deadline_is_cut_there(sleeper):
    """Each recv had the time left, but a peer sending a byte at a time never let
    one time out, so the client read for as long as bytes came (a guard hook ran 18 s against
    a 1.5 s budget, and Claude Code kills it at 5 s: the guard failed open)."""
    server = FaultServer("drip")
    try:
        write_record(server.port, pid=sleeper)
        t0 = time.perf_counter()
        with pytest.raises(client.DaemonUnavailable, match="timeout"):
            client.find().post("/v1/decide", {"question": "q"}, timeout_s=1.0)
        assert time.perf_counter() - t0 < 3.0  # the deadline, not the 10 s drip
    finally:
        server.close()


def test_refused_is_immediate_and_a_gateway_result_on_4xx_is_returned(sleeper):
    write_record(9, pid=sleeper)
    t0 = time.perf_counter()
    with pytest.raises(client.DaemonUnavailable, match="ConnectionRefusedError"):
        client.find().post("/v1/decide", {"question": "q"}, timeout_s=5.0)
    assert time.perf_counter() - t0 < 0.1
    server = FaultServer("result_422")
    try:
        write_record(server.port, pid=sleeper)
        answer = client.find().post("/v1/decide", {}, timeout_s=2.0)
        assert answer["error"]["code"] == "invalid_request"
    finally:
        server.close()


def test_a_hung_daemon_costs_the_deadline_not_more(write_config, sleeper):
    """ask() gives up at the request's deadline plus the margin; the in-process answer that
    follows has nothing left and is a clean deadline_exceeded, not a second full deadline."""
    from system1_gateway.core.gateway import Gateway

    write_config('[gateway]\nprovider = "mock"\n')
    server = FaultServer("hang")
    try:
        write_record(server.port, pid=sleeper)
        payload = {"state": "s", "questions": {"q": {"type": "noul", "instructions": "?"}}, "deadline_s": 1.0}
        t0 = time.monotonic()
        routed = dispatch.ask("/v1/judge", payload, started=t0, autostart=False)
        waited = time.monotonic() - t0
        assert routed.result is None and routed.note["outcome"] == "error" and "timeout" in routed.note["detail"]
        assert 1.0 <= waited <= 1.0 + client.MARGIN_S + 0.2, waited
        result = dispatch.in_process(Gateway.from_environment(), "judge", payload, None, routed)
        assert result["error"]["code"] == "deadline_exceeded" and result["attempts"][0]["provider"] == "daemon"
        assert time.monotonic() - t0 <= 1.0 + client.MARGIN_S + 0.3
        # A young daemon whose /healthz hangs: bounded by the connect timeout, then in-process.
        write_record(server.port, pid=sleeper, started=time.time())
        t0 = time.monotonic()
        routed = dispatch.ask("/v1/judge", payload, started=t0, autostart=False)
        assert routed.result is None and time.monotonic() - t0 <= client.CONNECT_TIMEOUT_S + 0.2
    finally:
        server.close()


def test_peek_survives_a_malformed_fallback(write_config):
    """`fallback = 1` crashed the CLI's stdlib path; a string is split on commas as config.py does."""
    write_config('[gateway]\nprovider = "mock"\nfallback = 1\n')
    assert client.peek().chain == ["mock"]
    write_config('[gateway]\nprovider = "mock"\nfallback = "laya, jev"\n')
    assert client.peek().chain == ["mock", "laya", "jev"]


@pytest.mark.parametrize("text, env", [
    ("", {}),
    ('[gateway]\ndeadline_s = 3.5\nprovider = "x"\n[providers.x]\nkind = "mock"\n'
     '[serve]\nautostart = false\nload_budget_s = 12\napi_key_env = "MY_KEY"\n', {}),
    ('[gateway]\ndeadline_s = 3.5\n[serve]\nautostart = true\n',
     {"SYSTEM1_DEADLINE_S": "2", "SYSTEM1_SERVE_AUTOSTART": "off", "SYSTEM1_SERVE_LOAD_BUDGET_S": "7",
      "SYSTEM1_PROVIDER": "mock"}),
])
def test_peek_reads_what_load_config_reads(write_config, monkeypatch, text, env):
    write_config(text)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    config, peeked = load_config(), client.peek()
    assert peeked.deadline_s == config.gateway.deadline_s
    assert peeked.load_budget_s == config.serve.load_budget_s
    assert peeked.autostart == config.serve.autostart
    assert peeked.api_key_env == config.serve.api_key_env
    assert peeked.first_kind == config.kind_of(config.chain[0])


def test_the_stdio_mcp_server_delegates_to_the_daemon(write_config, start_daemon):
    """Two tool calls through the real SDK client: answered by the daemon; after the daemon
    stops, the same server answers in-process."""
    import anyio
    from mcp import Client, StdioServerParameters

    write_config(MOCK_CONFIG)
    daemon = start_daemon()
    params = StdioServerParameters(command=sys.executable, args=["-I", "-m", "system1_gateway"], env={**os.environ})

    async def session() -> tuple[dict, dict, dict, dict]:
        async with Client(params) as mcp_client:
            await mcp_client.list_tools()
            first = (await mcp_client.call_tool("system1_decide", {"question": "ok?"})).structured_content
            status = (await mcp_client.call_tool("system1_status", {})).structured_content
            daemon.stop()
            after = (await mcp_client.call_tool("system1_decide", {"question": "ok?"})).structured_content
            health = (await mcp_client.call_tool("system1_health", {})).structured_content
            return first, status, after, health

    first, status, after, health = anyio.run(session)
    assert route(first)["outcome"] == "ok" and f"pid {daemon.pid}" in route(first)["detail"]
    assert first["status"] == "decided" and first["provider"] == "first"
    assert status["order"] == ["first", "second"] and status["today"]["requests"] >= 1
    assert after["status"] == "decided" and route(after) == {}  # in-process: no daemon any more
    assert health["status"] == "ok"


# -- the embedded rung of an in-process gateway uses the daemon's warm engine -----------------

def test_an_embedded_rung_is_delegated_only_when_the_daemon_runs_its_settings(write_config, start_daemon, monkeypatch):
    from system1_gateway import providers
    from system1_gateway.core.gateway import Gateway
    from system1_gateway.providers.daemon_rung import DaemonRung
    from system1_gateway.providers.embedded import EmbeddedProvider

    write_config(MOCK_CONFIG)
    daemon = start_daemon()
    built = dispatch.delegating_build("embedded", "embedded", {})
    assert isinstance(built, DaemonRung) and built.daemon.pid == daemon.pid
    # A gateway built outside daemon/dispatch.py (the server's, a bulk worker's) never delegates.
    assert isinstance(providers.build("embedded", "embedded", {}), EmbeddedProvider)
    assert isinstance(Gateway(load_config()).rungs.get("embedded"), EmbeddedProvider)
    assert isinstance(dispatch.gateway(load_config()).rungs.get("embedded"), DaemonRung)
    assert isinstance(dispatch.delegating_build("first", "mock", {}), providers.provider_class("mock"))
    monkeypatch.setenv("SYSTEM1_EMBEDDED_TIER", "fast")  # this rung's settings differ from the daemon's
    assert isinstance(dispatch.delegating_build("embedded", "embedded", {"tier": "fast"}), EmbeddedProvider)
    monkeypatch.delenv("SYSTEM1_EMBEDDED_TIER")
    monkeypatch.setenv("SYSTEM1_MIN_CONFIDENCE", "0.95")  # other gateway settings: the rung still delegates
    assert isinstance(dispatch.delegating_build("embedded", "embedded", {}), DaemonRung)


def test_a_delegated_rung_answers_through_the_daemon_and_this_chain_thresholds(write_config, start_daemon):
    """DaemonRung against the real daemon, whose rung `first` is a mock: the daemon's answer
    comes back as raw answers that the local chain checks and thresholds itself."""
    from system1_gateway.core.gateway import Gateway
    from system1_gateway.providers.daemon_rung import DaemonRung
    from system1_gateway.providers.mock import MockProvider

    write_config(MOCK_CONFIG)
    daemon = start_daemon()
    rung = DaemonRung("first", client.find(), MockProvider("first", {}))
    gateway = Gateway(load_config(), providers={"first": rung})
    result = gateway.judge({"state": "s", "min_confidence": 0.95, "questions": {
        "n": {"type": "noul", "instructions": "?"},
        "c": {"type": "choice", "instructions": "?", "criteria": ["a", "b", "c"]},
        "s": {"type": "score", "instructions": "?", "criteria": ["low", "mid", "high"]}}})
    assert result["status"] == "answered" and result["provider"] == "first" and result["model"] == "first-model"
    assert {a["abstain_reason"] for a in result["answers"].values()} == {"below_threshold"}  # 0.9 < 0.95 here
    assert result["answers"]["c"]["choice"] in "abc" and result["answers"]["s"]["level"] in (0, 1, 2)
    daemon.stop()
    failed = gateway.judge({"state": "s", "questions": {"n": {"type": "noul", "instructions": "?"}}})
    assert failed["attempts"][0]["outcome"] == "error" and "did not answer" in failed["attempts"][0]["detail"]
    assert rung.daemon is None  # the next call answers with the local engine
    assert gateway.judge({"state": "s", "questions": {"n": {"type": "noul", "instructions": "?"}}})["status"] == "answered"
    assert gateway.status()["cooldowns"] == []  # a failed daemon never cools the rung


@pytest.mark.models
def test_an_overridden_cli_call_uses_the_daemons_warm_model(start_daemon, monkeypatch, prejoined):
    """The real accurate tier held once: a CLI call with a threshold override runs in-process
    (said so) and its embedded rung answers through the daemon, never loading llama.cpp."""
    # Generous time for both (about delegation, not latency: a first question is slow on a
    # loaded 2-core machine).
    monkeypatch.setenv("SYSTEM1_DEADLINE_S", "120")
    monkeypatch.setenv("SYSTEM1_TIMEOUT_S", "120")
    prejoined()  # the session's joined GGUF: this is about delegation, not a first run
    start_daemon()  # default config: the embedded rung
    # The daemon's first use of this question (its prefix) happens here, not in the call below.
    code, out, _ = run_cli("decide", "Is `rm -rf /` destructive?", timeout=300)
    assert code == 0 and route(out[0])["outcome"] == "ok", (out[0]["error"], out[0]["attempts"])
    script = ("import sys\nfrom system1_gateway import cli\ncode = cli.main(['decide', 'Is `rm -rf /` destructive?'])\n"
              "sys.stderr.write('LOADED=' + ','.join(m for m in ('cyllama', 'onnxruntime') if m in sys.modules) + '\\n')\n"
              "sys.exit(code)\n")
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "SYSTEM1_MIN_CONFIDENCE": "0.5"})
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert route(result)["outcome"] == "skipped" and result["provider"] == "embedded"
    assert result["status"] in ("decided", "abstained") and result["model"].startswith("qwen")
    assert "LOADED=\n" in proc.stderr, proc.stderr
