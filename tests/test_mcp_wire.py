"""Raw JSON-RPC on the server's stdio, no SDK on this side: bad input must never kill it."""

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time

import pytest

TOOLS = ["system1_decide", "system1_judge", "system1_health", "system1_capabilities", "system1_status"]
MODERN_META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}


class RawServer:
    def __init__(self, env):
        self.proc = subprocess.Popen(
            [sys.executable, "-I", "-m", "system1_gateway"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, env=env, text=True, bufsize=1,
        )
        self.lines: queue.Queue = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self.proc.stderr.read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            self.lines.put(line)

    def send(self, obj):
        self.proc.stdin.write((obj if isinstance(obj, str) else json.dumps(obj)) + "\n")
        self.proc.stdin.flush()

    def replies(self, count, timeout=30):
        out = []
        deadline = time.monotonic() + timeout
        while len(out) < count:
            line = self.lines.get(timeout=max(0.01, deadline - time.monotonic()))
            out.append(json.loads(line))  # every stdout line must be JSON-RPC
        return out

    def request(self, id_, method, params=None):
        self.send({"jsonrpc": "2.0", "id": id_, "method": method, **({"params": params} if params is not None else {})})
        return self.replies(1)[0]

    def handshake(self):
        reply = self.request(0, "initialize", {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}})
        assert reply["result"]["serverInfo"]["name"] == "system1-gateway"
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return reply

    def alive(self):
        reply = self.request("alive", "tools/list", {})
        return len(reply["result"]["tools"]) == 5

    def close(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=10)


@pytest.fixture
def server(monkeypatch):
    srv = RawServer({**os.environ, "SYSTEM1_PROVIDER": "mock"})
    yield srv
    srv.close()


def call(id_, name, arguments):
    return {"jsonrpc": "2.0", "id": id_, "method": "tools/call", "params": {"name": name, "arguments": arguments}}


def test_handshake_carries_two_line_instructions(server):
    reply = server.handshake()
    instructions = reply["result"]["instructions"]
    assert "system1_decide" in instructions and "abstained" in instructions and instructions.count("\n") == 1


def test_malformed_json_line_gets_a_parse_error_and_the_server_lives(server):
    server.handshake()
    server.send("{this is not json")
    reply = server.replies(1)[0]
    assert reply["error"]["code"] == -32700 and reply["id"] is None
    server.send('{"hello": "world"}')
    assert server.replies(1)[0]["error"]["code"] == -32600
    assert server.alive()


def test_unknown_method_and_wrong_param_types(server):
    server.handshake()
    assert server.request(1, "tools/frobnicate", {})["error"]["code"] == -32601
    wrong = server.request(2, "tools/call", {"name": 5, "arguments": "nope"})
    assert wrong["error"]["code"] == -32602
    assert server.alive()


def test_one_megabyte_argument_is_answered(server):
    server.handshake()
    reply = server.request(3, "tools/call", {"name": "system1_decide", "arguments": {"question": "x" * 1_000_000}})
    result = reply["result"]
    assert result["isError"] and "question: String should have at most 8000 characters" in result["content"][0]["text"]
    big_state = server.request(4, "tools/call", {"name": "system1_judge", "arguments": {
        "state": "y" * 1_000_000, "questions": {"q": {"type": "noul", "instructions": "?"}}}})
    assert big_state["result"]["structuredContent"]["status"] == "answered"
    assert server.alive()


def test_hundred_concurrent_calls_all_answered(server):
    server.handshake()
    for i in range(100):
        server.send(call(100 + i, "system1_decide", {"question": f"Is command {i} destructive?", "request_id": f"c{i}"}))
    replies = server.replies(100, timeout=60)
    assert sorted(r["id"] for r in replies) == list(range(100, 200))
    assert all(r["result"]["structuredContent"]["request_id"] == f"c{r['id'] - 100}" for r in replies)
    assert server.alive()


def test_calls_run_concurrently_and_cancel_stops_waiting(monkeypatch):
    srv = RawServer({**os.environ, "SYSTEM1_PROVIDER": "mock", "SYSTEM1_MOCK_LATENCY_MS": "1500"})
    try:
        srv.handshake()
        t0 = time.monotonic()
        for i in range(4):
            srv.send(call(10 + i, "system1_decide", {"question": "slow?"}))
        srv.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 13, "reason": "test"}})
        replies = srv.replies(3, timeout=20)
        assert sorted(r["id"] for r in replies) == [10, 11, 12]
        assert time.monotonic() - t0 < 1.5 * 3  # served side by side, not one after another
        with pytest.raises(queue.Empty):  # no reply for the cancelled call
            srv.replies(1, timeout=1.0)
        assert srv.alive()
    finally:
        srv.close()


