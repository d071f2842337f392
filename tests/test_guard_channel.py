"""The guard as Claude Code runs it: hooks/guard.sh (POSIX sh) asking the plugin's hook server
through named pipes (hooks/channel.py), and running the command guard on the same input when
no server answers: absent, dead, named wrongly, hung, or out of slots. Real processes
throughout: the server as plugin.json starts it, the script under /bin/sh."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from system1_gateway.hooks import channel
from test_hooks import UNRULED, config

GUARD_SH = Path(__file__).resolve().parents[1] / "hooks" / "guard.sh"
ASKED_DESTRUCTIVE = "reads as destructive"
COULD_NOT_JUDGE = "could not judge"


def payload(command: str, cwd: Path, **extra) -> bytes:
    return json.dumps({"hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": {"command": command},
                       "cwd": str(cwd), "permission_mode": "default", **extra}).encode()


class Plugin:
    """A plugin data folder whose venv is this interpreter (or none: then the command guard
    cannot start, and an answer can only have come through the pipes)."""

    def __init__(self, tmp_path: Path, venv: bool):
        self.data = tmp_path / "plugin-data"
        self.data.mkdir()
        if venv:
            (self.data / "venv").symlink_to(sys.prefix)
        self.env = {**os.environ, "CLAUDE_PLUGIN_DATA": str(self.data)}
        self.server: subprocess.Popen | None = None

    def start(self) -> subprocess.Popen:
        """The hook server as Claude Code starts it: this test is the parent of it and of guard.sh."""
        self.server = subprocess.Popen([sys.executable, "-I", "-m", "system1_gateway.hooks.serve"],
                                       stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=self.env)
        pipes = self.pipes()
        end = time.monotonic() + 30
        while not ((self.data / "hook-servers" / str(os.getpid())).exists() and (pipes / "calls").exists()):
            assert self.server.poll() is None and time.monotonic() < end, "the server did not announce itself"
            time.sleep(0.02)
        return self.server

    def pipes(self) -> Path:
        assert self.server is not None
        return self.data / "hook-servers" / f"{self.server.pid}.d"

    def guard(self, command: str, cwd: Path, timeout: float = 30) -> tuple[dict | None, float, subprocess.CompletedProcess]:
        t0 = time.monotonic()
        proc = subprocess.run(["/bin/sh", str(GUARD_SH)], input=payload(command, cwd), capture_output=True,
                              env=self.env, timeout=timeout)
        took = time.monotonic() - t0
        assert proc.returncode == 0, proc.stderr
        out = json.loads(proc.stdout) if proc.stdout.strip() else None
        return out or None, took, proc

    def stop(self) -> None:
        if self.server is not None and self.server.poll() is None:
            os.kill(self.server.pid, signal.SIGCONT)
            self.server.stdin.close()
            self.server.wait(timeout=30)


@pytest.fixture
def plugin(tmp_path):
    made: list[Plugin] = []

    def make(venv: bool = True) -> Plugin:
        made.append(Plugin(tmp_path, venv))
        return made[-1]

    yield make
    for p in made:
        p.stop()


def reason(out: dict | None) -> str:
    assert out is not None
    decision = out["hookSpecificOutput"]
    assert decision["permissionDecision"] == "ask", out
    return decision["permissionDecisionReason"]


def test_the_server_answers_through_the_pipes_without_python(write_config, tmp_path, plugin):
    """No venv behind the script: every answer came from the warm server. The rules decide
    these without any daemon; what they cannot decide gets the failure policy (no daemon)."""
    config(write_config, tmp_path, guard={"enabled": True, "budget_s": 0.5})
    p = plugin(venv=False)
    p.start()
    assert ASKED_DESTRUCTIVE in reason(p.guard("rm -rf ~", tmp_path)[0])
    assert ASKED_DESTRUCTIVE in reason(p.guard("git status && git push --force origin main", tmp_path)[0])
    assert p.guard("ls -la", tmp_path)[0] is None
    assert COULD_NOT_JUDGE in reason(p.guard(UNRULED, tmp_path)[0])  # the engine's, and no daemon runs
    out, took, proc = p.guard("echo 'héllo wörld' > notes.txt", tmp_path)  # non-ASCII: the daemon's
    assert COULD_NOT_JUDGE in reason(out) and proc.stderr == b""
    pipes = p.pipes()
    wait_unlocked(pipes)  # each slot freed once its caller exited
    assert (os.stat(pipes).st_mode & 0o777) == 0o700
    assert all((os.stat(f).st_mode & 0o777) == 0o600 for f in pipes.iterdir())


def wait_unlocked(pipes: Path, within_s: float = 5.0) -> bool:
    end = time.monotonic() + within_s
    while any(f.name.startswith("lock") for f in pipes.iterdir()):
        assert time.monotonic() < end, sorted(f.name for f in pipes.iterdir())
        time.sleep(0.02)
    return True


def test_parallel_calls_each_get_their_own_answer(write_config, tmp_path, plugin):
    """More calls at once than slots: each is answered for its own command (the pipes while a
    slot is free, the command guard past them), none mixed up, every slot freed after."""
    config(write_config, tmp_path, guard={"enabled": True, "budget_s": 0.5})
    p = plugin()
    p.start()
    n = channel.SLOTS + 8
    commands = [f"rm -rf ./build{i:03d}" if i % 2 == 0 else f"ls ./src{i:03d}" for i in range(n)]
    outs: dict[int, tuple] = {}

    def one(i: int) -> None:
        outs[i] = p.guard(commands[i], tmp_path, timeout=60)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    served = 0
    for i, command in enumerate(commands):
        out = outs[i][0]
        if i % 2 == 0:
            text = reason(out)
            assert f"build{i:03d}" in text or COULD_NOT_JUDGE in text, (command, text)
            served += f"build{i:03d}" in text
        else:  # the server's rules let `ls` pass; the command guard asks the (absent) daemon
            assert out is None or COULD_NOT_JUDGE in reason(out), (command, out)
    assert served >= 1
    wait_unlocked(p.pipes())


def test_a_hung_server_costs_the_wait_then_the_command_guard_judges(write_config, tmp_path, plugin):
    """The server stopped (SIGSTOP: alive, answering nothing): guard.sh gives up after its wait
    (6 s) and the command guard judges the same input: it asks. Nothing is left behind."""
    config(write_config, tmp_path, guard={"enabled": True, "budget_s": 0.5})
    p = plugin()
    server = p.start()
    assert p.guard("ls", tmp_path)[0] is None
    os.kill(server.pid, signal.SIGSTOP)
    try:
        out, took, _ = p.guard("ls", tmp_path)
    finally:
        os.kill(server.pid, signal.SIGCONT)
    assert COULD_NOT_JUDGE in reason(out) and 5.5 < took < 12, took  # the command guard: no daemon
    wait_unlocked(p.pipes())
    assert p.guard("ls", tmp_path)[0] is None  # answering again


def test_a_dead_or_exited_server_means_the_command_guard(write_config, tmp_path, plugin):
    """A server killed outright leaves its name and pipes behind: its pid is dead, so guard.sh
    runs the command guard. The next server sweeps the dead one's pipes; one that exits
    withdraws its name and removes its own."""
    config(write_config, tmp_path, guard={"enabled": True, "budget_s": 0.5})
    p = plugin()
    server = p.start()
    dead = p.pipes()
    server.kill()
    server.wait()
    out, took, _ = p.guard("ls", tmp_path)
    assert COULD_NOT_JUDGE in reason(out) and took < 5
    p.start()
    assert not dead.exists() and p.pipes().exists()
    p.stop()
    assert [f.name for f in (p.data / "hook-servers").iterdir()] == []
    assert COULD_NOT_JUDGE in reason(p.guard("ls", tmp_path)[0])


@pytest.mark.parametrize("named", ["absent", "garbage", "no-pipes", "half-gone"])
def test_without_a_server_to_ask_the_command_guard_judges(write_config, tmp_path, plugin, named):
    """No live server of this Claude Code process with pipes: the command guard runs, and with
    no engine it asks (on_failure = "ask"). "half-gone": a folder being removed (its `calls`
    pipe left, no answer pipes; `<>` then opens a new empty file, whose end is read at once):
    the script still ends in the command guard, not in an error exit (which Claude Code would
    read as a block) or a hang."""
    config(write_config, tmp_path, guard={"enabled": True, "budget_s": 0.5})
    p = plugin()
    folder = p.data / "hook-servers"
    folder.mkdir()
    if named == "garbage":
        (folder / str(os.getpid())).write_text("1; rm -rf ~\n")
    elif named in ("no-pipes", "half-gone"):  # a live pid (this test) that keeps no answer pipes
        (folder / str(os.getpid())).write_text(f"{os.getpid()}\n")
    if named == "half-gone":
        (folder / f"{os.getpid()}.d").mkdir()
        os.mkfifo(folder / f"{os.getpid()}.d" / "calls")
    out, took, _ = p.guard(UNRULED, tmp_path)
    assert COULD_NOT_JUDGE in reason(out) and took < 5


def test_an_answer_for_another_caller_is_skipped(tmp_path):
    """A late answer left in a slot's pipe for a caller that gave up is not taken as this
    caller's: guard.sh reads on to the line with its own pid. (A stand-in server here: the
    script's side of the protocol.)"""
    data = tmp_path / "plugin-data"
    pipes = data / "hook-servers" / f"{os.getpid()}.d"
    pipes.mkdir(parents=True)
    (data / "hook-servers" / str(os.getpid())).write_text(f"{os.getpid()}\n")
    os.mkfifo(pipes / "calls")
    for slot in range(channel.SLOTS):
        os.mkfifo(pipes / f"r{slot}")
    calls = os.open(pipes / "calls", os.O_RDWR)
    got: list[bytes] = []

    def stand_in() -> None:
        line = os.read(calls, 64)
        slot, pid = line.split()
        got.append((pipes / f"p{int(slot)}").read_bytes())
        fd = os.open(pipes / f"r{int(slot)}", os.O_WRONLY | os.O_NONBLOCK)
        os.write(fd, b'99999 {"hookSpecificOutput":{"permissionDecision":"allow"}}\n')
        os.write(fd, pid + b' {"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"ask",'
                 b'"permissionDecisionReason":"mine"}}\n')
        os.close(fd)

    thread = threading.Thread(target=stand_in)
    thread.start()
    proc = subprocess.run(["sh", str(GUARD_SH)], input=payload("rm -rf ./x", tmp_path), capture_output=True,
                          env={**os.environ, "CLAUDE_PLUGIN_DATA": str(data)}, timeout=30)
    thread.join()
    os.close(calls)
    assert proc.returncode == 0 and json.loads(proc.stdout)["hookSpecificOutput"]["permissionDecisionReason"] == "mine"
    assert json.loads(got[0])["tool_input"]["command"] == "rm -rf ./x"  # the hook input, handed over whole
    assert (pipes / "lock0").read_text().strip().isdigit()  # its claim: freed by the server, not the caller


