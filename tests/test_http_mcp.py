"""MCP Streamable HTTP at `/mcp` of `system1 serve`: the SDK's HTTP client, the MCP Inspector
CLI over HTTP, and the official conformance suite (@modelcontextprotocol/conformance 0.1.16)
run directly against `/mcp` — no bridge.

The suite's `tools-call-error` calls a fixture tool, `test_error_handling` (no arguments),
that only the SDKs' "everything" servers have. It runs here against the same HTTP face with
that name registered as a *test-only alias* of a real tool error: the alias hands the call to
the server's own tools/call handler as `system1_decide` with no arguments, so the `isError`
result and its text ("invalid_request: question: required field is missing") are produced by
the gateway's real validation path and carried by the real transport. The alias exists only
in this file (public SDK API: `Server.add_request_handler`); the shipped server has no
fixture tools, and the unknown-tool path is not what passes the scenario.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import threading
import time
from pathlib import Path

import httpx2
import mcp_types as types
import pytest
import uvicorn
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from conftest import ROOT, require
from helpers.serve import KEY, call, running, serving, wait_ready
from system1_gateway.core.gateway import Gateway
from system1_gateway.http.app import create_app
from system1_gateway.http.mcp import McpFace
from system1_gateway.http.security import loopback_hosts
from system1_gateway.http.serving import _bind
from system1_gateway.mcp_server import build_server
from test_mcp import TOOLS, call_every_tool

TOOLS_DIR = Path(os.environ.get("SYSTEM1_TOOLS_DIR", ROOT / ".tools"))
NODE = TOOLS_DIR / "node22" / "node_modules" / ".bin" / "node"
SUITE = TOOLS_DIR / "conformance" / "node_modules" / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
INSPECTOR = TOOLS_DIR / "inspector" / "node_modules" / ".bin" / "mcp-inspector"

# The server scenarios a tools-only server must pass, run against `system1 serve`.
SCENARIOS = ["server-initialize", "ping", "tools-list", "dns-rebinding-protection"]
# Run against the HTTP face with the test-only alias described above.
FIXTURE_SCENARIOS = ["tools-call-error"]
# Every other server scenario of 0.1.16, and why it does not apply to a tools-only server.
FIXTURE_CONTENT = ("needs a fixture tool returning fixed content (image, audio, resource, progress, log "
                   "messages) that no gateway tool produces; faking one would test nothing of ours")
EXCLUDED = {
    "logging-set-level": "no logging capability: the server logs to stderr (Logging is deprecated in 2026-07-28)",
    "completion-complete": "no prompts or resource templates, hence no completions capability",
    **dict.fromkeys(["tools-call-simple-text", "tools-call-image", "tools-call-audio",
                     "tools-call-embedded-resource", "tools-call-mixed-content", "tools-call-with-logging",
                     "tools-call-with-progress"], FIXTURE_CONTENT),
    "json-schema-2020-12": "lists a fixture tool with a given inputSchema; our own schemas are checked by "
                           "tests/test_mcp.py and strict Ajv in test_mcp_ts_client.py",
    **dict.fromkeys(["tools-call-sampling", "tools-call-elicitation", "elicitation-sep1034-defaults",
                     "elicitation-sep1330-enums"],
                    "server-to-client sampling/elicitation from a fixture tool; our tools never ask the client"),
    **dict.fromkeys(["server-sse-polling", "server-sse-multiple-streams"],
                    "SSE resumption/polling (an event store); our tools answer on the POST's own response"),
    **dict.fromkeys(["resources-list", "resources-read-text", "resources-read-binary", "resources-templates-read",
                     "resources-subscribe", "resources-unsubscribe"], "no resources capability"),
    **dict.fromkeys(["prompts-list", "prompts-get-simple", "prompts-get-with-args", "prompts-get-embedded-resource",
                     "prompts-get-with-image"], "no prompts capability"),
}


@pytest.fixture
def anyio_backend():
    return "asyncio"


def node_tools():
    for path, what in ((NODE, "node 22 (npm node@22)"), (SUITE, "@modelcontextprotocol/conformance")):
        require(path.exists(), f"{what} at {path} (`make clients` installs it)")


@pytest.fixture(scope="module")
def serve(tmp_path_factory):
    """`system1 serve --port 0` (mock rung, fresh home); yields its base URL."""
    home = tmp_path_factory.mktemp("serve")
    env = {"PATH": os.environ["PATH"], "HOME": str(home), "SYSTEM1_PROVIDER": "mock",
           "SYSTEM1_STATE_DIR": str(home / "state"), "XDG_CONFIG_HOME": str(home / "xdg"),
           "SYSTEM1_SERVE_AUTOSTART": "0"}
    with serving(env, cwd=home) as (proc, port):
        yield f"http://127.0.0.1:{port}"
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0  # a graceful stop


# -- the SDK's HTTP client -------------------------------------------------------------------
@pytest.mark.anyio
@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_sdk_http_client_lists_and_calls_every_tool(serve, mode):
    async with Client(f"{serve}/mcp", mode=mode) as client:
        await call_every_tool(client)


@pytest.mark.anyio
async def test_invalid_arguments_over_http_are_tool_errors_naming_the_field(serve):
    async with Client(f"{serve}/mcp", mode="legacy") as client:
        result = await client.call_tool("system1_decide", {"question": "q", "colour": "red"})
    assert result.is_error and "colour: unknown field (not allowed)" in result.content[0].text
    assert result.structured_content["error"]["code"] == "invalid_request"


@pytest.mark.anyio
async def test_mcp_calls_are_counted_under_their_face(serve):
    port = int(serve.rsplit(":", 1)[1])
    async with Client(f"{serve}/mcp", mode="legacy") as client:
        await client.call_tool("system1_decide", {"question": "Is this counted?"})
    _, _, text = call(port, "GET", "/metrics")
    count = float(re.search(r'system1_requests_total\{face="mcp",outcome="decided",rung="mock"\} ([\d.]+)',
                            text).group(1))
    assert count >= 1
    assert not re.search(r'face="http",outcome="decided"', text)  # MCP calls are not miscounted as http


@pytest.mark.anyio
async def test_mcp_needs_the_bearer_key_when_one_is_configured(write_config, monkeypatch):
    write_config('[gateway]\nprovider = "mock"\n[serve]\napi_key_env = "S1_MCP_KEY"\n')
    monkeypatch.setenv("S1_MCP_KEY", KEY)
    with running(Gateway.from_environment()) as (_, port):
        url = f"http://127.0.0.1:{port}/mcp"
        status, _, body = call(port, "POST", "/mcp", {"jsonrpc": "2.0", "id": 1, "method": "ping"})
        assert status == 401 and body["error"]["code"] == "unauthorized"
        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {KEY}"}) as http:
            async with Client(streamable_http_client(url, http_client=http), mode="legacy") as client:
                tools = (await client.list_tools()).tools
                decided = await client.call_tool("system1_decide", {"question": "Authorized?"})
    assert [t.name for t in tools] == TOOLS and decided.structured_content["status"] == "decided"


@pytest.mark.anyio
async def test_stop_does_not_wait_for_an_open_mcp_session(mock_gateway):
    """A connected HTTP MCP client holds a GET stream open; a graceful stop ends that stream
    instead of waiting out the shutdown grace (≈ 70 s)."""
    import anyio

    with running(mock_gateway()) as (serving, port):
        client = Client(f"http://127.0.0.1:{port}/mcp", mode="legacy")
        await client.__aenter__()
        await client.list_tools()
        await anyio.sleep(0.3)  # the client's GET stream is open now
        started = time.perf_counter()
        await anyio.to_thread.run_sync(lambda: (serving.stop(), serving.thread.join(30)))
        elapsed = time.perf_counter() - started
        with contextlib.suppress(Exception):  # the session's DELETE meets a stopped server
            await client.__aexit__(None, None, None)
    assert elapsed < 10, f"stop took {elapsed:.1f} s with an MCP session open"


# -- the MCP Inspector CLI over HTTP ----------------------------------------------------------
def inspector(home, url, *args):
    require(INSPECTOR.exists(), f"{INSPECTOR} (`make clients` installs it)")
    env = {"HOME": str(home), "PATH": os.environ["PATH"], "MCP_INSPECTOR_SECRET_STORE": "memory"}
    return subprocess.run([str(INSPECTOR), "--cli", url, "--transport", "http", *args, "--format", "json", "-q"],
                          capture_output=True, text=True, env=env, timeout=120)


def test_inspector_over_http_lists_strictly_and_calls(serve, tmp_path):
    listed = inspector(tmp_path, f"{serve}/mcp", "--method", "tools/list", "--strict")
    assert listed.returncode == 0, listed.stderr
    assert [t["name"] for t in json.loads(listed.stdout)["result"]["tools"]] == TOOLS
    called = inspector(tmp_path, f"{serve}/mcp", "--method", "tools/call", "--tool-name", "system1_decide",
                       "--tool-arg", "question=Is rm -rf build/ destructive?")
    assert called.returncode == 0, called.stderr
    result = json.loads(called.stdout)["result"]
    assert result["structuredContent"]["status"] == "decided" and not result["isError"]
    bad = inspector(tmp_path, f"{serve}/mcp", "--method", "tools/call", "--tool-name", "system1_decide",
                    "--tool-args-json", '{"question": "q", "options": ["a"]}')
    assert bad.returncode == 5 and "options: List should have at least 2 items" in bad.stdout


def test_inspector_over_http_modern_era(serve, tmp_path):
    proc = inspector(tmp_path, f"{serve}/mcp", "--protocol-era", "modern", "--method", "tools/list")
    assert proc.returncode == 0, proc.stderr
    assert len(json.loads(proc.stdout)["result"]["tools"]) == 5


# -- the official conformance suite ----------------------------------------------------------
def run_scenario(url, scenario, out: Path):
    proc = subprocess.run([str(NODE), str(SUITE), "server", "--url", url, "--scenario", scenario, "-o", str(out)],
                          capture_output=True, text=True, timeout=120, cwd=out)
    [checks_file] = out.glob(f"server-{scenario}-*/checks.json")
    return proc, json.loads(checks_file.read_text())


def assert_passed(proc, checks):
    failed = [c for c in checks if c["status"] not in ("SUCCESS", "INFO")]
    assert checks and not failed, json.dumps(failed, indent=1)
    assert any(c["status"] == "SUCCESS" for c in checks)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_every_server_scenario_is_run_or_excluded_with_a_reason():
    node_tools()
    listing = subprocess.run([str(NODE), str(SUITE), "list", "--server"], capture_output=True, text=True, timeout=60)
    assert listing.returncode == 0, listing.stderr
    listed = {line.split()[1] for line in listing.stdout.splitlines() if line.strip().startswith("- ")}
    run = set(SCENARIOS) | set(FIXTURE_SCENARIOS)
    assert listed == run | set(EXCLUDED), "a scenario is new (decide: run it, or exclude it with a reason)"
    assert not run & set(EXCLUDED)


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_conformance_scenario_passes_against_system1_serve(serve, scenario, tmp_path):
    node_tools()
    proc, checks = run_scenario(f"{serve}/mcp", scenario, tmp_path)
    assert_passed(proc, checks)
    if scenario == "dns-rebinding-protection":
        rejected = next(c for c in checks if c["id"] == "localhost-host-rebinding-rejected")
        assert rejected["details"]["statusCode"] == 421  # refused by the Host check, not by accident


def with_error_fixture(gateway: Gateway):
    """The real MCP server plus `test_error_handling`, a test-only alias of a real tool error."""
    server = build_server(McpFace(gateway))
    tools_list, tools_call = server.get_request_handler("tools/list"), server.get_request_handler("tools/call")
    fixture = types.Tool(name="test_error_handling", description="conformance: a call that fails validation",
                         input_schema={"type": "object", "properties": {}, "additionalProperties": False})

    async def list_with_fixture(ctx, params):
        listed = await tools_list.handler(ctx, params)
        return listed.model_copy(update={"tools": [*listed.tools, fixture]})

    async def call_with_fixture(ctx, params):
        if params.name == fixture.name:  # the gateway's own decide tool, given no question
            params = params.model_copy(update={"name": "system1_decide", "arguments": {}})
        return await tools_call.handler(ctx, params)

    server.add_request_handler("tools/list", tools_list.params_type, list_with_fixture)
    server.add_request_handler("tools/call", tools_call.params_type, call_with_fixture)
    return server


@pytest.mark.parametrize("scenario", FIXTURE_SCENARIOS)
def test_tool_error_scenario_passes_through_the_gateways_own_error_path(mock_gateway, scenario, tmp_path):
    node_tools()
    gateway = mock_gateway()
    sock = _bind("127.0.0.1", 0)  # listening before uvicorn starts: no refused first probe
    port = sock.getsockname()[1]
    app = create_app(gateway, allowed_hosts=loopback_hosts(port), mcp_server=with_error_fixture(gateway))
    server = uvicorn.Server(uvicorn.Config(app, log_config=None, access_log=False, lifespan="on"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        wait_ready(port)
        proc, checks = run_scenario(f"http://127.0.0.1:{port}/mcp", scenario, tmp_path)
    finally:
        server.should_exit = True
        thread.join(30)
        sock.close()
    assert_passed(proc, checks)
    [check] = checks
    result = check["details"]["result"]
    assert result["isError"] is True
    assert result["content"][0]["text"].startswith("invalid_request: question: required field is missing")
    assert result["structuredContent"]["error"]["code"] == "invalid_request"


def test_the_servers_own_mcp_never_delegates_to_a_daemon(monkeypatch):
    """/mcp of `system1 serve` (and of the daemon itself) answers with the server's gateway: it
    never looks for, asks or autostarts a daemon (which would be itself, or another one)."""
    from system1_gateway.config.settings import Config, GatewaySettings
    from system1_gateway.daemon import client, dispatch
    from system1_gateway.mcp_server import Tools

    def refuse(*_a, **_k):
        raise AssertionError("the server's /mcp went to the daemon path")

    for name in ("ask", "start_daemon"):
        monkeypatch.setattr(dispatch, name, refuse)
    for name in ("find", "locate"):
        monkeypatch.setattr(client, name, refuse)
    gateway = Gateway(Config(gateway=GatewaySettings(provider="mock")))
    tools = Tools(McpFace(gateway), delegate=False)
    result = tools.delegation.answer("decide", {"question": "ok?"})
    assert result["status"] == "decided" and not any(a["provider"] == "daemon" for a in result["attempts"])
    assert tools.delegation.report("status")["order"] == ["mock"]
    tools.delegation.warm()


def test_mcp_sessions_are_capped(mock_gateway, monkeypatch):
    """Sessions were unbounded (the SDK's 10 000, each kept 30 min, ≈ 42 KB):
    past the cap a new session is refused with 503 and the open ones keep working."""
    from system1_gateway.http import app as http_app

    monkeypatch.setattr(http_app, "MCP_MAX_SESSIONS", 3)
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
    accept = {"Accept": "application/json, text/event-stream"}
    with running(mock_gateway()) as (_, port):
        opened = [call(port, "POST", "/mcp", init, headers=accept) for _ in range(4)]
        assert [status for status, _, _ in opened] == [200, 200, 200, 503], opened
        session = opened[0][1]["mcp-session-id"]
        status, _, _ = call(port, "POST", "/mcp", {"jsonrpc": "2.0", "method": "notifications/initialized"},
                            headers={**accept, "mcp-session-id": session, "mcp-protocol-version": "2025-11-25"})
        assert status == 202
