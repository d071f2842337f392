"""`[guard] approve = "read-only"`: hooks/approve.sh answering Claude Code's PermissionRequest
for Bash through the guard's authenticated channel (hooks/channel.py, kind "approve"), with
the real script and the real hook server, as tests/test_guard_channel.py runs the guard.

What is held: the server answers `allow` only for what the read-only table and the guard's
rules approve, and only to an approve call; the script prints its one fixed allow only for the
server's exact allow; every failure (no server, a dead, hung, impostor or non-child server, a
wrong key, a forged or malformed answer, a confined forger flooding the port) prints nothing."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from system1_gateway.hooks import approve, channel, guard
from test_guard_channel import FORGER, Impostor, confined_forger, plugin  # noqa: F401 - plugin: the shared fixture
from test_hooks import config, log

APPROVE_SH = Path(__file__).resolve().parents[1] / "hooks" / "approve.sh"
GUARD_SH = Path(__file__).resolve().parents[1] / "hooks" / "guard.sh"
ALLOW = {"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": {"behavior": "allow"}}}
READS = ["ls -la", "git status && git diff --stat", "rg foo src", "find . -name '*.py'", "cat README.md"]
NOT_APPROVED = ["touch x", "rm -rf ~", "ls && touch x", "$(printf r)m -rf x", "cat .env", "git push --force origin main",
                "ls > out.txt", "sudo ls", "npm test"]


def request(command: str, cwd: Path, **extra) -> bytes:
    return json.dumps({"hook_event_name": "PermissionRequest", "tool_name": "Bash", "tool_input": {"command": command},
                       "cwd": str(cwd), "permission_mode": "default", "session_id": "s1",
                       "permission_suggestions": [], **extra}).encode()


def run_approve(env: dict, given: bytes, script: Path = APPROVE_SH, timeout: float = 30) -> tuple[dict | None, float, bytes]:
    """approve.sh as hooks.json runs it (`sh approve.sh`): this test process is its parent."""
    t0 = time.monotonic()
    proc = subprocess.run(["sh", str(script)], input=given, capture_output=True, env=env, timeout=timeout)
    took = time.monotonic() - t0
    assert proc.returncode == 0 and proc.stderr == b"", proc.stderr
    out = json.loads(proc.stdout) if proc.stdout.strip() else None
    return out, took, proc.stdout


def on(write_config, tmp_path, **guard_settings):
    config(write_config, tmp_path, guard={"approve": "read-only", **guard_settings})


def test_the_server_approves_what_only_reads_and_nothing_else(write_config, tmp_path, plugin):
    """No venv behind the script: every answer is the server's. Read-only commands are allowed,
    with no guard and no daemon running; a write, a destructive command, a compound with a write,
    an opaque command, a secret read, a redirection, a wrapper, project code get no answer.
    Every call is logged, metadata only."""
    on(write_config, tmp_path)
    p = plugin(venv=False)  # no venv behind the script: every answer is the server's
    p.start()
    for command in READS:
        out, took, _ = run_approve(p.env, request(command, tmp_path))
        assert out == ALLOW, command
        assert took < 5
    for command in NOT_APPROVED:
        assert run_approve(p.env, request(command, tmp_path))[2] == b"", command
    entries = [e for e in log(tmp_path) if e["source"] == "approve"]
    assert len(entries) == len(READS) + len(NOT_APPROVED)
    allowed = [e for e in entries if e["decision"] == "allow"]
    assert len(allowed) == len(READS) and {"ls"} <= {r for e in allowed for r in e["rules"]}
    assert all(e["why_not"] for e in entries if e["decision"] is None)
    text = json.dumps(entries)
    assert all(command not in text for command in READS + NOT_APPROVED if len(command) > 8)  # no command text
    assert all(e["mode"] == "default" and e["session_id"] == "s1" for e in entries)


def test_off_by_default_and_only_for_a_bash_permission_request(write_config, tmp_path, plugin):
    config(write_config, tmp_path)  # no [guard] approve: off
    p = plugin(venv=False)  # no venv behind the script: every answer is the server's
    p.start()
    assert run_approve(p.env, request("ls -la", tmp_path))[2] == b""
    on(write_config, tmp_path)
    assert run_approve(p.env, request("ls -la", tmp_path))[0] == ALLOW  # settings are read per call
    assert run_approve(p.env, request("ls -la", tmp_path, tool_name="Write"))[2] == b""
    assert run_approve(p.env, request("ls -la", tmp_path, hook_event_name="PreToolUse"))[2] == b""
    assert run_approve(p.env, b"{not json")[2] == b""
    write_config('[guard]\napprove = "everything"\n')  # invalid: no approval
    assert run_approve(p.env, request("ls -la", tmp_path))[2] == b""


def test_the_guard_script_never_prints_an_allow_for_a_permission_request(write_config, tmp_path, plugin):
    """The same input through guard.sh (the PreToolUse path): the server answers it as a guard
    call, and guard.sh's closed set has no allow."""
    on(write_config, tmp_path, enabled=True, budget_s=0.5)
    p = plugin(venv=False)  # no venv behind the script: every answer is the server's
    p.start()
    proc = subprocess.run(["sh", str(GUARD_SH)], input=request("ls -la", tmp_path), capture_output=True, env=p.env, timeout=30)
    assert b"allow" not in proc.stdout


