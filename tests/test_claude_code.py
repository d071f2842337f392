"""The plugin end to end, through the real `claude` CLI (installed by `.ci/run` from npm) in a
temporary HOME, against a local mock of the Anthropic Messages API (tests/mock_anthropic.py):
the plugin installed from this repository as a local marketplace, the MCP server registered
with the command `system1 install-claude` prints, a warm daemon answering with the embedded
heads. Assertions are on what the mock receives, what the hooks log and what ran.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from conftest import ROOT, require
from mock_anthropic import MockAnthropic, classifier_allows, last_user_blocks, tool_results, user_text
from system1_gateway.store.base import FLUSH_EVERY_S

TOOLS = Path(os.environ.get("SYSTEM1_TOOLS_DIR", ROOT / ".tools"))
CLAUDE = TOOLS / "cc" / "node_modules" / ".bin" / "claude"
HINT = "System-1 routing hint:"
LONG_PROMPT = "Explain how the retry logic in src/net/client.py decides when to give up on a request"

pytestmark = pytest.mark.models  # a real daemon with the embedded engine's heads


def tracked_tree(dest: Path) -> Path:
    """The repository as a clean clone has it (tracked and new files, nothing ignored): what
    a user's `git clone` holds. (A directory marketplace is copied whole into Claude Code's
    plugin cache, ignored files included: anthropics/claude-code#93423.)"""
    listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT, capture_output=True,
                            check=True).stdout.decode().split("\0")
    for name in filter(None, listed):
        source = ROOT / name
        if source.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, dest / name)
    return dest


def api_env(api: MockAnthropic) -> dict[str, str]:
    """A session's API: the mock. (Only sessions get a key: `claude plugin …` and `claude mcp …`
    with a key set spend ≈ 17 s trying to reach the real API first.)"""
    return {"ANTHROPIC_BASE_URL": api.url, "ANTHROPIC_API_KEY": "sk-ant-api03-mock"}


class ClaudeHome:
    """A temporary HOME with the plugin installed, the server registered, a config and a daemon."""

    def __init__(self, base: Path):
        self.base = base
        self.home, self.project, self.install = base / "home", base / "project", base / "install"
        for path in (self.home, self.project, self.install):
            path.mkdir(parents=True)
        (self.install / "venv").symlink_to(Path(sys.prefix))  # the gateway's venv, as install.sh makes it
        subprocess.run(["git", "init", "-q", str(self.project)], check=True)
        self.config = base / "xdg" / "system1" / "config.toml"
        self.env = {
            "HOME": str(self.home), "PATH": os.environ["PATH"], "DISABLE_AUTOUPDATER": "1",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "ENABLE_TOOL_SEARCH": "false", "SYSTEM1_STATE_DIR": str(base / "state"),
            "XDG_CONFIG_HOME": str(base / "xdg"), "SYSTEM1_INSTALL_DIR": str(self.install),
            "SYSTEM1_SERVE_PORT": "0", "SYSTEM1_SERVE_AUTOSTART": "0",
        }
        self.log = base / "state" / "logs" / "routing.jsonl"

    def run(self, *args: str, timeout: float = 120, env: dict[str, str] | None = None,
            cwd: Path | None = None) -> subprocess.CompletedProcess:
        return subprocess.run([str(CLAUDE), *args], capture_output=True, text=True, timeout=timeout,
                              env={**self.env, **(env or {})}, cwd=cwd or self.project)

    def system1(self, *args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "system1_gateway.cli", *args], capture_output=True, text=True,
                              env={**self.env}, timeout=120)

    def write_config(self, **tables: dict[str, Any]) -> None:
        lines = ['[providers.embedded]', 'tier = "fast"']
        for table, values in tables.items():
            lines.append(f"[{table}]")
            lines += [f"{key} = {json.dumps(value)}" for key, value in values.items()]
        self.config.parent.mkdir(parents=True, exist_ok=True)
        self.config.write_text("\n".join(lines) + "\n")

    def log_entries(self) -> list[dict[str, Any]]:
        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text().splitlines() if line.strip()]

    def engine_requests(self) -> int:
        # the daemon flushes its day's counters once a second (off the request path): wait
        # out one flush so counts of an earlier test are in before this one is read
        time.sleep(FLUSH_EVERY_S + 0.2)
        status = json.loads(self.system1("status").stdout)
        return status["today"]["requests"]

    def prompt(self, api: MockAnthropic, text: str, *allowed: str, mode: str | None = None,
               env: dict[str, str] | None = None) -> dict[str, Any]:
        args = ["-p", text, "--output-format", "json"] + (["--permission-mode", mode] if mode else [])
        if allowed:
            args += ["--allowedTools", *allowed]
        proc = self.run(*args, env={**api_env(api), **(env or {})})
        assert proc.returncode == 0, proc.stdout + proc.stderr
        return json.loads(proc.stdout)