def test_the_listener_survives_garbage_and_sweeps_abandoned_claims(write_config, tmp_path, plugin):
    """Lines that are not "<slot> <pid>" are ignored; a claim whose owner died before calling is
    swept; the next call is answered."""
    config(write_config, tmp_path, guard={"enabled": True, "budget_s": 0.5})
    p = plugin(venv=False)
    p.start()
    pipes = p.pipes()
    fd = os.open(pipes / "calls", os.O_WRONLY)
    for junk in (b"x" * 5000, b"\n", b"99 1234\n", b"0 1\n", b"../../etc 5\n", b"3 -4\n", b"\xff\xfe\n"):
        os.write(fd, junk)
    os.close(fd)
    dead = subprocess.run(["sh", "-c", "echo $$"], capture_output=True, text=True).stdout.strip()
    for slot in range(channel.SLOTS):  # every slot claimed by a caller that died before calling
        (pipes / f"lock{slot}").write_text(dead + "\n")
    end = time.monotonic() + channel.SWEEP_S * 3
    while any(f.name.startswith("lock") for f in pipes.iterdir()):
        assert time.monotonic() < end, "abandoned claims were not swept"
        time.sleep(0.1)
    assert ASKED_DESTRUCTIVE in reason(p.guard("rm -rf ~", tmp_path)[0])


