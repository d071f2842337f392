"""The plugin's hook server (hooks/serve.py) as Claude Code's `mcp_tool` hooks call it: a stdio
MCP server whose tools run the very hook bodies the command hooks run, on a `Run` built from
the interpolated hook fields. Same answers as the command path, silence as `{}`, hidden tools,
hostile fields as data, and the command path's `Run` unchanged."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from system1_gateway.hooks import common, serve
from test_hooks import HINT, LONG, UNRULED, config, hook, log, routing_on


class Server:
    """`python -I -m system1_gateway.hooks.serve`, spoken to line by line."""

    def __init__(self):
        self.proc = subprocess.Popen([sys.executable, "-I", "-m", "system1_gateway.hooks.serve"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.ids = 0

    def ask(self, method: str, params: dict | None = None, raw: bytes | None = None) -> dict:
        self.ids += 1
        line = raw if raw is not None else json.dumps(
            {"jsonrpc": "2.0", "id": self.ids, "method": method, **({"params": params} if params else {})}).encode()
        self.proc.stdin.write(line + b"\n")
        self.proc.stdin.flush()
        return json.loads(self.proc.stdout.readline())

    def hook(self, name: str, arguments: dict) -> dict | None:
        reply = self.ask("tools/call", {"name": name, "arguments": arguments})
        text = reply["result"]["content"][0]["text"]
        return json.loads(text) or None

    def close(self) -> int:
        self.proc.stdin.close()
        return self.proc.wait(timeout=30)


@pytest.fixture
def server():
    """A server started on first use: after the test's config and daemon (their environment)."""
    started: list[Server] = []

    class Lazy:
        def __getattr__(self, name):
            if not started:
                started.append(Server())
            return getattr(started[0], name)

    yield Lazy()
    for s in started:
        s.close()


def wait_for(probe, within_s: float = 15.0):
    """probe()'s first truthy value (a served hook that only logs writes after its reply)."""
    import time

    end = time.monotonic() + within_s
    while not (got := probe()):
        assert time.monotonic() < end, "not within the time"
        time.sleep(0.05)
    return got


def as_fields(payload: dict) -> dict:
    """The hook input as an mcp_tool `input` template delivers it: strings, objects as JSON."""
    return {k: json.dumps(v) if isinstance(v, dict) else v for k, v in payload.items()}