ROUTING_ON = {"routing": {"enabled": True, "hint": True, "min_confidence": 0.5, "log_dirs": []},
              "guard": {"enabled": True, "min_confidence": 0.6}}


@pytest.fixture(scope="module")
def cc(tmp_path_factory):
    require(CLAUDE.exists(), str(CLAUDE))
    base = tmp_path_factory.mktemp("claude-code")
    home = ClaudeHome(base)
    market = tracked_tree(base / "clone")
    added = home.run("plugin", "marketplace", "add", str(market))
    assert added.returncode == 0, added.stdout + added.stderr
    installed = home.run("plugin", "install", "system1@system1-gateway", "--scope", "user")
    assert installed.returncode == 0, installed.stdout + installed.stderr
    register = home.system1("install-claude").stdout.split()
    assert register[:3] == ["claude", "mcp", "add"]
    registered = home.run(*register[1:])
    assert registered.returncode == 0, registered.stdout + registered.stderr
    home.write_config(routing={**ROUTING_ON["routing"], "log_dirs": [str(home.project)]}, guard=ROUTING_ON["guard"])
    started = home.system1("daemon", "start")
    assert started.returncode == 0, started.stdout + started.stderr
    end = time.monotonic() + 120
    while json.loads(home.system1("daemon", "status").stdout).get("health") != "ok":
        assert time.monotonic() < end, "the daemon did not become ready"
        time.sleep(0.2)
    yield home
    home.system1("daemon", "stop")