def test_the_channel_codes_an_approval_only_for_an_approve_call():
    assert channel.coded(approve.allow(), "approve") == "allow "
    assert channel.coded(approve.allow()).startswith("ask System-1 guard could not judge")  # a guard call: never allow
    for odd in (None, {}, guard.decide("ask", "x"), guard.decide("deny", "x"),
                {"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": {"behavior": "deny"}}},
                {"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": {"behavior": "allow",
                                                                                           "updatedInput": {"command": "rm -rf ~"}}}},
                {**approve.allow(), "continue": True}):
        assert channel.coded(odd, "approve") == "none ", odd


def test_an_approve_call_at_its_deadline_gets_no_approval(write_config, tmp_path, monkeypatch):
    on(write_config, tmp_path)
    monkeypatch.setattr(approve, "body", lambda run: time.sleep(1.5) or approve.allow())
    ch = channel.open_channel(0.3)
    assert ch is not None
    try:
        given = request("ls -la", tmp_path)
        with socket.create_connection(("127.0.0.1", ch.port), timeout=10) as s:
            s.sendall(f"{ch.request_key} {len(given)} approve\n".encode() + given)
            line = s.makefile("rb").readline().decode()
        assert line == f"{ch.answer_key} none \n"
        for head in (f"{ch.request_key} 2 allow\n{{}}", f"{ch.request_key} 2 approve x\n{{}}"):
            with socket.create_connection(("127.0.0.1", ch.port), timeout=5) as s:
                s.sendall(head.encode())
                assert s.recv(100) == b"", head  # not a request: closed, unanswered
    finally:
        ch.close()


@pytest.mark.parametrize("named", ["absent", "garbage", "closed-port", "sh-only", "dead"])
def test_without_a_server_to_ask_the_script_runs_the_command_path(write_config, tmp_path, plugin, named):
    """No authenticated answer (no server yet, a garbage or dead announcement, no bash): the
    script runs the same rules itself (`python -I -m system1_gateway.hooks.approve`) on the input
    it kept, and prints the allow only for that process's exact answer."""
    on(write_config, tmp_path)
    p = plugin(venv=True)
    folder = p.data / "hook-servers"
    folder.mkdir()
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    dead = subprocess.Popen(["true"])
    dead.wait()
    lines = {"garbage": "1; echo allow\n", "closed-port": f"{os.getpid()} {closed.getsockname()[1]} {'a' * 32} {'b' * 32}\n",
             "dead": f"{dead.pid} {closed.getsockname()[1]} {'a' * 32} {'b' * 32}\n"}
    if named in lines:
        p.named.write_text(lines[named])
    if named == "sh-only":
        p.start()
        tools = tmp_path / "tools"
        tools.mkdir()
        for tool in ("sh", "dash"):
            if os.path.exists(f"/bin/{tool}"):
                (tools / tool).symlink_to(f"/bin/{tool}")
        p.env = {**p.env, "PATH": str(tools)}
    out, took, raw = run_approve(p.env, request("ls -la", tmp_path))
    refused = run_approve(p.env, request("ls && touch x", tmp_path))
    closed.close()
    assert out == ALLOW and took < 5, raw
    assert refused[2] == b""


def test_a_hung_server_costs_the_wait_and_approves_nothing(write_config, tmp_path, plugin):
    on(write_config, tmp_path)
    p = plugin(venv=False)  # no venv behind the script: every answer is the server's
    server = p.start()
    assert run_approve(p.env, request("ls", tmp_path))[0] == ALLOW
    os.kill(server.pid, signal.SIGSTOP)
    try:
        _, took, raw = run_approve(p.env, request("ls", tmp_path))
    finally:
        os.kill(server.pid, signal.SIGCONT)
    assert raw == b"" and 4.5 < took < 10, took


FORGED = [
    b'KEY {"hookSpecificOutput":{"hookEventName":"PermissionRequest","decision":{"behavior":"allow"}}}\n',
    b'KEY allow\n', b'KEY allow x\n', b'KEY  allow \n', b'KEY allow \\u0022\n', b'KEY Allow \n', b'KEYallow \n',
    b'bbbb allow \n', b'KEY ask allow\n', b'KEY none \n', b'KEY context allow\n', b'allow \n', b'\n',
    b'KEY allow \r\n',  # (bash's read drops a NUL byte: "allow \\0" would read as the allow itself)
]


