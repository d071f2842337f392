"""The plugin's hook server: the hooks answered by one warm process.

    <venv python> -I -m system1_gateway.hooks.serve [--explain]      (plugin.json `mcpServers.hooks`)

Claude Code starts this stdio MCP server with the plugin (`plugin:system1:hooks`) and keeps it
connected; `hooks/hooks.json` calls its tools `route` and `agent` (`mcp_tool` hooks), and the
guard's command, hooks/guard.sh, asks it over loopback TCP (channel.py), instead of starting
a Python process per prompt, spawn or Bash call (≈ 30 ms each: interpreter start and imports).
The `guard` tool answers the same as an `mcp_tool` call (benchmarks/hook_handlers.py measures
it); it is not shipped, as such a call fails open when this server is absent.
Each call runs the very body the command hook runs (route.py, agent.py, guard.py `body(run)`)
on a `Run` built from the tool's arguments, and answers the hook's JSON output as text: what
the command would print on stdout. The daemon is asked exactly as the command hook asks it
(the port file and its per-user token, daemon/client.py): nothing about the daemon is in the
plugin's settings.

What a call costs the user is what it makes Claude Code wait for, so:
  * a hook whose settings let it say nothing (route in `[routing] mode = "log"` with the
    picker not hinting, agent outside mode "set") is answered `{}` at once and does its work
    (the engine's features, the log line) AFTER_REPLY_S later: by then Claude Code has sent its
    request and waits on the model, so the engine's CPU does not slow Claude Code (measured:
    started at once, it added ≈ 11 ms to the prompt and delayed the next guard call);
  * every call is answered by CALL_DEADLINE_S whatever its body does: silence, or for the
    guard its failure policy (it asks);
  * while it runs, the server names itself in `<plugin data>/hook-servers/<Claude Code's pid>`
    (`announce`: its pid, the guard channel's port and keys), so hooks/guard.sh finds this
    process and starts no Python; when the server is absent (not installed, crashed,
    not connected) or gives no answer in time, guard.sh runs the command guard and its failure
    policy holds.

The arguments are the hook input's fields, which Claude Code interpolates into strings
(`"${prompt}"`; an object such as `${tool_input}` arrives as its JSON text). Empty strings are
dropped, so a field the hook input lacks reads as absent, as it does on the command path. The
evidence is hostile: every field is data handed to the body, never echoed by this server.

The guard asks the daemon only about what the policy rules cannot decide alone (guard.py
`ruled`): with the guard on, this server loads the shell grammar and the rules in the
background once started (≈ 40 ms of CPU, once per session), and a command such as `ls`, `git
status` or `git status && rm -rf ~` is answered here, as the daemon would answer it, without
the round trip (≈ 3 ms after an idle second) and even when no daemon runs.

The tools are not listed (tools/list is empty): they are for Claude Code's hooks, not the
model, and cost no context. No mcp SDK, no pydantic: it starts in tens of milliseconds and
holds no engine. Calls run concurrently in threads.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time

TYPE_CHECKING = False  # no `typing` on the short-lived path (docs/architecture.md)
if TYPE_CHECKING:
    from typing import Any, BinaryIO

from .. import __version__, bounded_json
from ..config import tables as config_tables
from . import agent, channel, common, guard, route

SERVER_NAME = "system1-hooks"
PROTOCOL_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
MAX_LINE_BYTES = common.MAX_PAYLOAD_BYTES * 2  # a JSON-RPC line holding one hook input
JSON_FIELDS = {"tool_input": dict, "skills": list}  # hook fields interpolated as their JSON text
JOIN_S = 10.0  # at EOF, how long a call still running may take to answer (hook budgets are seconds)
# Every call is answered by this time, whatever its body does (a user's rule that loops, a read
# that blocks): silence (`{}`), or the guard's failure policy, rather than Claude Code waiting out
# the hook's 5 s timeout (which would let the command run).
CALL_DEADLINE_S = 4.7
MAX_CALLS = 32  # calls running at once; past it a call is answered at once as a late one
AFTER_REPLY_S = 0.25  # a hook answered early works this long after its reply (see above)
SILENCE = "{}"
ALIVE_DIR = "hook-servers"  # under the plugin's data folder: read by hooks/guard.sh (0700)

HOOKS: dict[str, Any] = {  # tool name -> (body, on_crash): exactly what each command hook runs
    "route": (route.body, None),
    "agent": (agent.body, None),
    "guard": (guard.body, guard.failed),
}
# Hooks that may answer before their work: settings -> can the output be anything but silence?
SPEAKS: dict[str, Any] = {"route": route.speaks, "agent": agent.speaks}


def payload_of(arguments: dict[str, Any]) -> dict[str, Any]:
    """The hook input a command hook would have read from stdin, from the tool's arguments."""
    payload: dict[str, Any] = {}
    for key, value in arguments.items():
        if not isinstance(key, str) or value is None or value == "":
            continue  # an interpolated field the hook input did not have
        if key in JSON_FIELDS and isinstance(value, str):
            try:
                value = bounded_json.loads(value)
            except ValueError:
                continue
            if not isinstance(value, JSON_FIELDS[key]):
                continue
        payload[key] = value
    return payload