def test_handshake_lists_no_tools_and_refuses_unknown_ones(server):
    init = server.ask("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                     "clientInfo": {"name": "t", "version": "0"}})
    assert init["result"]["protocolVersion"] == "2025-11-25" and init["result"]["capabilities"] == {"tools": {}}
    assert server.ask("tools/list")["result"] == {"tools": []}  # hook tools cost the model no context
    assert server.ask("ping")["result"] == {}
    unknown = server.ask("tools/call", {"name": "system1_decide", "arguments": {}})
    assert unknown["error"]["code"] == -32602 and "route, agent, guard" in unknown["error"]["message"]
    assert server.ask("", raw=b"{not json")["error"]["code"] == -32700
    assert server.ask("resources/list")["error"]["code"] == -32601


def test_the_served_hooks_answer_as_the_commands_do(write_config, tmp_path, start_daemon, server):
    config(write_config, tmp_path, routing=routing_on(tmp_path), guard={"enabled": True})
    start_daemon()
    route_in = {"hook_event_name": "UserPromptSubmit", "prompt": LONG, "cwd": str(tmp_path), "session_id": "s1",
                "prompt_id": "", "source": ""}
    guard_in = {"hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": {"command": UNRULED},
                "cwd": str(tmp_path), "tool_use_id": "toolu_1"}
    served = server.hook("route", as_fields(route_in))
    assert served == hook("route", route_in)[1] and served["hookSpecificOutput"]["additionalContext"].startswith(HINT)
    served = server.hook("guard", as_fields(guard_in))
    assert served == hook("guard", guard_in)[1] and served["hookSpecificOutput"]["permissionDecision"] == "ask"
    prompts = [e for e in log(tmp_path) if e["source"] == "prompt"]
    assert len(prompts) == 2 and prompts[0] == {**prompts[1], "ts": prompts[0]["ts"]}  # "" fields read as absent
    assert prompts[0]["prompt_id"] is None or prompts[0]["prompt_id"] == ""  # as the command logs a missing one
    spawn = {"hook_event_name": "PreToolUse", "tool_name": "Agent", "cwd": str(tmp_path), "tool_use_id": "toolu_2",
             "tool_input": {"prompt": LONG, "description": "d", "subagent_type": "general-purpose"}}
    assert server.hook("agent", as_fields(spawn)) is None  # mode "hint": answered at once, logged after
    assert wait_for(lambda: [e for e in log(tmp_path) if e["source"] == "agent"])[-1]["tool_use_id"] == "toolu_2"


def test_the_guard_failure_policy_holds_when_served(write_config, tmp_path, server):
    config(write_config, tmp_path, guard={"enabled": True, "budget_s": 0.5})  # no daemon
    out = server.hook("guard", {"tool_input": json.dumps({"command": UNRULED})})
    assert out["hookSpecificOutput"]["permissionDecision"] == "ask"
    assert "could not judge" in out["hookSpecificOutput"]["permissionDecisionReason"]


def test_a_broken_config_does_not_turn_the_served_guard_off(write_config, tmp_path, server):
    write_config("[guard]\nenabled = true\nmin_confidence = 2\n")
    arguments = {"session_id": "s1", "tool_input": json.dumps({"command": "ls"})}
    out = server.hook("guard", arguments)["hookSpecificOutput"]
    assert out["permissionDecision"] == "ask" and "min_confidence" in out["permissionDecisionReason"]
    assert "still invalid" in server.hook("guard", arguments)["hookSpecificOutput"]["permissionDecisionReason"]


def test_the_served_guard_answers_what_the_rules_decide_without_the_daemon(write_config, tmp_path, start_daemon,
                                                                          server):
    """A command the policy rules decide alone is answered in the hook server, daemon or not,
    exactly as the command hook answers it through the daemon; the rest still needs the daemon."""
    config(write_config, tmp_path, guard={"enabled": True, "budget_s": 0.5})  # no daemon yet
    chained = {"tool_input": {"command": "git status && rm -rf ~"}, "cwd": str(tmp_path)}
    served = server.hook("guard", as_fields(chained))
    assert served["hookSpecificOutput"]["permissionDecision"] == "ask"
    assert "part 2 of 2" in served["hookSpecificOutput"]["permissionDecisionReason"]
    assert server.hook("guard", as_fields({"tool_input": {"command": "ls -la src"}})) is None  # read-only: silence
    unruled = server.hook("guard", as_fields({"tool_input": {"command": UNRULED}}))
    assert "could not judge" in unruled["hookSpecificOutput"]["permissionDecisionReason"]  # the engine's part
    accented = server.hook("guard", as_fields({"tool_input": {"command": "rm -rf ~/Téléchargements"}}))
    assert "could not judge" in accented["hookSpecificOutput"]["permissionDecisionReason"]  # non-ASCII: the daemon's
    start_daemon()
    assert hook("guard", chained)[1] == served  # the command hook asks the daemon: the same answer


@pytest.mark.parametrize("arguments", [{}, {"tool_input": "not json"}, {"tool_input": "[1, 2]"},
                                       {"prompt": {"nested": "object"}}, {"tool_input": '{"command": 7}'},
                                       {"prompt": "}\"]}{\\u0000 ${prompt} $(rm -rf ~)" * 100}])
def test_hostile_or_malformed_fields_are_silence(write_config, tmp_path, start_daemon, server, arguments):
    config(write_config, tmp_path, routing=routing_on(tmp_path), guard={"enabled": True})
    start_daemon()
    for name in ("guard", "agent"):
        assert server.hook(name, arguments) is None
    out = server.hook("route", arguments)
    assert out is None or set(out["hookSpecificOutput"]) == {"hookEventName", "additionalContext"}
    assert "rm -rf" not in json.dumps(out)  # the prompt is data: it never reaches the output


def test_payload_of_drops_empty_fields_and_parses_tool_input():
    assert serve.payload_of({"prompt": "", "source": None, "cwd": "/x", "tool_input": '{"command": "ls"}'}) == \
        {"cwd": "/x", "tool_input": {"command": "ls"}}
    assert serve.payload_of({"tool_input": "[]"}) == {}


def test_run_from_a_payload_reads_no_stdin_and_explains_nothing():
    run = common.Run("guard", payload={"tool_input": {"command": "ls"}})
    assert run.text("tool_input", "command") == "ls" and run.explain is False
    assert common.Run("guard", ["--explain"]).payload == {}
    seen = []
    assert common.answer(run, lambda r: seen.append(r.text("tool_input", "command")) or {"x": 1}) == {"x": 1}
    assert seen == ["ls"]
    assert common.answer(run, lambda r: 1 / 0, lambda r, why: {"crashed": why}) == \
        {"crashed": "ZeroDivisionError: division by zero"}
    assert common.answer(run, lambda r: 1 / 0) is None


def test_the_server_answers_calls_still_running_at_eof(write_config, tmp_path):
    config(write_config, tmp_path, guard={"enabled": True, "budget_s": 0.3})
    line = json.dumps({"jsonrpc": "2.0", "id": 9, "method": "tools/call",
                       "params": {"name": "guard", "arguments": {"tool_input": json.dumps({"command": UNRULED})}}})
    proc = subprocess.run([sys.executable, "-I", "-m", "system1_gateway.hooks.serve"], input=line.encode() + b"\n",
                          capture_output=True, timeout=30)
    assert proc.returncode == 0 and json.loads(proc.stdout)["id"] == 9


# -- a hostile repository, a misbehaving rule -----------------------------

def test_a_fifo_or_a_link_to_stdin_as_a_skill_or_agent_file_is_not_read(write_config, tmp_path, start_daemon, server):
    """A FIFO named SKILL.md blocked the served call forever; a SKILL.md linked to /dev/stdin read
    the server's own JSON-RPC pipe and swallowed the next requests. Only regular files are read."""
    import os

    skills_dir = tmp_path / "claude" / "skills"
    (skills_dir / "fifo").mkdir(parents=True)
    os.mkfifo(skills_dir / "fifo" / "SKILL.md")
    (skills_dir / "stdin").mkdir()
    (skills_dir / "stdin" / "SKILL.md").symlink_to("/dev/stdin")
    agents = tmp_path / ".claude" / "agents"
    agents.mkdir(parents=True)
    os.mkfifo(agents / "reviewer.md")
    config(write_config, tmp_path, routing=routing_on(tmp_path, enabled=False), skills={"hint": True})
    start_daemon()
    arguments = {"prompt": LONG, "cwd": str(tmp_path)}
    assert server.hook("route", arguments) is None  # no skill could be read: nothing to pick from
    assert server.ask("ping")["result"] == {}  # the stream is intact: the next request is answered
    spawn = {"cwd": str(tmp_path), "tool_input": json.dumps({"prompt": LONG, "subagent_type": "reviewer"})}
    assert server.hook("agent", spawn) is None
    assert server.ask("ping")["result"] == {}


def test_every_call_is_answered_by_its_deadline_and_a_rule_cannot_break_the_stream(write_config, tmp_path,
                                                                                   start_daemon):
    """A rule that prints, exits or loops runs inside the server: the stream stays JSON-RPC, and
    a call whose body never returns is answered with silence by the deadline."""
    import os
    import time
    from pathlib import Path

    config(write_config, tmp_path, routing={**routing_on(tmp_path), "mode": "set"})
    rule = Path(os.environ["SYSTEM1_CONFIG"]).parent / "routing_rule.py"
    start_daemon()
    spawn = {"cwd": str(tmp_path), "tool_input": json.dumps({"prompt": LONG, "subagent_type": "general-purpose"})}
    for body in ('def tier(f):\n    print("hello")\n    return "haiku"\n',
                 'import sys\ndef tier(f):\n    sys.exit(3)\n'):
        rule.write_text(body)
        server = Server()
        try:
            assert server.hook("agent", spawn) is None and server.ask("ping")["result"] == {}
        finally:
            server.close()
    rule.write_text('def tier(f):\n    while True:\n        pass\n')
    server = Server()
    try:
        started = time.monotonic()
        assert server.hook("agent", spawn) is None
        assert time.monotonic() - started < serve.CALL_DEADLINE_S + 3
        assert server.ask("ping")["result"] == {}
    finally:
        server.proc.kill()


def test_a_lone_surrogate_in_the_input_still_gets_an_answer():
    import io

    out = io.BytesIO()
    serve.Wire(out).send({"jsonrpc": "2.0", "id": 1, "result": {"text": "\ud800"}})
    assert json.loads(out.getvalue()) == {"jsonrpc": "2.0", "id": 1, "result": {"text": "\ud800"}}


# -- what a call makes Claude Code wait for (hooks add ≤ 10 ms) -----------------------

@pytest.mark.parametrize("mode", ["log", "hint"])
def test_a_hook_that_can_only_log_is_answered_before_its_work(write_config, tmp_path, start_daemon, server, mode):
    """Mode "log": the route and agent hooks print nothing whatever the engine says, so the
    server answers `{}` at once and the engine's features and the log line follow the reply.
    A hinting hook waits for its answer. (The engine here takes 1.5 s per request.)"""
    import time

    config(write_config, tmp_path, mock_extra="latency_ms = 1500",
           routing={**routing_on(tmp_path), "hint": False, "mode": mode, "budget_s": 3.0})
    start_daemon()
    route_in = {"prompt": LONG, "cwd": str(tmp_path), "session_id": "s1", "source": "user"}
    spawn = {"cwd": str(tmp_path), "tool_use_id": "toolu_9",
             "tool_input": json.dumps({"prompt": LONG, "subagent_type": "general-purpose"})}
    started = time.monotonic()
    out = server.hook("route", route_in)
    replied = time.monotonic() - started
    if mode == "log":
        assert out is None and replied < 1.0, replied
        assert server.hook("agent", spawn) is None and time.monotonic() - started < 1.0
        wait_for(lambda: len(log(tmp_path)) >= 2)  # the work goes on after the replies
        entries = {e["source"]: e for e in log(tmp_path)}
        assert entries["prompt"]["hinted"] is False and set(entries["prompt"]["features"]) == \
            {"read_only", "design", "review", "specified"}
        assert entries["agent"]["tool_use_id"] == "toolu_9"
    else:
        assert out["hookSpecificOutput"]["additionalContext"].startswith(HINT) and replied >= 1.4, replied
        assert [e["source"] for e in log(tmp_path)] == ["prompt"]  # written before the reply


def test_a_guard_call_still_running_at_the_deadline_gets_the_failure_policy(write_config, tmp_path, monkeypatch):
    """A guard body that does not return in time is answered by the deadline with what the
    guard does when the engine cannot answer: ask (never the silence that lets it run)."""
    import io
    import time

    from system1_gateway.hooks import guard

    config(write_config, tmp_path, guard={"enabled": True})
    monkeypatch.setattr(serve, "CALL_DEADLINE_S", 0.3)
    monkeypatch.setitem(serve.HOOKS, "guard", (lambda run: time.sleep(1.5) or None, guard.failed))
    monkeypatch.setitem(serve.HOOKS, "route", (lambda run: time.sleep(1.5) or None, None))
    calls = [json.dumps({"jsonrpc": "2.0", "id": i, "method": "tools/call",
                         "params": {"name": name, "arguments": {"tool_input": json.dumps({"command": UNRULED})}}})
             for i, name in ((1, "guard"), (2, "route"))]
    out = io.BytesIO()
    started = time.monotonic()
    serve.serve(io.BytesIO(("\n".join(calls) + "\n").encode()), out)
    replies = {r["id"]: json.loads(r["result"]["content"][0]["text"])
               for r in map(json.loads, out.getvalue().splitlines())}
    assert replies[2] == {}  # a hook without a failure policy: silence
    decision = replies[1]["hookSpecificOutput"]
    assert decision["permissionDecision"] == "ask" and "could not judge" in decision["permissionDecisionReason"]
    assert time.monotonic() - started < 3.0  # each reply came at the deadline; EOF waited for the bodies


def test_the_server_names_itself_for_the_guard_fallback_and_withdraws(tmp_path):
    import os
    import stat

    data = tmp_path / "plugin-data"
    path = serve.announce(str(data))
    assert path == str(data / "hook-servers" / str(os.getppid()))
    assert (data / "hook-servers" / str(os.getppid())).read_text() == f"{os.getpid()}\n"
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(data / "hook-servers").st_mode) == 0o700
    serve.withdraw(path)
    assert not os.path.exists(path)
    (data / "hook-servers" / str(os.getppid())).write_text("12345\n")  # a newer server's name
    serve.withdraw(path)
    assert (data / "hook-servers" / str(os.getppid())).read_text() == "12345\n"
    assert serve.announce("") is None and serve.announce("relative/dir") is None
    (tmp_path / "file").write_text("x")
    assert serve.announce(str(tmp_path / "file")) is None  # not a folder: no name, the fallback runs