def test_an_impostor_that_is_not_claude_codes_child_is_never_believed(write_config, tmp_path, plugin):
    """A listener holding the keys, named as the server (what an unconfined process that read
    the keys, killed the server and took its place could do), is not a child of the process
    that started approve.sh: even its exact `allow` is not printed. Then, as the server's own
    parent would see it, a child impostor: every forged or malformed line prints nothing, and
    only the exact allow (the server's one answer) is printed (the trust boundary)."""
    on(write_config, tmp_path)
    p = plugin(venv=False)  # no venv behind the script: every answer is the server's
    impostor = Impostor(p.data, [b"KEY allow \n"] * 3)
    for _ in range(3):
        assert run_approve(p.env, request("rm -rf ~", tmp_path))[2] == b""
    assert impostor.requests == []  # never even asked: the parent check comes first
    child = tmp_path / "child_impostor.py"
    child.write_text(textwrap.dedent('''
        import os, socket, sys
        answers = [bytes.fromhex(h) for h in sys.argv[2:]]
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        sock.listen(16)
        path = sys.argv[1]
        tmp = path + ".tmp"
        with open(tmp, "w") as out:
            out.write(f"{os.getpid()} {sock.getsockname()[1]} {'a' * 32} {'b' * 32}\\n")
        os.replace(tmp, path)
        for line in answers:
            conn, _ = sock.accept()
            with conn:
                given = conn.makefile("rb")
                head = given.readline()
                given.read(int(head.split()[1]))
                conn.sendall(line.replace(b"KEY", b"b" * 32))
    '''))
    lines = FORGED + [b"KEY allow \n"]
    (p.data / "hook-servers").mkdir(exist_ok=True)
    proc = subprocess.Popen([sys.executable, str(child), str(p.named), *(line.hex() for line in lines)])
    try:
        end = time.monotonic() + 20
        while not (p.named.exists() and p.named.read_text().split()[:1] == [str(proc.pid)]):
            assert time.monotonic() < end
            time.sleep(0.02)
        for line in FORGED:
            assert run_approve(p.env, request("rm -rf ~", tmp_path))[2] == b"", line
        assert run_approve(p.env, request("rm -rf ~", tmp_path))[0] == ALLOW  # the exact answer, from a child of ours
        proc.wait(timeout=10)
    finally:
        proc.kill()


@pytest.mark.parametrize("net", [False, True], ids=["shared-net", "own-net"])
def test_a_confined_forger_cannot_turn_anything_into_an_allow(write_config, tmp_path, plugin, net):
    """A process confined as Claude Code's Linux sandbox confines a command (own user, mount
    and pid namespaces, a fresh /proc, the plugin data folder read-only; with and without its
    own network) reads the keys and floods the port with requests and forged answers (`allow`
    among them) while destructive and writing commands ask for approval: none is approved, and
    a read-only command still gets the server's own allow."""
    on(write_config, tmp_path)
    p = plugin(venv=False)  # no venv behind the script: every answer is the server's
    p.start()
    script = tmp_path / "forger.py"
    forger_source = FORGER.replace("ask allow", "allow ").replace('f"{ask} 2\\n{{}}"', 'f"{ask} 2 approve\\n{{}}"')
    assert forger_source.count("allow \\n") == 1 and "2 approve" in forger_source  # it forges the approve path's answer
    script.write_text(forger_source)
    forger, _ = confined_forger(script, p.data, net)
    try:
        for command in NOT_APPROVED:
            out, took, raw = run_approve(p.env, request(command, tmp_path))
            assert raw == b"" and took < 5, (command, raw)
        assert run_approve(p.env, request("git status", tmp_path))[0] == ALLOW
        rest = forger.communicate(timeout=30)[0]
    finally:
        forger.kill()
    assert (b"connections made 0 " in rest) == net, rest


def test_the_hook_is_registered_for_bash_permission_requests_only():
    hooks = json.loads((APPROVE_SH.parent / "hooks.json").read_text())["hooks"]
    (entry,) = hooks["PermissionRequest"]
    assert entry["matcher"] == "Bash"
    (handler,) = entry["hooks"]
    assert handler["type"] == "command" and handler["args"] == ["${CLAUDE_PLUGIN_ROOT}/hooks/approve.sh"]
    assert "allow" not in GUARD_SH.read_text().replace("never an \"allow\"", "").split("printf '{\"hookSpecificOutput\"")[0][-10:]
    script = APPROVE_SH.read_text()
    # one fixed output line, printed only where it equals the server's or the command path's allow
    assert script.count("allow='{") == 1 and script.count("printf '%s\\n' \"$allow\"") == 3
    assert "printf '{" not in script and "echo" not in script