def call(name: str, arguments: dict[str, Any], argv: list[str] | None = None) -> dict[str, Any] | None:
    """Run hook `name` on `arguments` in this process: its output, or None (say nothing)."""
    body, on_crash = HOOKS[name]
    run = common.Run(name, argv, payload=payload_of(arguments))
    return common.answer(run, body, on_crash)


def late(name: str, arguments: dict[str, Any]) -> dict[str, Any] | None:
    """The output of a call still running at its deadline: the hook's failure policy (the guard
    asks, per `[guard] on_failure`), else silence."""
    on_crash = HOOKS[name][1]
    if on_crash is None:
        return None
    return on_crash(common.Run(name, payload=payload_of(arguments)), "no answer within the hook server's deadline")


def silent_by_settings(name: str) -> bool:
    """Can this hook say nothing whatever it finds (its output is `{}` under these settings)?
    Then it is answered at once and works after the reply."""
    speaks = SPEAKS.get(name)
    if speaks is None:
        return False
    settings, problem = config_tables.load()
    return problem is not None or not speaks(settings)


def handle(message: Any, argv: list[str] | None = None) -> dict[str, Any] | None:
    """The JSON-RPC reply to one message (None for a notification)."""
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0" or not isinstance(message.get("method"), str):
        return _error(message.get("id") if isinstance(message, dict) else None, -32600,
                      "Invalid request: not a JSON-RPC 2.0 message")
    if "id" not in message:
        return None  # notifications/initialized, notifications/cancelled: nothing to answer
    mid, method = message["id"], message["method"]
    params: dict[str, Any] = p if isinstance(p := message.get("params"), dict) else {}
    if method == "initialize":
        asked = params.get("protocolVersion")
        version = asked if asked in PROTOCOL_VERSIONS else PROTOCOL_VERSIONS[0]
        return _reply(mid, {"protocolVersion": version, "capabilities": {"tools": {}},
                            "serverInfo": {"name": SERVER_NAME, "title": "System-1 Gateway hooks",
                                           "version": __version__}})
    if method == "ping":
        return _reply(mid, {})
    if method == "tools/list":
        return _reply(mid, {"tools": []})  # hook-only tools: not offered to the model
    if method == "tools/call":
        name, arguments = params.get("name"), params.get("arguments")
        if name not in HOOKS:
            return _error(mid, -32602, f"Unknown tool: {name!r} (this server's hook tools: {', '.join(HOOKS)})")
        if arguments is not None and not isinstance(arguments, dict):
            return _error(mid, -32602, "Invalid params for tools/call: arguments is not an object")
        return _text(mid, call(str(name), arguments or {}, argv))
    return _error(mid, -32601, f"Method not found: {method}")


def safe_handle(message: Any, argv: list[str] | None = None) -> dict[str, Any] | None:
    """handle(), with an internal error reply rather than no reply (Claude Code would wait out
    the hook's timeout for an answer that never comes)."""
    try:
        return handle(message, argv)
    except BaseException as exc:  # noqa: BLE001 - a server bug (or a rule's sys.exit) must not hang the hook
        mid = message.get("id") if isinstance(message, dict) else None
        return _error(mid, -32603, f"Internal error: {type(exc).__name__}")