def test_plugin_validates_strictly_with_the_real_cli(tmp_path):
    require(CLAUDE.exists(), str(CLAUDE))
    proc = subprocess.run([str(CLAUDE), "plugin", "validate", str(ROOT), "--strict"], capture_output=True, text=True,
                          env={"HOME": str(tmp_path), "PATH": os.environ["PATH"], "DISABLE_AUTOUPDATER": "1"},
                          timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Validation passed" in proc.stdout
    for skill in ("setup", "choose-model", "report", "calibrate", "doctor", "add-provider", "toggle"):
        assert f"skills: system1:{skill}" in proc.stdout


def test_the_plugin_is_installed_and_enabled_from_the_local_marketplace(cc):
    listed = cc.run("plugin", "list")
    assert "system1@system1-gateway" in listed.stdout and "enabled" in listed.stdout
    server = cc.run("mcp", "get", "system1", timeout=180)  # spawns the registered server, checks it
    assert "Connected" in server.stdout, server.stdout + server.stderr


def test_a_long_prompt_gets_the_hint_in_the_next_request(cc):
    before = len(cc.log_entries())
    with MockAnthropic() as api:
        cc.prompt(api, LONG_PROMPT)
    first = api.main_requests()[0]
    text = user_text(first)
    assert HINT in text and "→ subagent model: haiku" in text, text[-2000:]
    entries = cc.log_entries()[before:]
    prompts = [e for e in entries if e["source"] == "prompt"]
    assert len(prompts) == 1 and prompts[0]["prompt"] == LONG_PROMPT and prompts[0]["rule_tier"] == "haiku"
    assert set(prompts[0]["features"]) == {"read_only", "design", "review", "specified"}
    assert prompts[0]["repo"] == str(cc.project)


@pytest.mark.parametrize("prompt", ["Explain the retry logic please",
                                    "<task-notification>\n<task-id>a1</task-id>\n<status>completed</status>\n"
                                    "<summary>Agent finished reading every module of the repository and "
                                    "reported back</summary>\n</task-notification>"])
def test_short_prompts_and_hand_backs_get_no_hint_and_no_engine_call(cc, prompt):
    before, calls = len(cc.log_entries()), cc.engine_requests()
    with MockAnthropic() as api:
        cc.prompt(api, prompt)
    assert api.main_requests() and all(HINT not in user_text(r) for r in api.requests)
    assert cc.engine_requests() == calls and len(cc.log_entries()) == before


def test_the_mcp_tool_result_comes_back_in_the_next_request(cc):
    def script(body):
        if tool_results(body):
            return [{"type": "text", "text": "done."}]
        return [{"type": "tool_use", "name": "mcp__system1__system1_decide",
                 "input": {"question": "git push --force origin main", "builtin": "destructive"}}]

    with MockAnthropic(script) as api:
        cc.prompt(api, "Use the system1 tool to judge whether force-pushing to main is destructive here",
                   "mcp__system1__system1_decide")
    results = [r for r in api.main_requests() if tool_results(r)]
    assert results, "no request carried the tool result"
    result = tool_results(results[0])[0]
    content = result["content"] if isinstance(result["content"], str) else result["content"][0]["text"]
    decision = json.loads(content)
    assert decision["status"] == "decided" and decision["decision"] == "yes", decision
    # a force-push is decided by the policy rules (docs/guard.md), with no engine call
    assert decision["provider"] == "rules" and decision["model"] == "rule:git-push-force"


def test_an_agent_spawn_is_recorded_with_the_chosen_model(cc):
    brief = "Read every module under src/ and list the public functions that have no docstring"

    def script(body):
        last = " ".join(b.get("text", "") for b in last_user_blocks(body) if b.get("type") == "text")
        if "Spawn a helper agent" in last:  # the main loop's first turn, not the subagent's, not the hand-back
            return [{"type": "tool_use", "name": "Agent",
                     "input": {"description": "Find undocumented functions", "prompt": brief,
                               "subagent_type": "general-purpose", "model": "haiku"}}]
        return [{"type": "text", "text": "done."}]

    before = len(cc.log_entries())
    with MockAnthropic(script) as api:
        cc.prompt(api, "Spawn a helper agent: it should list the public functions that have no docstring", "Agent")
    spawns = [e for e in cc.log_entries()[before:] if e["source"] == "agent"]
    assert len(spawns) == 1, cc.log_entries()[before:]
    spawn = spawns[0]
    assert spawn["model"] == "haiku" and spawn["subagent_type"] == "general-purpose" and spawn["prompt"] == brief
    assert spawn["tool_use_id"].startswith("toolu_mock") and spawn["rule_tier"] in ("haiku", "sonnet", "opus")
    assert set(spawn["features"]) == {"read_only", "design", "review", "specified"}


def _transcript_results(cc: ClaudeHome, session: str) -> dict[str, dict[str, Any]]:
    """{tool_use_id: toolUseResult} of one session's transcript (what Claude Code says ran)."""
    found: dict[str, dict[str, Any]] = {}
    for path in (cc.home / ".claude" / "projects").glob(f"*/{session}.jsonl"):
        for line in path.read_text().splitlines():
            record = json.loads(line)
            result, content = record.get("toolUseResult"), (record.get("message") or {}).get("content")
            if isinstance(result, dict) and isinstance(content, list):
                for block in content:
                    if isinstance(block, dict) and block.get("type") == "tool_result":
                        found[block["tool_use_id"]] = result
    return found


# (mode, READY recorded, what the orchestrator's Agent call adds, why the hook leaves it, the model that runs)
SET_CASES = [("set", True, {}, None, "haiku"),
             ("hint", True, {}, None, "opus"),
             ("set", False, {}, "not_ready", "opus"),
             ("set", True, {"subagent_type": "fork"}, "fork", "opus"),
             ("set", True, {"model": "sonnet"}, "explicit_model", "sonnet")]


def _spawn_script(call: dict[str, Any]):
    """The main loop's model: on the prompt asking for a helper agent, one Agent call with
    `call` as its input; everything else (the subagent's own requests included) gets "done."."""
    def script(body):
        last = " ".join(b.get("text", "") for b in last_user_blocks(body) if b.get("type") == "text")
        if "Spawn a helper agent" in last and call["prompt"] not in user_text(body):
            return [{"type": "tool_use", "name": "Agent", "input": call}]
        return [{"type": "text", "text": "done."}]
    return script


@pytest.mark.parametrize("mode, ready, given, why_not, runs", SET_CASES,
                         ids=["set", "hint", "set-not-ready", "fork", "orchestrator-chose"])
def test_set_mode_sets_the_subagent_model_only_when_it_may(cc, mode, ready, given, why_not, runs):
    """A read-only, specified brief (the rule: haiku, effort low) spawned by an Opus main loop:
    in mode "set" with a READY verdict the Agent hook's updatedInput makes the subagent's
    Messages requests go to Haiku (and the transcript's resolvedModel says so); in "hint"
    mode, before READY, for a fork and over the orchestrator's own choice it changes nothing."""
    brief = LONG_PROMPT  # the embedded engine reads it as read-only and specified (see the hint test)
    call = {"description": "Explain the retry logic", "prompt": brief, "subagent_type": "general-purpose", **given}

    script = _spawn_script(call)

    gate = cc.base / "state" / "routing" / "set.json"
    if ready:
        gate.parent.mkdir(parents=True, exist_ok=True)
        gate.write_text(json.dumps({"verdict": "READY", "at": "2026-12-03T10:00:00Z", "evaluate": {}}))
    cc.write_config(routing={**ROUTING_ON["routing"], "log_dirs": [str(cc.project)], "mode": mode},
                    guard=ROUTING_ON["guard"])
    before = len(cc.log_entries())
    try:
        with MockAnthropic(script) as api:
            cc.prompt(api, "Spawn a helper agent: it should explain the retry logic of the network client", "Agent")
    finally:
        gate.unlink(missing_ok=True)
        cc.write_config(routing={**ROUTING_ON["routing"], "log_dirs": [str(cc.project)]}, guard=ROUTING_ON["guard"])
    spawns = [e for e in cc.log_entries()[before:] if e["source"] == "agent"]
    assert len(spawns) == 1, cc.log_entries()[before:]
    spawn = spawns[0]
    assert spawn["mode"] == mode and spawn["rule_tier"] == "haiku" and spawn["why_not_set"] == why_not, spawn
    assert (spawn["set_model"], spawn["set_effort"]) == (("haiku", "low") if runs == "haiku" else (None, None))
    main = [r for r in api.main_requests() if brief not in user_text(r)]
    subagent = [r for r in api.main_requests() if brief in user_text(r)]
    assert main and subagent, [r.get("model") for r in api.requests]
    assert all("opus" in r["model"] for r in main)
    assert all(runs in r["model"] for r in subagent), [r["model"] for r in subagent]
    if runs == "haiku":
        assert all(r.get("output_config", {}).get("effort") == "low" for r in subagent), subagent[0].get("output_config")
    resolved = _transcript_results(cc, spawn["session_id"])[spawn["tool_use_id"]].get("resolvedModel")
    assert resolved and runs in resolved, resolved


# Realistic lookup briefs, as an orchestrator writes them, at the shipped defaults
# (`min_confidence` 0.8, no fitted bar, the shipped rule) and with no log_dirs. Measured first
# with the embedded heads (the hook's decision on the same features, 2026-12-07): of 31 such
# briefs only 2 cleared every bar at 0.8; the first here is one (read_only yes 0.94, specified
# 0.87, design and review no at ≥ 0.94): set to Haiku. The second is the common case the issue
# reports: read_only is answered *no* at 0.67 (review 0.86, specified 0.94), under the bar, so
# the spawn stays on the parent's Opus and is counted as below_threshold on read_only.
DEFAULTS_CASES = [("Summarise how configuration is loaded in this repo: which files are read, in what order, with "
                   "file paths and relevant lines. Do not modify anything.", "haiku", None, None),
                  ("Find where the HTTP retry policy is configured in this repo and report the file paths and "
                   "relevant lines. Do not modify anything.", "opus", "below_threshold", "read_only")]


@pytest.mark.parametrize("brief, runs, why_not, below", DEFAULTS_CASES, ids=["set", "below-threshold"])
def test_set_mode_at_the_shipped_defaults_with_a_realistic_lookup_brief(cc, brief, runs, why_not, below):
    """Mode "set" READY, `min_confidence` left at its default, no log_dirs: the spawn runs on
    what the hook decided, and whatever it decided is recorded without the brief's text and
    shown by `system1 status` (outcome and reason)."""
    call = {"description": "Find the retry settings", "prompt": brief, "subagent_type": "general-purpose"}

    script = _spawn_script(call)

    gate = cc.base / "state" / "routing" / "set.json"
    gate.parent.mkdir(parents=True, exist_ok=True)
    gate.write_text(json.dumps({"verdict": "READY", "at": "2026-12-03T10:00:00Z", "evaluate": {}}))
    defaults = {k: v for k, v in ROUTING_ON["routing"].items() if k != "min_confidence"}
    cc.write_config(routing={**defaults, "log_dirs": [], "mode": "set"}, guard=ROUTING_ON["guard"])
    before = len(cc.log_entries())
    try:
        with MockAnthropic(script) as api:
            cc.prompt(api, "Spawn a helper agent: it should find where the retry settings are configured", "Agent")
        status = json.loads(cc.system1("status").stdout)
    finally:
        gate.unlink(missing_ok=True)
        cc.write_config(routing={**ROUTING_ON["routing"], "log_dirs": [str(cc.project)]}, guard=ROUTING_ON["guard"])
    spawns = [e for e in cc.log_entries()[before:] if e["source"] == "agent"]
    assert len(spawns) == 1, cc.log_entries()[before:]
    spawn = spawns[0]
    assert spawn["prompt"] is None and spawn["description"] is None and spawn["text_logged"] is False, spawn
    assert brief not in cc.log.read_text()
    assert spawn["mode"] == "set" and spawn["why_not_set"] == why_not, spawn
    last = status["routing"]["last_spawn"]
    if why_not is None:
        assert (spawn["set_model"], spawn["set_effort"]) == ("haiku", "low"), spawn
        assert last["outcome"] == "set" and last["reason"] == "haiku, effort low", last
    else:
        assert spawn["set_model"] is None and below in spawn["below"], spawn
        assert last["outcome"] == why_not and last["reason"].startswith(below), last
    subagent = [r for r in api.main_requests() if brief in user_text(r)]
    assert subagent and all(runs in r["model"] for r in subagent), [r["model"] for r in subagent]


def _bash_script(command):
    def script(body):
        if tool_results(body):
            return [{"type": "text", "text": "done."}]
        return [{"type": "tool_use", "name": "Bash", "input": {"command": command, "description": "run it"}}]
    return script


def guard_entries(cc: ClaudeHome, command: str) -> list[dict[str, Any]]:
    return [e for e in cc.log_entries() if e["source"] == "guard" and e["command"] == command]


def test_the_guard_asks_before_rm_rf_and_the_command_does_not_run(cc):
    build = cc.project / "build"
    build.mkdir(exist_ok=True)
    (build / "artifact.bin").write_text("keep me")
    before = len(guard_entries(cc, "rm -rf ./build"))
    with MockAnthropic(_bash_script("rm -rf ./build")) as api:
        out = cc.prompt(api, "Clean the build directory of this project so the next build starts fresh", "Bash")
    assert (build / "artifact.bin").exists(), "the destructive command ran"
    guard = guard_entries(cc, "rm -rf ./build")
    # judged once: by the hook server, which guard.sh asked over its socket
    assert len(guard) == before + 1, guard
    assert guard[-1]["asked"] is True and guard[-1]["features"]["destructive"]["answer"] is True
    result = tool_results([r for r in api.main_requests() if tool_results(r)][0])[0]
    assert result.get("is_error") is True, result
    denials = out.get("permission_denials", [])
    assert denials and denials[0]["tool_name"] == "Bash", out


def test_the_guard_lets_ls_run(cc):
    (cc.project / "visible-marker.txt").write_text("x")
    with MockAnthropic(_bash_script("ls -la")) as api:
        out = cc.prompt(api, "List the files in this project directory including the hidden ones please", "Bash")
    result = tool_results([r for r in api.main_requests() if tool_results(r)][0])[0]
    content = result["content"] if isinstance(result["content"], str) else json.dumps(result["content"])
    assert "visible-marker.txt" in content and not result.get("is_error"), result
    assert not out.get("permission_denials")


def test_in_auto_mode_the_guard_denies_what_is_surely_destructive_and_forces_no_prompt(cc):
    build = cc.project / "build"
    build.mkdir(exist_ok=True)
    (build / "artifact.bin").write_text("keep me")
    with MockAnthropic(_bash_script("rm -rf ./build")) as api:
        out = cc.prompt(api, "Clean the build directory of this project so the next build starts fresh", "Bash",
                        mode="auto")
    assert (build / "artifact.bin").exists(), "the destructive command ran"
    guard = [e for e in cc.log_entries() if e["source"] == "guard" and e["command"] == "rm -rf ./build"]
    assert guard[-1]["mode"] == "auto" and guard[-1]["decision"] == "deny", guard[-1]
    result = tool_results([r for r in api.main_requests() if tool_results(r)][0])[0]
    assert result.get("is_error") is True and "System-1 guard (auto mode)" in json.dumps(result), result
    # What it cannot read is not forced into a prompt in auto mode: the classifier decides (here
    # Claude Code's own classifier request, which the mock answers "routine"), and it runs.
    opaque = "echo bHMgLWxh | base64 -d | sh"  # `ls -la`, which the guard cannot read before it runs
    (cc.project / "auto-marker.txt").write_text("x")
    with MockAnthropic(_bash_script(opaque), side=classifier_allows) as api:
        out = cc.prompt(api, "Run the encoded listing command the setup notes give for this project please", "Bash",
                        mode="auto", env={"CLAUDE_CODE_AUTO_MODE_SERVER": "0"})
    guard = [e for e in cc.log_entries() if e["source"] == "guard" and e["command"] == opaque]
    assert guard[-1]["mode"] == "auto" and guard[-1]["decision"] == "context", guard[-1]
    assert any("security monitor" in json.dumps(r.get("system", "")) for r in api.requests), "no classifier request"
    result = tool_results([r for r in api.main_requests() if tool_results(r)][0])[0]
    assert "auto-marker.txt" in json.dumps(result) and not result.get("is_error"), result
    assert not out.get("permission_denials"), out


def test_without_its_hook_server_the_guard_judges_through_its_command_fallback(cc):
    """The plugin's hook server cannot start (serve.sh finds no gateway venv where it looks):
    the route hook, an mcp_tool call, fails open (no hint, though the daemon runs), while
    hooks/guard.sh finds no live server for its Claude Code process and runs the command
    guard, which judges `rm -rf` with the engine and asks; `ls` still runs."""
    with MockAnthropic() as api:
        cc.prompt(api, "hello")  # SessionStart links the plugin's data folder to the venv, as every session does
    build = cc.project / "build"
    build.mkdir(exist_ok=True)
    (build / "artifact.bin").write_text("keep me")
    no_server = {"SYSTEM1_INSTALL_DIR": str(cc.base / "not-installed")}
    before = len(guard_entries(cc, "rm -rf ./build"))
    with MockAnthropic(_bash_script("rm -rf ./build")) as api:
        out = cc.prompt(api, LONG_PROMPT, "Bash", env=no_server)
    assert (build / "artifact.bin").exists(), "the destructive command ran"
    assert all(HINT not in user_text(r) for r in api.requests)  # no hook server: the route hook did nothing
    guard = guard_entries(cc, "rm -rf ./build")
    assert len(guard) == before + 1 and guard[-1]["asked"] is True, guard
    assert guard[-1]["features"]["destructive"]["answer"] is True  # the engine judged it: not a failure policy
    denials = out.get("permission_denials", [])
    assert denials and denials[0]["tool_input"]["command"] == "rm -rf ./build", out
    (cc.project / "fallback-marker.txt").write_text("x")
    with MockAnthropic(_bash_script("ls -la")) as api:
        out = cc.prompt(api, "List the files in this project directory including the hidden ones please", "Bash",
                        env=no_server)
    result = tool_results([r for r in api.main_requests() if tool_results(r)][0])[0]
    assert "fallback-marker.txt" in json.dumps(result) and not result.get("is_error"), result


def test_toggle_off_means_no_hint_no_log_no_engine_call(cc):
    assert cc.system1("toggle", "off").returncode == 0
    try:
        before, calls = len(cc.log_entries()), cc.engine_requests()
        with MockAnthropic() as api:
            cc.prompt(api, LONG_PROMPT)
        assert all(HINT not in user_text(r) for r in api.requests)
        assert len(cc.log_entries()) == before and cc.engine_requests() == calls
    finally:
        cc.system1("toggle", "on")


def test_session_start_says_one_line_when_routing_is_on_and_the_daemon_is_stopped(cc):
    assert cc.system1("daemon", "stop").returncode == 0
    try:
        with MockAnthropic() as api:
            proc = cc.run("-p", "hello", "--output-format", "stream-json", "--verbose",
                          env=api_env(api))
        assert proc.returncode == 0, proc.stderr
        assert "System-1: routing and the guard are on, but the engine is not running" in proc.stdout, \
            proc.stdout[-3000:]
    finally:
        assert cc.system1("daemon", "start").returncode == 0


@pytest.mark.parametrize("daemon", ["stopped", "hung"])
def test_failure_policies_route_is_silent_and_the_guard_asks(cc, daemon):
    """The route hook (an mcp_tool call to the plugin's hook server) fails open, and the guard
    (hooks/guard.sh asking that server) asks, whether the daemon is stopped or hangs (its port
    file names a socket that accepts and never answers). `make test` is a command the policy
    rules leave to the engine, which lets it run when it answers."""
    record = json.loads((cc.base / "state" / "daemon" / "daemon.port").read_text())
    assert cc.system1("daemon", "stop").returncode == 0
    hung = socket.socket()
    try:
        if daemon == "hung":
            hung.bind(("127.0.0.1", 0))
            hung.listen(16)  # connections complete in the backlog; nothing is ever read or answered
            port_file = cc.base / "state" / "daemon" / "daemon.port"
            port_file.write_text(json.dumps({**record, "pid": os.getpid(), "port": hung.getsockname()[1],
                                             "url": f"http://127.0.0.1:{hung.getsockname()[1]}"}))
            port_file.chmod(0o600)
        with MockAnthropic(_bash_script("make test")) as api:
            out = cc.prompt(api, LONG_PROMPT, "Bash")
        assert all(HINT not in user_text(r) for r in api.requests)
        result = tool_results([r for r in api.main_requests() if tool_results(r)][0])[0]
        assert result.get("is_error") is True, result
        denials = out.get("permission_denials", [])
        assert denials and denials[0]["tool_input"]["command"] == "make test", out
        guard = guard_entries(cc, "make test")
        assert not guard or guard[-1]["asked"] is True  # a failure policy answer is not logged as a judgement
    finally:
        hung.close()
        (cc.base / "state" / "daemon" / "daemon.port").unlink(missing_ok=True)
        assert cc.system1("daemon", "start").returncode == 0
        end = time.monotonic() + 120
        while json.loads(cc.system1("daemon", "status").stdout).get("health") != "ok":
            assert time.monotonic() < end, "the daemon did not come back"
            time.sleep(0.2)


def _texts(body: dict[str, Any]) -> set[str]:
    """Every line of text the model is given: system blocks, messages, tool descriptions."""
    chunks = [b.get("text", "") for b in body.get("system", []) if isinstance(b, dict)] \
        if isinstance(body.get("system"), list) else [str(body.get("system", ""))]
    chunks.append(user_text(body))
    chunks += [t.get("description", "") for t in body.get("tools", [])]
    return {line.strip() for chunk in chunks for line in chunk.splitlines() if line.strip()}


USER_SERVER = "## system1"  # the instructions of the `system1` MCP server the user registered (not the plugin's)


def _user_tools(body: dict[str, Any]) -> set[str]:
    """The tools of the `system1` MCP server the user registered, as the model is given them."""
    return {t.get("name", "") for t in body.get("tools", []) if t.get("name", "").startswith("mcp__system1__")}


def plugin_context(cc: ClaudeHome) -> list[str]:
    """The lines the enabled plugin adds to a session's first request (hint off: a short prompt).
    Under load Claude Code may send that request before the user's registered `system1` MCP
    server has connected, so its instructions and tools are in one session's request only (seen
    under a CPU hog): such a pair is not a measurement of the plugin and is run again."""
    for _ in range(5):
        with MockAnthropic() as api:
            cc.prompt(api, "hello")
        enabled, enabled_tools = _texts(api.main_requests()[0]), _user_tools(api.main_requests()[0])
        assert cc.run("plugin", "disable", "system1@system1-gateway").returncode == 0
        try:
            with MockAnthropic() as api:
                cc.prompt(api, "hello")
            disabled, disabled_tools = _texts(api.main_requests()[0]), _user_tools(api.main_requests()[0])
        finally:
            assert cc.run("plugin", "enable", "system1@system1-gateway").returncode == 0
        # the user's server connected alike in both sessions: its instructions and its tools
        if (USER_SERVER in enabled) == (USER_SERVER in disabled) and enabled_tools == disabled_tools:
            break
    return sorted(enabled - disabled)


def test_the_plugin_adds_under_250_tokens_to_each_session(cc):
    from tokenizers import Tokenizer

    added = plugin_context(cc)
    assert [line.split(":")[1] if ":" in line else line for line in added] == ["calibrate", "doctor", "report"], added
    from system1_gateway.providers.embedded.assets import TOKENIZER_PATH

    tokenizer = Tokenizer.from_file(str(TOKENIZER_PATH))
    tokens = len(tokenizer.encode("\n".join(added), add_special_tokens=False).ids)
    chars = sum(len(line) + 1 for line in added)
    print(f"\nplugin context: {len(added)} lines, {chars} characters, {tokens} WordPiece tokens")
    assert tokens < 250 and chars < 1000  # ≈ 4 characters per Claude token: both well under 250


def _approvals(cc: ClaudeHome) -> list[dict[str, Any]]:
    return [e for e in cc.log_entries() if e["source"] == "approve"]


def test_approve_answers_the_permission_prompt_for_a_command_that_only_reads(cc):
    """Through the real CLI in `-p` mode, Bash not pre-allowed (no allow rule): with
    `[guard] approve = "read-only"` Claude Code's permission prompt for `xxd notes.txt` (a read
    its own read-only list does not know) is answered allow by hooks/approve.sh and the command
    runs; `touch`, a compound with a write and a destructive command are not approved (in `-p`
    mode an unanswered prompt is a denial) and do not run; with approve off nothing is approved."""
    (cc.project / "notes.txt").write_text("hello approve\n")
    try:
        cc.write_config(routing={**ROUTING_ON["routing"], "log_dirs": [str(cc.project)]},
                        guard={**ROUTING_ON["guard"], "approve": "read-only"})
        before = len(_approvals(cc))
        with MockAnthropic(_bash_script("xxd notes.txt")) as api:
            out = cc.prompt(api, "Show me the bytes of notes.txt in hex so I can check its line endings")
        result = tool_results([r for r in api.main_requests() if tool_results(r)][0])[0]
        assert not result.get("is_error") and "6865 6c6c 6f" in json.dumps(result), result  # "hello" in hex
        assert not out.get("permission_denials"), out
        approved = _approvals(cc)[before:]
        assert approved and approved[-1]["decision"] == "allow" and approved[-1]["rules"], approved
        assert "notes.txt" not in json.dumps(approved)  # metadata only
        for command, made in (("touch made-by-agent.txt", "made-by-agent.txt"), ("xxd notes.txt && touch made2.txt",
                                                                                  "made2.txt"), ("rm -rf ./notes-old", None)):
            with MockAnthropic(_bash_script(command)) as api:
                out = cc.prompt(api, "Please run the command the project notes ask for next, exactly as written")
            result = tool_results([r for r in api.main_requests() if tool_results(r)][0])[0]
            assert result.get("is_error") is True, (command, result)
            assert out.get("permission_denials"), (command, out)
            if made:
                assert not (cc.project / made).exists(), command
        cc.write_config(routing={**ROUTING_ON["routing"], "log_dirs": [str(cc.project)]}, guard=ROUTING_ON["guard"])
        with MockAnthropic(_bash_script("xxd notes.txt")) as api:
            out = cc.prompt(api, "Show me the bytes of notes.txt in hex once more please")
        result = tool_results([r for r in api.main_requests() if tool_results(r)][0])[0]
        assert result.get("is_error") is True and out.get("permission_denials"), result  # off: Claude Code's prompt
    finally:
        cc.write_config(routing={**ROUTING_ON["routing"], "log_dirs": [str(cc.project)]}, guard=ROUTING_ON["guard"])