def test_modern_era_discover_and_call(server):
    discover = server.request(1, "server/discover", {"_meta": MODERN_META})
    assert "2026-07-28" in discover["result"]["supportedVersions"]
    assert "system1_decide" in discover["result"]["instructions"]
    reply = server.request(2, "tools/call", {"name": "system1_status", "arguments": {}, "_meta": MODERN_META})
    assert reply["result"]["structuredContent"]["order"] == ["mock"]


def test_exits_cleanly_on_stdin_eof(server):
    server.handshake()
    server.proc.stdin.close()
    assert server.proc.wait(timeout=10) == 0


def test_exits_cleanly_on_sigterm(server):
    server.handshake()
    server.proc.send_signal(signal.SIGTERM)
    assert server.proc.wait(timeout=10) == 0


def test_stdout_carries_only_protocol_even_with_debug_logging(monkeypatch):
    srv = RawServer({**os.environ, "SYSTEM1_PROVIDER": "mock", "SYSTEM1_LOG_LEVEL": "DEBUG"})
    try:
        srv.handshake()
        srv.send(call(5, "system1_decide", {"question": "ok?"}))
        assert srv.replies(1)[0]["id"] == 5  # replies() fails on any non-JSON line
        assert srv.alive()
    finally:
        srv.close()


# Protocol errors (JSON-RPC `error`, not an `isError` result), in both eras: an unknown tool
# is -32602 (spec 2025-06-18 and 2025-11-25, server/tools › error handling), and malformed
# tools/call params are -32602 with a message and data naming the field.

def legacy(server):
    server.handshake()
    return {}


def modern(server):
    return {"_meta": MODERN_META}


@pytest.mark.parametrize("era", [legacy, modern])
def test_unknown_tool_is_a_protocol_error(server, era):
    extra = era(server)
    reply = server.request(7, "tools/call", {"name": "system1_nope", "arguments": {}, **extra})
    assert "result" not in reply
    error = reply["error"]
    assert error["code"] == -32602
    assert error["message"].startswith("Unknown tool: system1_nope")
    assert error["data"]["name"] == "system1_nope"
    assert error["data"]["tools"] == TOOLS
    assert len(server.request("after", "tools/list", extra)["result"]["tools"]) == 5  # still serving


@pytest.mark.parametrize("era", [legacy, modern])
@pytest.mark.parametrize("params, field, problem, expected", [
    ({"arguments": {}}, "params.name", "required field is missing", "the name of a tool"),
    ({"name": 5, "arguments": {}}, "params.name", "not a string", "the name of a tool"),
    ({"name": "system1_decide", "arguments": "nope"}, "params.arguments", "not an object", "an object"),
    ({"name": "system1_decide", "arguments": ["q"]}, "params.arguments", "not an object", "an object"),
], ids=["no-name", "name-not-a-string", "arguments-a-string", "arguments-a-list"])
def test_malformed_tools_call_names_the_field(server, era, params, field, problem, expected):
    extra = era(server)
    error = server.request(8, "tools/call", {**params, **extra})["error"]
    assert error["code"] == -32602
    assert error["message"].startswith(f"Invalid params for tools/call: {field}: {problem} (expected {expected}"), error
    assert error["data"]["method"] == "tools/call"
    assert [(e["field"], e["problem"]) for e in error["data"]["errors"]] == [(field, problem)]
    assert error["data"]["errors"][0]["expected"].startswith(expected)


@pytest.mark.parametrize("method, params", [("tools/list", {}), ("tools/call", {"name": "system1_status"})])
def test_request_before_initialize_says_initialize_is_needed(server, method, params):
    error = server.request(1, method, params)["error"]
    assert error["code"] == -32602
    assert error["message"].startswith(f"{method} before initialize: send initialize")
    assert "io.modelcontextprotocol/protocolVersion" in error["message"] and "params._meta" in error["message"]
    assert error["data"] == {"method": method, "expected": "initialize"}
    assert server.request(2, "ping")["result"] == {}  # ping needs no handshake
    server.handshake()
    assert server.alive()


def test_modern_request_needs_no_initialize(server):
    # 2026-07-28 is stateless: an enveloped tools/list is served as the very first message.
    reply = server.request(1, "tools/list", {"_meta": MODERN_META})
    assert [t["name"] for t in reply["result"]["tools"]] == TOOLS
    assert reply["result"]["resultType"] == "complete"
