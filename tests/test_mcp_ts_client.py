"""The official TypeScript SDK as a second real client, validating with strict Ajv.

`.ci/run` installs Node 22 (`node22/`) and `@modelcontextprotocol/sdk` + `ajv` (`tsclient/`)
into the tools folder (SYSTEM1_TOOLS_DIR, default `.tools/`); the script is
tests/clients/ts_client.mjs. Locally the test skips when they are missing, in CI it fails."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT, require

TOOLS = Path(os.environ.get("SYSTEM1_TOOLS_DIR", ROOT / ".tools"))
NODE = TOOLS / "node22" / "node_modules" / ".bin" / "node"
SDK = TOOLS / "tsclient" / "node_modules" / "@modelcontextprotocol" / "sdk" / "package.json"
AJV = TOOLS / "tsclient" / "node_modules" / "ajv" / "dist" / "2020.js"
SCRIPT = ROOT / "tests" / "clients" / "ts_client.mjs"
TOOL_NAMES = ["system1_decide", "system1_judge", "system1_health", "system1_capabilities", "system1_status"]


@pytest.fixture(scope="module")
def session(tmp_path_factory):
    """One run of the TS client against `python -I -m system1_gateway` (mock provider)."""
    for path, what in ((NODE, "node 22 (npm node@22)"), (SDK, "@modelcontextprotocol/sdk"), (AJV, "ajv")):
        require(path.exists(), f"{what} at {path} (`make clients` installs it)")
    home = tmp_path_factory.mktemp("ts-client")
    env = {"PATH": os.environ["PATH"], "HOME": str(home), "SYSTEM1_PROVIDER": "mock", "SYSTEM1_SERVE_AUTOSTART": "0",
           "SYSTEM1_STATE_DIR": str(home / "state"), "XDG_CONFIG_HOME": str(home / "xdg")}
    proc = subprocess.run([str(NODE), str(SCRIPT), str(TOOLS), sys.executable, "-I", "-m", "system1_gateway"],
                          capture_output=True, text=True, env=env, timeout=90)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return json.loads(proc.stdout)


def test_ts_sdk_connects_and_lists_the_tools(session):
    assert session["server"]["name"] == "system1-gateway"
    assert session["tools"] == TOOL_NAMES
    assert session["stillServing"] == 5


def test_strict_ajv_compiles_every_published_schema(session):
    # Tool input/output schemas and the ones in system1_capabilities, Ajv 2020 strict mode.
    assert session["schemas"] == {name: {"input": "ok", "output": "ok"} for name in TOOL_NAMES}
    assert session["capabilitySchemas"] == dict.fromkeys(
        ["judge_request", "judge_result", "decide_request", "decide_response"], "ok")
    assert session["control"] == 'strict mode: unknown keyword: "discriminator"'  # the check can fail


def test_ts_sdk_calls_decide_and_judge(session):
    # The SDK validated both structuredContent values against the output schemas (strict Ajv).
    assert session["decideArgumentsValid"] is True and session["judgeArgumentsValid"] is True
    assert session["decide"]["isError"] is False
    assert session["decide"]["structuredContent"]["status"] == "decided"
    judge = session["judge"]["structuredContent"]
    assert session["judge"]["isError"] is False and judge["status"] == "answered"
    assert {k: a["type"] for k, a in judge["answers"].items()} == {"d": "noul", "t": "choice"}


def test_ts_sdk_sees_argument_errors_as_tool_errors(session):
    assert session["badArgumentsValid"] is False  # the input schema rejects it too
    assert session["badArguments"]["isError"] is True
    assert "options: List should have at least 2 items" in session["badArguments"]["text"]


def test_ts_sdk_gets_unknown_tool_as_mcp_error(session):
    error = session["unknownTool"]
    assert error is not None, "an unknown tool must be a JSON-RPC error, not a result"
    assert error["isMcpError"] is True and error["code"] == -32602
    assert "Unknown tool: system1_nope" in error["message"]
    assert error["data"] == {"name": "system1_nope", "tools": TOOL_NAMES}