def _text(mid: Any, out: dict[str, Any] | None) -> dict[str, Any]:
    # Silence is `{}`: empty content makes Claude Code 2.1.332 add "UserPromptSubmit hook
    # success: UserPromptSubmit completed" to the conversation, on every prompt.
    return _reply(mid, {"content": [{"type": "text", "text": common.dumps(out) if out else SILENCE}]})


def _reply(mid: Any, result: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": mid, "result": result}


def _error(mid: Any, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": mid, "error": {"code": code, "message": message}}


class Wire:
    """stdout, one JSON-RPC message per line, written whole under a lock (calls run in threads)."""

    def __init__(self, out: BinaryIO):
        self.out, self.lock = out, threading.Lock()

    def send(self, reply: dict[str, Any] | None) -> None:
        if reply is None:
            return
        # ASCII escapes: a lone surrogate echoed from the input (`updatedInput`) cannot be UTF-8
        data = (json.dumps(reply, ensure_ascii=True, separators=(",", ":")) + "\n").encode("ascii")
        with self.lock:
            self.out.write(data)
            self.out.flush()


class Once:
    """The one reply of a call: the body's, or what a late call answers, whichever comes first."""

    def __init__(self, wire: Wire, mid: Any):
        self.wire, self.mid, self.lock, self.sent = wire, mid, threading.Lock(), False

    def send(self, reply: dict[str, Any] | None) -> bool:
        with self.lock:
            if self.sent:
                return False
            self.sent = True
        self.wire.send(reply)
        return True

    def silence(self) -> None:
        self.send(_text(self.mid, None))

    def late(self, name: Any, arguments: Any) -> None:
        """At the deadline: the hook's failure policy (never raises: a reply must go out)."""
        with self.lock:
            if self.sent:
                return
        try:
            out = late(name, arguments if isinstance(arguments, dict) else {}) if name in HOOKS else None
        except Exception:  # noqa: BLE001 - the deadline's reply must not be lost to a settings bug
            out = None
        self.send(_text(self.mid, out))


def serve(stdin: BinaryIO, stdout: BinaryIO, argv: list[str] | None = None) -> None:
    """Answer JSON-RPC lines from `stdin` until EOF; each tools/call in its own thread."""
    wire = Wire(stdout)
    calls: list[threading.Thread] = []
    stopping = threading.Event()
    try:
        _read(stdin, wire, calls, argv, stopping)
    except KeyboardInterrupt:  # Claude Code stops its MCP servers with a signal (SIGINT, SIGTERM)
        pass
    stopping.set()
    # EOF or stopped: the calls still running end (within their hook's budget): each one's
    # reply, and the work of one answered early (its log line), is not cut off.
    end = time.monotonic() + JOIN_S
    for thread in calls:
        thread.join(timeout=max(end - time.monotonic(), 0))


def _read(stdin: BinaryIO, wire: Wire, calls: list[threading.Thread], argv: list[str] | None,
          stopping: threading.Event) -> None:
    while True:
        line = stdin.readline(MAX_LINE_BYTES + 1)
        if not line:
            return
        if len(line) > MAX_LINE_BYTES and not line.endswith(b"\n"):
            while (rest := stdin.readline(MAX_LINE_BYTES)) and not rest.endswith(b"\n"):
                pass  # skip the rest of an oversized line
            wire.send(_error(None, -32600, f"Invalid request: a line over {MAX_LINE_BYTES} bytes"))
            continue
        if not line.strip():
            continue
        try:
            message = bounded_json.loads(line.decode("utf-8", "replace"))
        except (ValueError, RecursionError):
            wire.send(_error(None, -32700, "Parse error: not JSON"))
            continue
        if isinstance(message, dict) and message.get("method") == "tools/call" and "id" in message:
            calls[:] = [t for t in calls if t.is_alive()]
            once = Once(wire, message["id"])
            params = p if isinstance(p := message.get("params"), dict) else {}
            name, arguments = params.get("name"), params.get("arguments")
            if len(calls) >= MAX_CALLS:
                once.late(name, arguments)
                continue
            timer = threading.Timer(CALL_DEADLINE_S, once.late, (name, arguments))
            timer.daemon = True
            timer.start()

            def work(m: dict[str, Any] = message, reply: Once = once, stop: threading.Timer = timer,
                     hook: Any = name) -> None:
                try:
                    if silent_by_settings(hook):
                        reply.silence()  # Claude Code goes on; the work (the log line) follows
                        stop.cancel()
                        stopping.wait(AFTER_REPLY_S)  # cut short when the server is stopping
                except Exception:  # noqa: BLE001 - then the body's own reply decides
                    pass
                reply.send(safe_handle(m, argv))
                stop.cancel()

            thread = threading.Thread(target=work, daemon=True)
            thread.start()
            calls[:] = [*calls, thread]
        else:
            wire.send(safe_handle(message, argv))


def alive_dir(data_dir: str | None = None) -> str | None:
    """`<plugin data>/hook-servers`: where this server names itself and the guard channel's
    port and keys (channel.py); None without a plugin data folder. `data_dir`: the plugin's data folder
    (default CLAUDE_PLUGIN_DATA)."""
    data = os.environ.get("CLAUDE_PLUGIN_DATA", "") if data_dir is None else data_dir
    if not data or not os.path.isabs(data):
        return None
    return os.path.join(data, ALIVE_DIR)


def announce(data_dir: str | None = None, pipes: channel.Channel | None = None) -> str | None:
    """Name this server as the one answering the guard of the Claude Code process that started
    it: `<data_dir>/hook-servers/<parent pid>` (0600) holds this process's pid and, with the
    guard's channel, its port and keys (channel.py; hooks/guard.sh reads it). `data_dir`: the
    plugin's data folder (CLAUDE_PLUGIN_DATA); None when there is none."""
    folder = alive_dir(data_dir)
    if folder is None:
        return None
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
        os.chmod(folder, 0o700)  # the keys are in it: whatever made it first
        path = os.path.join(folder, str(os.getppid()))
        temp = f"{path}.{os.getpid()}.tmp"
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0), 0o600)
        with os.fdopen(fd, "w") as out:
            out.write(f"{pipes.line() if pipes is not None else os.getpid()}\n")
        os.replace(temp, path)
    except OSError:
        return None  # then hooks/guard.sh finds no server and runs the command guard: slower, never open
    return path


