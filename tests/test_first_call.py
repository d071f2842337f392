"""The first call after install never fails: the very first decision
through the MCP SDK client (list tools, then decide at once) and through the CLI is `decided`
or `abstained`, not an error — loading is charged to the load budget, never to the request's
deadline; and over HTTP, the first /v1/decide sent the moment `system1 serve` listens.

The four variants share one home, as one user meets them one after the other: the first (the
default, MCP through the daemon it autostarts) meets the home fresh — no joined model file, no
KV cache, no bias references, nothing running — and joins, hashes and loads the model; each
later variant starts cold the way that user's next client would: no daemon or server running,
a new process that loads the model, and a question new to the engine (its prompt prefix is
decoded, not read back). Joining 1 GB once instead of four times: ≈ 15-30 s less.
"""

import json
import os
import signal
import subprocess
import sys

import pytest
from mcp import Client, StdioServerParameters

from conftest import run_cli, serve_port
from helpers.serve import call

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


QUESTIONS = {"via-the-daemon-it-starts": QUESTION, "in-process": "Is `git reset --hard HEAD~3` destructive?",
             "cli": "Is `truncate -s 0 app.log` destructive?",
             "http": "Is `docker volume rm pgdata` destructive?"}  # one new question per variant


@pytest.fixture(scope="module")
def shared_home(tmp_path_factory):
    home = tmp_path_factory.mktemp("first-call") / "home"
    home.mkdir()
    return home


@pytest.fixture
def fresh_home(shared_home, monkeypatch):
    """The module's home, cold: no daemon running (the previous variant stopped its own)."""
    monkeypatch.setenv("HOME", str(shared_home))
    monkeypatch.setenv("SYSTEM1_STATE_DIR", str(shared_home / ".system1-gateway"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(shared_home / ".config"))
    code, (status,), _ = run_cli("daemon", "status")
    assert status.get("running") is False, status
    return shared_home


def kv_files(home):
    """Prompt prefixes this home's engine has decoded and kept (one file each)."""
    return len(list((home / ".system1-gateway" / "embedded" / "kv").glob("*.kv")))


@pytest.mark.parametrize("autostart", ["1", "0"], ids=["via-the-daemon-it-starts", "in-process"])
async def test_first_mcp_decision_in_a_fresh_home_is_an_answer(fresh_home, autostart):
    """As a new user meets it: the default (autostart) starts the daemon, which loads the
    model while the call waits outside its deadline; without autostart the server loads
    it in-process."""
    variant = "via-the-daemon-it-starts" if autostart == "1" else "in-process"
    if autostart == "1":
        assert not (fresh_home / ".system1-gateway" / "models").exists()  # the home as installed: nothing joined
    kept = kv_files(fresh_home)
    env = {**os.environ, "SYSTEM1_SERVE_AUTOSTART": autostart, "SYSTEM1_SERVE_PORT": "0", **GENEROUS}
    params = StdioServerParameters(command=sys.executable, args=["-I", "-m", "system1_gateway"], env=env)
    try:
        async with Client(params) as client:
            await client.list_tools()
            result = await client.call_tool("system1_decide", {"question": QUESTIONS[variant]})
    finally:
        run_cli("daemon", "stop", env=env)
    body = result.structured_content
    assert not result.is_error, body
    assert body["status"] in ("decided", "abstained"), json.dumps(body)[:2000]
    assert body["provider"] == "embedded"
    via = [a for a in body["attempts"] if a["provider"] == "daemon"]
    assert [a["outcome"] for a in via] == (["ok"] if autostart == "1" else []), body["attempts"]
    assert kv_files(fresh_home) > kept  # its question was new: its prefix was decoded here


def test_first_cli_decision_in_a_fresh_home_is_an_answer(fresh_home):
    kept = kv_files(fresh_home)
    code, lines, stderr = run_cli("decide", QUESTIONS["cli"], env=GENEROUS, timeout=300)
    assert code == 0, (lines, stderr[-2000:])
    assert lines[0]["status"] in ("decided", "abstained"), lines
    loaded = [a for a in lines[0]["attempts"] if a["provider"] == "embedded" and a["outcome"] == "ok"]
    assert loaded and "(load budget, outside the deadline)" in (loaded[-1]["detail"] or ""), lines[0]["attempts"]
    assert kv_files(fresh_home) > kept  # its question was new: its prefix was decoded here


def test_first_decision_over_http_in_a_fresh_home_is_not_an_error(fresh_home):
    """Right after install, the HTTP face: the embedded engine, and the very first /v1/decide
    sent the moment the server listens (models still loading). (Moved from tests/test_http.py
    into the shared home: the model joined by the first variant, the server cold.)"""
    home = fresh_home
    kept = kv_files(home)
    # What is tested is that loading is not charged to the first request's deadline, not that a
    # starved CPU decodes within the default 5 s: a generous attempt and deadline.
    env = {"PATH": os.environ["PATH"], "HOME": str(home), "SYSTEM1_STATE_DIR": str(home / ".system1-gateway"),
           "XDG_CONFIG_HOME": str(home / ".config"), "SYSTEM1_SERVE_AUTOSTART": "0", **GENEROUS}
    proc = subprocess.Popen([sys.executable, "-m", "system1_gateway.cli", "serve", "--port", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=home)
    try:
        port = serve_port(proc)
        status, _, body = call(port, "POST", "/v1/decide", {"question": QUESTIONS["http"], "options": ["yes", "no"]},
                               timeout=180)
        assert body["status"] in ("decided", "abstained"), json.dumps(body)
        assert status == 200 and body["provider"] == "embedded"
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    assert kv_files(home) > kept  # its question was new: its prefix was decoded here
