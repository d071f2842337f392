"""The first call after install never fails (issue 10, item 4): in a fresh HOME and state
directory (no joined model file, no KV cache, no bias references), the very first decision
through the MCP SDK client (list tools, then decide at once) and through the CLI is
`decided` or `abstained`, not an error — loading is charged to the load budget, never to the
request's deadline. (The HTTP face has its own test in tests/test_http.py.)"""

import json
import os
import sys

import pytest
from mcp import Client, StdioServerParameters

from conftest import run_cli

pytestmark = [pytest.mark.models, pytest.mark.anyio]

QUESTION = "Is `git push --force origin main` destructive?"
# What is under test is the first run (join, hash, load in a fresh home) ending in an answer, not
# that a 1.5B model decodes a question it has never seen within the default 5 s attempt on a
# CPU-starved machine (under `stress-ng --cpu 2` it does not): the attempt and the deadline are
# generous. That loading never counts against a deadline is proven with a clock that cannot
# lose (tests/test_load_budget.py) and is read here from what the first CLI attempt reports.
GENEROUS = {"SYSTEM1_TIMEOUT_S": "120", "SYSTEM1_DEADLINE_S": "150"}


@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.fixture
def fresh_home(tmp_path, monkeypatch):
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("SYSTEM1_STATE_DIR", str(home / ".system1-gateway"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    return home


@pytest.mark.parametrize("autostart", ["1", "0"], ids=["via-the-daemon-it-starts", "in-process"])
async def test_first_mcp_decision_in_a_fresh_home_is_an_answer(fresh_home, autostart):
    """As a new user meets it: the default (autostart) starts the daemon, which loads the
    model while the call waits outside its deadline; without autostart the server loads
    it in-process."""
    assert not (fresh_home / ".system1-gateway" / "models").exists()
    env = {**os.environ, "SYSTEM1_SERVE_AUTOSTART": autostart, "SYSTEM1_SERVE_PORT": "0", **GENEROUS}
    params = StdioServerParameters(command=sys.executable, args=["-I", "-m", "system1_gateway"], env=env)
    try:
        async with Client(params) as client:
            await client.list_tools()
            result = await client.call_tool("system1_decide", {"question": QUESTION})
    finally:
        run_cli("daemon", "stop", env=env)
    body = result.structured_content
    assert not result.is_error, body
    assert body["status"] in ("decided", "abstained"), json.dumps(body)[:2000]
    assert body["provider"] == "embedded"
    via = [a for a in body["attempts"] if a["provider"] == "daemon"]
    assert [a["outcome"] for a in via] == (["ok"] if autostart == "1" else []), body["attempts"]


def test_first_cli_decision_in_a_fresh_home_is_an_answer(fresh_home):
    code, lines, stderr = run_cli("decide", QUESTION, env=GENEROUS, timeout=300)
    assert code == 0, (lines, stderr[-2000:])
    assert lines[0]["status"] in ("decided", "abstained"), lines
    loaded = [a for a in lines[0]["attempts"] if a["provider"] == "embedded" and a["outcome"] == "ok"]
    assert loaded and "(load budget, outside the deadline)" in (loaded[-1]["detail"] or ""), lines[0]["attempts"]