def withdraw(path: str | None) -> None:
    """Remove this server's name, if it is still this server's (a newer one may have replaced it)."""
    if path is None:
        return
    try:
        with open(path) as named:
            mine = named.read().split(" ", 1)[0].strip() == str(os.getpid())
        if mine:
            os.unlink(path)
    except OSError:
        pass


def warm_rules() -> threading.Thread | None:
    """With the guard or its approvals on, load the shell grammar and the policy rules in the background, so
    the first Bash call does not wait for them (the guard loads them on its first call else)."""
    settings, _ = config_tables.load()
    if not settings["guard"]["enabled"] and settings["guard"]["approve"] == "off":
        return None

    def warm() -> None:  # the import too (≈ 25 ms): the handshake does not wait for it
        from ..shell import structure

        structure.warm()

    thread = threading.Thread(target=warm, name="warm-rules", daemon=True)
    thread.start()
    return thread


def _stop(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


def main() -> int:
    import signal

    wire = sys.stdout.buffer
    sys.stdout = sys.stderr  # a print() in the user's rule must not write into the JSON-RPC stream
    if hasattr(signal, "SIGTERM"):
        signal.signal(signal.SIGTERM, _stop)  # as SIGINT: finish the running calls, then exit
    guard_channel = channel.open_channel(CALL_DEADLINE_S, sys.argv[1:]) if alive_dir() else None
    named = announce(pipes=guard_channel)
    warm_rules()
    try:
        serve(sys.stdin.buffer, wire, sys.argv[1:])
    finally:
        withdraw(named)  # first: a guard.sh from now on runs the command guard
        if guard_channel is not None:
            guard_channel.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
