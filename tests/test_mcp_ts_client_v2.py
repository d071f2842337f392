"""The v2 TypeScript SDK client (@modelcontextprotocol/client 2.4.0, the line that speaks
MCP 2026-07-28) as a real client of both faces: the stdio server (`python -I -m
system1_gateway`, what `system1 mcp` runs) and `/mcp` over HTTP of the per-user daemon (its
token from the port file) and of `system1 serve` (a `[serve] api_key_env` key).

Per face the script (tests/clients/ts_client_v2.mjs) connects three times: the client's
default negotiation ("legacy": the 2025 initialize handshake), "auto" (a `server/discover`
probe) and a pin to 2026-07-28. `.ci/run` installs Node 22 (`node22/`) and the client + Ajv
(`tsclient2/`) into the tools folder (SYSTEM1_TOOLS_DIR, default `.tools/`). Locally the tests
skip when they are missing, in CI they fail."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import ROOT, require
from helpers.serve import KEY, call, serving, wait_ready

TOOLS = Path(os.environ.get("SYSTEM1_TOOLS_DIR", ROOT / ".tools"))
NODE = TOOLS / "node22" / "node_modules" / ".bin" / "node"
CLIENT = TOOLS / "tsclient2" / "node_modules" / "@modelcontextprotocol" / "client" / "package.json"
AJV = TOOLS / "tsclient2" / "node_modules" / "ajv" / "dist" / "2020.js"
SCRIPT = ROOT / "tests" / "clients" / "ts_client_v2.mjs"
TOOL_NAMES = ["system1_decide", "system1_judge", "system1_health", "system1_capabilities", "system1_status"]
# Negotiation mode → (protocol version, era) the gateway ends up speaking with the v2 client.
NEGOTIATED = {"legacy": ("2025-11-25", "legacy"), "auto": ("2026-07-28", "modern"),
              "pinned": ("2026-07-28", "modern")}
FACES = ["stdio", "daemon", "serve"]


def installed():
    for path, what in ((NODE, "node 22 (npm node@22)"), (CLIENT, "@modelcontextprotocol/client 2.x"), (AJV, "ajv")):
        require(path.exists(), f"{what} at {path} (`make clients` installs it)")


def base_env(home: Path) -> dict[str, str]:
    return {"PATH": os.environ["PATH"], "HOME": str(home), "SYSTEM1_PROVIDER": "mock", "SYSTEM1_SERVE_AUTOSTART": "0",
            "SYSTEM1_STATE_DIR": str(home / "state"), "XDG_CONFIG_HOME": str(home / "xdg")}


def run_client(env: dict[str, str], *args: str) -> dict:
    proc = subprocess.run([str(NODE), str(SCRIPT), str(TOOLS), *args], capture_output=True, text=True, env=env,
                          timeout=150)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return json.loads(proc.stdout)


def cli(env: dict[str, str], *args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "system1_gateway.cli", *args], env=env, capture_output=True,
                          text=True, timeout=timeout, cwd=env["HOME"])


def daemon_face(home: Path):
    """`system1 daemon start` on a free port; yields (url, its per-user token, env)."""
    env = {**base_env(home), "SYSTEM1_SERVE_PORT": "0"}
    started = cli(env, "daemon", "start", timeout=120)
    assert started.returncode == 0, started.stdout + started.stderr
    port_file = home / "state" / "daemon" / "daemon.port"
    try:
        end = time.monotonic() + 60
        while not (port_file.exists() and port_file.read_text().strip().endswith("}")):
            assert time.monotonic() < end, "no daemon port file within 60 s"
            time.sleep(0.05)
        record = json.loads(port_file.read_text())
        assert record["token"], "the daemon has a per-user token"
        wait_ready(record["port"])
        yield f"http://127.0.0.1:{record['port']}/mcp", record["token"], env
    finally:
        stopped = cli(env, "daemon", "stop")
        assert stopped.returncode == 0, stopped.stdout + stopped.stderr


def serve_face(home: Path):
    """`system1 serve --port 0` with `[serve] api_key_env`; yields (url, the key, env)."""
    config = home / "config.toml"
    config.write_text('[gateway]\nprovider = "mock"\n[serve]\napi_key_env = "S1_V2_KEY"\n')
    env = {**base_env(home), "SYSTEM1_CONFIG": str(config), "S1_V2_KEY": KEY}
    with serving(env, cwd=home) as (_, port):
        yield f"http://127.0.0.1:{port}/mcp", KEY, env


@pytest.fixture(scope="module", params=FACES)
def face(request, tmp_path_factory):
    """(face name, the client's report, extra facts) for one run of the v2 client."""
    installed()
    home = tmp_path_factory.mktemp(f"ts-v2-{request.param}")
    if request.param == "stdio":
        yield request.param, run_client(base_env(home), "stdio", sys.executable, "-I", "-m", "system1_gateway"), {}
        return
    with_auth = daemon_face if request.param == "daemon" else serve_face
    for url, secret, env in with_auth(home):
        port = int(url.rsplit(":", 1)[1].split("/")[0])
        status, _, body = call(port, "POST", "/mcp", {"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
        report = run_client({**env, "SYSTEM1_TEST_BEARER": secret}, "http", url)
        yield request.param, report, {"unauthenticated": (status, body)}


def test_v2_client_is_the_pinned_release(face):
    _, report, _ = face
    assert report["client"] == "2.4.0"


@pytest.mark.parametrize("mode", NEGOTIATED)
def test_negotiated_protocol_version(face, mode):
    name, report, _ = face
    session = report[mode]
    assert (session["protocolVersion"], session["era"]) == NEGOTIATED[mode], (name, session)
    if session["era"] == "modern":  # server/discover offered the modern revision
        assert session["supportedVersions"] == ["2026-07-28"]
    assert session["server"]["name"] == "system1-gateway" and session["toolsCapability"] is True


@pytest.mark.parametrize("mode", NEGOTIATED)
def test_tools_list_and_strict_schemas(face, mode):
    session = face[1][mode]
    assert session["tools"] == TOOL_NAMES and session["stillServing"] == 5
    assert session["schemas"] == {name: {"input": "ok", "output": "ok"} for name in TOOL_NAMES}


@pytest.mark.parametrize("mode", NEGOTIATED)
def test_decide_and_judge_results_validate_against_the_output_schemas(face, mode):
    session = face[1][mode]
    assert session["decideArgumentsValid"] is True and session["judgeArgumentsValid"] is True
    assert session["sdkValidated"] == [True, True]  # the SDK checked both structuredContent values
    decide, judge = session["decide"], session["judge"]
    assert decide["isError"] is False and decide["outputValid"] is True
    assert decide["structuredContent"]["status"] == "decided"
    assert judge["isError"] is False and judge["outputValid"] is True
    assert judge["structuredContent"]["status"] == "answered"
    assert {k: a["type"] for k, a in judge["structuredContent"]["answers"].items()} == {"d": "noul", "t": "choice"}


@pytest.mark.parametrize("mode", NEGOTIATED)
def test_errors(face, mode):
    session = face[1][mode]
    bad = session["badArguments"]  # invalid arguments: a tool error the model can correct
    assert bad["isError"] is True and bad["outputValid"] is True
    assert bad["text"].startswith("invalid_request: options: List should have at least 2 items")
    unknown = session["unknownTool"]  # an unknown tool: a JSON-RPC protocol error
    assert unknown is not None and unknown["isProtocolError"] is True and unknown["code"] == -32602
    assert "Unknown tool: system1_nope" in unknown["message"]
    assert unknown["data"] == {"name": "system1_nope", "tools": TOOL_NAMES}


def test_http_faces_refuse_a_client_without_the_key(face):
    name, report, facts = face
    if name == "stdio":  # no HTTP, no key: the v2 client never tried a keyless connection
        assert "withoutKey" not in report and facts == {}
        return
    status, body = facts["unauthenticated"]
    assert status == 401 and body["error"]["code"] == "unauthorized"
    # The v2 client fails to connect with a typed HTTP error carrying the 401 in every mode
    # (its code for a plain 401 without an auth provider: legacy "not implemented", else "authentication").
    assert report["withoutKey"] == {
        "legacy": {"error": "SdkHttpError", "code": "CLIENT_HTTP_NOT_IMPLEMENTED", "status": 401},
        "auto": {"error": "SdkHttpError", "code": "CLIENT_HTTP_AUTHENTICATION", "status": 401},
        "pinned": {"error": "SdkHttpError", "code": "CLIENT_HTTP_AUTHENTICATION", "status": 401}}