def test_the_script_knows_every_slot():
    """guard.sh tries the slots by number: the same ones the server makes pipes for."""
    line = next(t for t in GUARD_SH.read_text().splitlines() if t.strip().startswith("for n in "))
    assert line.split("in", 1)[1].split(";")[0].split() == [str(n) for n in range(channel.SLOTS)]


def ask_slot0(pipes: channel.Channel, given: bytes) -> dict | None:
    """guard.sh's side of one call in slot 0, by hand, for a caller that has already exited
    (so the slot is freed at once): the answer it reads, checked to carry the caller's pid."""
    dead = int(subprocess.run(["sh", "-c", "echo $$"], capture_output=True, text=True).stdout)
    (Path(pipes.folder) / "lock0").write_text(f"{dead}\n")
    (Path(pipes.folder) / "p0").write_bytes(given)
    answer = os.open(pipes.path("r0"), os.O_RDWR)
    calls = os.open(pipes.path("calls"), os.O_WRONLY)
    os.write(calls, f"0 {dead}\n".encode())
    os.close(calls)
    line = b""
    while not line.endswith(b"\n"):
        line += os.read(answer, 4096)
    os.close(answer)
    pid, text = line.decode().split(" ", 1)
    assert pid == str(dead), line
    return json.loads(text) or None


def test_a_call_still_running_at_the_deadline_gets_the_failure_policy(write_config, tmp_path, monkeypatch):
    """In process: a guard body that hangs; the listener answers its call at the deadline with
    the failure policy (ask), and the slot is freed once the body returns."""
    from system1_gateway.hooks import guard

    config(write_config, tmp_path, guard={"enabled": True, "budget_s": 0.5})
    monkeypatch.setattr(guard, "body", lambda run: time.sleep(1.5) or None)
    pipes = channel.open_channel(str(tmp_path / "hook-servers"), 0.3)
    assert pipes is not None
    t0 = time.monotonic()
    out = ask_slot0(pipes, payload(UNRULED, tmp_path))
    took = time.monotonic() - t0
    assert COULD_NOT_JUDGE in reason(out) and 0.25 < took < 1.2, (out, took)
    end = time.monotonic() + 5
    while (Path(pipes.folder) / "lock0").exists():
        assert time.monotonic() < end, "the slot was not freed after the body returned"
        time.sleep(0.05)
    pipes.close()
    assert not Path(pipes.folder).exists()


