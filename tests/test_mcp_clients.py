"""Clients nobody here wrote: the MCP Inspector CLI (TypeScript SDK) and Claude Code itself.

`.ci/run` installs both from npm into a tools folder (SYSTEM1_TOOLS_DIR, default `.tools/`);
locally the tests skip when they are missing, in CI (SYSTEM1_REQUIRE_CLIENTS=1) they fail."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT, require

TOOLS = Path(os.environ.get("SYSTEM1_TOOLS_DIR", ROOT / ".tools"))
INSPECTOR = TOOLS / "inspector" / "node_modules" / ".bin" / "mcp-inspector"
CLAUDE = TOOLS / "cc" / "node_modules" / ".bin" / "claude"
SERVER = [sys.executable, "-I", "-m", "system1_gateway"]


def need(tool: Path):
    require(tool.exists(), f"{tool}")


def inspector(home, *args, timeout=120):
    need(INSPECTOR)
    env = {"HOME": str(home), "PATH": os.environ["PATH"], "MCP_INSPECTOR_SECRET_STORE": "memory"}
    state = f"SYSTEM1_STATE_DIR={home / 'state'}"
    return subprocess.run(
        [str(INSPECTOR), "--cli", "-e", "SYSTEM1_PROVIDER=mock", "-e", state, "-e", "SYSTEM1_SERVE_AUTOSTART=0", *args, "--format", "json", "-q", "--", *SERVER],
        capture_output=True, text=True, env=env, timeout=timeout,
    )


def test_inspector_strict_tools_list(tmp_path):
    proc = inspector(tmp_path, "--method", "tools/list", "--strict")
    assert proc.returncode == 0, proc.stderr
    assert "Warning" not in proc.stderr  # portable schemas: not even a warning
    names = [t["name"] for t in json.loads(proc.stdout)["result"]["tools"]]
    assert names == ["system1_decide", "system1_judge", "system1_health", "system1_capabilities", "system1_status"]


def test_inspector_calls_decide(tmp_path):
    proc = inspector(tmp_path, "--method", "tools/call", "--tool-name", "system1_decide",
                     "--tool-arg", "question=Is rm -rf build/ destructive?")
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)["result"]
    assert result["structuredContent"]["status"] == "decided" and not result["isError"]


def test_inspector_bad_argument_exits_5(tmp_path):
    proc = inspector(tmp_path, "--method", "tools/call", "--tool-name", "system1_decide",
                     "--tool-args-json", '{"question": "q", "options": ["a"]}')
    assert proc.returncode == 5
    assert "options: List should have at least 2 items" in proc.stdout


def test_inspector_modern_era(tmp_path):
    proc = inspector(tmp_path, "--protocol-era", "modern", "--method", "tools/list")
    assert proc.returncode == 0, proc.stderr
    assert len(json.loads(proc.stdout)["result"]["tools"]) == 5


@pytest.fixture
def claude_home(tmp_path):
    need(CLAUDE)
    env = {"HOME": str(tmp_path), "PATH": f"{CLAUDE.parent}:{os.environ['PATH']}", "DISABLE_AUTOUPDATER": "1",
           "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "SYSTEM1_PROVIDER": "mock",
           "SYSTEM1_STATE_DIR": str(tmp_path / "state"), "SYSTEM1_SERVE_AUTOSTART": "0"}
    return env


@pytest.mark.parametrize("negotiation", ["default", "legacy"])
def test_claude_code_connects(claude_home, negotiation):
    env = dict(claude_home)
    add = subprocess.run([str(CLAUDE), "mcp", "add", "--scope", "user", "--transport", "stdio", "system1",
                          "-e", "SYSTEM1_PROVIDER=mock", "--", *SERVER], capture_output=True, text=True, env=env, timeout=120)
    assert add.returncode == 0, add.stderr
    if negotiation == "legacy":
        env["MCP_PROTOCOL_NEGOTIATION"] = "legacy"
    get = subprocess.run([str(CLAUDE), "mcp", "get", "system1"], capture_output=True, text=True, env=env, timeout=120)
    assert "Connected" in get.stdout, get.stdout + get.stderr  # exit code is 0 either way


def test_install_claude_prints_and_applies(claude_home):
    code = subprocess.run([sys.executable, "-m", "system1_gateway.cli", "install-claude"], capture_output=True,
                          text=True, env=claude_home, timeout=60)
    assert code.returncode == 0
    assert code.stdout.strip() == (f"claude mcp add --scope user --transport stdio system1 -- {sys.executable} -I -m system1_gateway")
    assert "'--'" in code.stderr  # the PowerShell note
    applied = subprocess.run([sys.executable, "-m", "system1_gateway.cli", "install-claude", "--apply"],
                             capture_output=True, text=True, env=claude_home, timeout=120)
    assert applied.returncode == 0, applied.stderr
    get = subprocess.run([str(CLAUDE), "mcp", "get", "system1"], capture_output=True, text=True, env=claude_home, timeout=120)
    assert "Connected" in get.stdout, get.stdout


def test_install_claude_without_claude_on_path(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "system1_gateway.cli", "install-claude", "--apply"],
                          capture_output=True, text=True, env={**os.environ, "PATH": "/nonexistent"}, timeout=60)
    assert proc.returncode == 1 and "not on PATH" in proc.stderr