@pytest.fixture
def in_process(write_config, tmp_path, monkeypatch):
    """The channel in this process, named for guard.sh as the server of its parent (this test),
    with a guard body that takes 1.5 s (a call is in flight long enough to stop the server)."""
    from system1_gateway.hooks import guard

    config(write_config, tmp_path, guard={"enabled": True, "budget_s": 0.5})
    real = guard.body
    monkeypatch.setattr(guard, "body", lambda run: time.sleep(1.5) or real(run))
    data = tmp_path / "plugin-data"
    (data / "venv").parent.mkdir(parents=True)
    (data / "venv").symlink_to(sys.prefix)
    pipes = channel.open_channel(str(data / "hook-servers"), 4.7)
    assert pipes is not None
    (data / "hook-servers" / str(os.getpid())).write_text(f"{os.getpid()}\n")
    yield pipes, {**os.environ, "CLAUDE_PLUGIN_DATA": str(data)}
    pipes.close()


def _start(env: dict, command: str, cwd: Path) -> subprocess.Popen:
    proc = subprocess.Popen(["sh", str(GUARD_SH)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=env)
    proc.stdin.write(payload(command, cwd))
    proc.stdin.close()
    return proc


def _finish(proc: subprocess.Popen) -> tuple[bytes, bytes]:
    proc.wait(timeout=30)
    return proc.stdout.read(), proc.stderr.read()


def test_a_server_that_stops_answers_its_calls_in_flight(in_process, tmp_path):
    pipes, env = in_process
    proc = _start(env, UNRULED, tmp_path)
    time.sleep(0.5)  # the call is in its body
    t0 = time.monotonic()
    pipes.close()
    out, err = _finish(proc)
    assert proc.returncode == 0, err
    assert COULD_NOT_JUDGE in reason(json.loads(out)) and time.monotonic() - t0 < 3


def test_a_server_gone_mid_call_leaves_the_command_guard_its_input(in_process, tmp_path):
    """The folder removed under a call with no answer (a crash): after its wait guard.sh runs
    the command guard on the input it kept open, which judges and asks; no status 2 (a block)."""
    pipes, env = in_process
    proc = _start(env, "rm -rf ./build", tmp_path)
    time.sleep(0.5)
    channel.remove(pipes.folder)
    out, err = _finish(proc)
    assert proc.returncode == 0, err
    text = reason(json.loads(out))
    assert COULD_NOT_JUDGE in text  # the command guard read `rm -rf ./build` and asked the (absent) daemon
    assert err == b""


def test_a_watchdog_that_cannot_sleep_does_not_hang_the_guard(write_config, tmp_path, plugin):
    """`sleep` missing (or killed): the watchdog still writes its line, so guard.sh falls back
    at once instead of waiting for Claude Code's timeout (a timeout lets the command pass)."""
    config(write_config, tmp_path, guard={"enabled": True, "budget_s": 0.5})
    p = plugin()
    server = p.start()
    os.kill(server.pid, signal.SIGSTOP)
    p.env = {**p.env, "PATH": str(tmp_path / "no-tools")}
    try:
        out, took, _ = p.guard("ls", tmp_path)
    finally:
        os.kill(server.pid, signal.SIGCONT)
    assert COULD_NOT_JUDGE in reason(out) and took < 5, took


def test_an_unreadable_input_gets_the_failure_policy_not_silence(write_config, tmp_path):
    config(write_config, tmp_path, guard={"enabled": True, "budget_s": 0.5})
    pipes = channel.open_channel(str(tmp_path / "hook-servers"), 4.7)
    assert pipes is not None
    try:
        for given in (b"", b"{not json", b"[1, 2]"):
            wait_unlocked(Path(pipes.folder))
            assert COULD_NOT_JUDGE in reason(ask_slot0(pipes, given)), given
    finally:
        pipes.close()


def test_the_command_guard_told_the_input_was_lost_asks(write_config, tmp_path):
    """guard.sh read stdin but could not copy it (a full disk): the failure policy, not silence."""
    config(write_config, tmp_path, guard={"enabled": True, "budget_s": 0.5})
    proc = subprocess.run([sys.executable, "-I", "-m", "system1_gateway.hooks.guard", "--input-lost"],
                          input=b"", capture_output=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert COULD_NOT_JUDGE in reason(json.loads(proc.stdout))
