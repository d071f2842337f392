"""What each Claude Code hook handler type adds to a prompt and to a tool call, end to end,
through the real `claude` CLI against a plugin-disabled baseline.

    SYSTEM1_TOOLS_DIR=/.tools python benchmarks/hook_handlers.py [--rounds 8] [--turns 5]

One warm daemon (fast tier: routing features and `destructive` answered by the heads), routing
hint and guard on, a mock Messages API (tests/mock_anthropic.py). Four arms, each a `claude -p`
session fed prompts one at a time over `--input-format stream-json`, with the plugin loaded by
`--plugin-dir`:

  baseline   no plugin
  command    route and guard as `<venv python> -I -m system1_gateway.hooks.<name>` (per call)
  http       route and guard as `http` hooks to a warm server in another process that runs the
             same hook bodies (hooks/serve.py `call`); its token arrives in a header
             interpolated from an environment variable (`allowedEnvVars`)
  mcp_tool   route and guard as `mcp_tool` calls to the plugin's own hook server (hooks/serve.py)
  shipped    the UserPromptSubmit and Bash entries of hooks/hooks.json as shipped: route as an
             `mcp_tool` call, the guard as one command, hooks/guard.sh (sh, then bash), which
             asks the same hook server over loopback (hooks/channel.py)

  shipped_before  (with --before REV) the same at another commit: its hooks.json, scripts and
             hook server (its src/ first on the path), e.g. the named pipes of cda51f6

  mcp_pair   the guard as shipped before 2026-12-06: its `mcp_tool` call and, beside it, a
             command that exits at once (what the earlier hooks/guard.sh did while the server
             ran; it ran the command guard only when no server did)

and the floors of each handler type, hooks that do nothing (`--arms` to pick them; `--arms travel`
runs baseline, command_stub, mcp_stub and shipped, and prints what the shipped entries add over
no plugin and over a do-nothing hook of their own type, measured in the same run):

  command_stub   `/bin/true` (exec form: Claude Code's spawn and pipes, no interpreter)
  http_stub      an `http` hook whose server answers `{}` at once
  mcp_stub       an `mcp_tool` hook whose stdio server answers `{}` at once

Per turn the mock answers the prompt with one Bash tool call (`true`), then ends the turn; the
next prompt is written `--gap-s` after the turn ended (1 s: a person reads and types; a hook
that works after its reply does so then, as it would while a real model answers). Two
figures per turn: **prompt** = from writing the prompt on Claude Code's stdin to the first
Messages request (UserPromptSubmit hooks run in between); **tool** = from the mock's tool_use
reply to the request carrying its result (the PreToolUse hooks, the permission check and the
command). Arms are interleaved session by session, in a new order each round, so a busy
machine slows all alike. Printed: p50 / p95 per arm and what each adds to the baseline's p50.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import secrets
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from bench_stats import pct

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

PROMPT = "Explain how the retry logic in src/net/client.py decides when to give up on a request, turn {i}"
COMMAND = "true"
CONFIG = ('[providers.embedded]\ntier = "fast"\n[routing]\nenabled = true\nmode = "{mode}"\nmin_confidence = 0.0\n'
          'log_dirs = [{project}]\n[skills]\nenabled = false\n[guard]\nenabled = true\nmin_confidence = 0.7\n')
HINT = "System-1 routing hint:"
PLUGIN = "s1bench"
# No plugin, a do-nothing hook of each type the shipped entries use, and the shipped entries.
TRAVEL = ("baseline", "command_stub", "mcp_stub", "shipped")
# The handler type of the shipped entries: route is an `mcp_tool` hook, the guard a command.
SHIPPED_TYPE = {"prompt": "mcp_stub", "tool": "command_stub"}
TOKEN_VAR = "SYSTEM1_BENCH_HOOK_TOKEN"
FIELDS = ["hook_event_name", "session_id", "transcript_path", "cwd", "permission_mode", "prompt_id", "prompt",
          "source", "tool_name", "tool_input", "tool_use_id"]


# -- the http arm's server (a separate process: `--http-server PORT TOKEN`) ---------------------

def http_server(port: int, token: str, stub: bool = False) -> None:
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from system1_gateway.hooks import serve

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:
            pass

        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("content-length") or 0))
            name = self.path.rsplit("/", 1)[-1]
            if self.headers.get("authorization") != f"Bearer {token}" or name not in serve.HOOKS:
                self.send_response(401)
                self.send_header("content-length", "0")
                self.end_headers()
                return
            payload = json.loads(raw or b"{}")
            out = None if stub else serve.call(name, payload if isinstance(payload, dict) else {})
            data = json.dumps(out or {}).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    ThreadingHTTPServer(("127.0.0.1", port), Handler).serve_forever()


def stub_mcp_server() -> None:
    """A stdio MCP server whose tools answer `{}` at once: the floor of an `mcp_tool` hook."""
    for line in sys.stdin:
        message = json.loads(line)
        if "id" not in message:
            continue
        method = message.get("method")
        result: dict = {}
        if method == "initialize":
            result = {"protocolVersion": message["params"]["protocolVersion"], "capabilities": {"tools": {}},
                      "serverInfo": {"name": "stub", "version": "0"}}
        elif method == "tools/list":
            result = {"tools": []}
        elif method == "tools/call":
            result = {"content": [{"type": "text", "text": "{}"}]}
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}) + "\n")
        sys.stdout.flush()


# -- the arms ------------------------------------------------------------------------------------

BEFORE: list[Path] = []  # with --before: a worktree of that commit (arm shipped_before)

def plugin_dir(base: Path, arm: str, python: str, http_port: int, stub_port: int) -> Path | None:
    if arm == "baseline":
        return None
    root = base / "plugins" / arm
    (root / ".claude-plugin").mkdir(parents=True)
    (root / "hooks").mkdir()
    manifest: dict = {"name": PLUGIN, "version": "0.0.0", "description": f"hook handler benchmark: {arm}"}

    def handler(name: str) -> dict:
        if arm == "command_stub":
            return {"type": "command", "command": "/bin/true", "args": [], "timeout": 5}
        if arm == "http_stub":
            return {"type": "http", "url": f"http://127.0.0.1:{stub_port}/hook/{name}", "timeout": 5,
                    "headers": {"Authorization": f"Bearer ${TOKEN_VAR}"}, "allowedEnvVars": [TOKEN_VAR]}
        if arm == "mcp_stub":
            return {"type": "mcp_tool", "server": f"plugin:{PLUGIN}:hooks", "tool": name, "timeout": 5,
                    "input": {field: "${%s}" % field for field in FIELDS}}
        if arm == "command":
            return {"type": "command", "command": python, "args": ["-I", "-m", f"system1_gateway.hooks.{name}"],
                    "timeout": 5}
        if arm == "http":
            return {"type": "http", "url": f"http://127.0.0.1:{http_port}/hook/{name}", "timeout": 5,
                    "headers": {"Authorization": f"Bearer ${TOKEN_VAR}"}, "allowedEnvVars": [TOKEN_VAR]}
        return {"type": "mcp_tool", "server": f"plugin:{PLUGIN}:hooks", "tool": name, "timeout": 5,
                "input": {field: "${%s}" % field for field in FIELDS}}

    if arm in ("shipped", "shipped_before"):  # hooks.json's own entries, the plugin renamed; its scripts beside them
        source = ROOT if arm == "shipped" else BEFORE[0]
        shipped = json.loads((source / "hooks" / "hooks.json").read_text())["hooks"]
        for script in ("serve.sh", "guard.sh"):
            shutil.copy(source / "hooks" / script, root / "hooks" / script)
        manifest["mcpServers"] = json.loads((source / ".claude-plugin" / "plugin.json").read_text())["mcpServers"]
        if arm == "shipped_before":  # that commit's hook server: its src/ first on the path
            run = (f"import sys, runpy; sys.path.insert(0, {str(source / 'src')!r}); sys.argv[1:] = []; "
                   "runpy.run_module('system1_gateway.hooks.serve', run_name='__main__')")
            manifest["mcpServers"] = {"hooks": {"command": python, "args": ["-I", "-c", run]}}
        hooks = {"UserPromptSubmit": shipped["UserPromptSubmit"],
                 "PreToolUse": [e for e in shipped["PreToolUse"] if e["matcher"] == "Bash"]}
        text = json.dumps({"hooks": hooks}).replace("plugin:system1:hooks", f"plugin:{PLUGIN}:hooks")
        (root / ".claude-plugin" / "plugin.json").write_text(json.dumps(manifest))
        (root / "hooks" / "hooks.json").write_text(text)
        return root
    if arm == "mcp_tool":
        manifest["mcpServers"] = {"hooks": {"command": "sh", "args": [str(ROOT / "hooks" / "serve.sh")]}}
    if arm == "mcp_stub":
        manifest["mcpServers"] = {"hooks": {"command": python, "args": ["-I", str(Path(__file__).resolve()),
                                                                         "--stub-mcp"]}}
    guard = [handler("guard")]
    if arm == "mcp_pair":
        manifest["mcpServers"] = {"hooks": {"command": "sh", "args": [str(ROOT / "hooks" / "serve.sh")]}}
        guard.append({"type": "command", "command": "sh", "args": ["-c", "exit 0"], "timeout": 5})
    hooks = {"UserPromptSubmit": [{"hooks": [handler("route")]}],
             "PreToolUse": [{"matcher": "Bash", "hooks": guard}]}
    (root / ".claude-plugin" / "plugin.json").write_text(json.dumps(manifest))
    (root / "hooks" / "hooks.json").write_text(json.dumps({"hooks": hooks}))
    return root


class Timed:
    """The mock's script: a Bash call, then the end of the turn; stamps each request and reply."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.events: list[tuple[str, float, dict]] = []

    def __call__(self, body: dict) -> list[dict]:
        from mock_anthropic import tool_results

        now = time.perf_counter()
        result = bool(tool_results(body))
        with self.lock:
            self.events.append(("result" if result else "prompt", now, body))
        if result:
            return [{"type": "text", "text": "done."}]
        blocks = [{"type": "tool_use", "name": "Bash", "input": {"command": COMMAND, "description": "run it"}}]
        with self.lock:
            self.events.append(("replied", time.perf_counter(), body))
        return blocks


def session(claude: str, env: dict, cwd: Path, plugin: Path | None, turns: int,
            debug: Path | None = None, gap_s: float = 1.0) -> dict[str, list[float]]:
    from mock_anthropic import MockAnthropic, user_text

    timed = Timed()
    out: dict[str, list[float]] = {"prompt": [], "tool": [], "hinted": []}
    with MockAnthropic(timed) as api:
        args = [claude, "-p", "--input-format", "stream-json", "--output-format", "stream-json", "--verbose",
                "--allowedTools", "Bash"]
        if plugin is not None:
            args += ["--plugin-dir", str(plugin)]
        if debug is not None:
            args += ["--debug-file", str(debug)]
        proc = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                env={**env, "ANTHROPIC_BASE_URL": api.url, "ANTHROPIC_API_KEY": "sk-ant-api03-mock"},
                                cwd=cwd, text=True)
        assert proc.stdin is not None and proc.stdout is not None
        try:
            for i in range(turns + 1):  # turn 0 warms the session (MCP connect, first hook runs)
                if i:
                    time.sleep(gap_s)
                with timed.lock:
                    start = len(timed.events)
                sent = time.perf_counter()
                proc.stdin.write(json.dumps({"type": "user", "message": {"role": "user",
                                             "content": PROMPT.format(i=i)}}) + "\n")
                proc.stdin.flush()
                for line in proc.stdout:
                    if json.loads(line).get("type") == "result":
                        break
                else:
                    raise RuntimeError("claude ended before the turn's result")
                with timed.lock:
                    events = timed.events[start:]
                stamps = {kind: (t, body) for kind, t, body in reversed(events)}
                if i == 0 or not {"prompt", "replied", "result"} <= stamps.keys():
                    continue
                out["prompt"].append((stamps["prompt"][0] - sent) * 1000)
                out["tool"].append((stamps["result"][0] - stamps["replied"][0]) * 1000)
                out["hinted"].append(float(HINT in user_text(stamps["prompt"][1])))
        finally:
            proc.stdin.close()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--turns", type=int, default=5, help="measured prompts per session (after one warm-up)")
    parser.add_argument("--arms", default="baseline,command,http,mcp_tool,shipped",
                        help=f"comma-separated arms, or 'travel' for {','.join(TRAVEL)}: the figures that travel "
                             "(what the shipped hooks add over a do-nothing hook of the same type, same run)")
    parser.add_argument("--mode", choices=("hint", "log"), default="hint",
                        help='[routing] mode: "hint" waits for the engine; "log" only records')
    parser.add_argument("--http-server", nargs=2, metavar=("PORT", "TOKEN"), help=argparse.SUPPRESS)
    parser.add_argument("--stub", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--debug-dir", type=Path,
                        help="keep each session's Claude Code debug log here, and print each hook's own time from them")
    parser.add_argument("--before", metavar="REV",
                        help="arm shipped_before: hooks.json, its scripts and its hook server at that commit")
    parser.add_argument("--gap-s", type=float, default=1.0, help="pause between a turn's end and the next prompt")
    parser.add_argument("--stub-mcp", action="store_true", help=argparse.SUPPRESS)
    a = parser.parse_args()
    if a.http_server:
        http_server(int(a.http_server[0]), a.http_server[1], a.stub)
        return 0
    if a.stub_mcp:
        stub_mcp_server()
        return 0
    tools = Path(os.environ.get("SYSTEM1_TOOLS_DIR", ROOT / ".tools"))
    claude = str(tools / "cc" / "node_modules" / ".bin" / "claude")
    arms = list(TRAVEL) if a.arms == "travel" else a.arms.split(",")
    if ("shipped_before" in arms) != bool(a.before):
        raise SystemExit("the arm shipped_before and --before REV go together")
    with tempfile.TemporaryDirectory(prefix="hook-handlers-") as tmp:
        base = Path(tmp)
        if a.before:
            BEFORE.append(base / "before")
            subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "-q", "--detach", str(BEFORE[0]), a.before],
                           check=True)
        home, project, install = base / "home", base / "project", base / "install"
        for path in (home, project, install):
            path.mkdir(parents=True)
        (install / "venv").symlink_to(Path(sys.prefix))
        subprocess.run(["git", "init", "-q", str(project)], check=True)
        (base / "xdg" / "system1").mkdir(parents=True)
        (base / "xdg" / "system1" / "config.toml").write_text(CONFIG.format(mode=a.mode,
                                                                              project=json.dumps(str(project))))
        token = secrets.token_urlsafe(24)
        env = {"HOME": str(home), "PATH": os.environ["PATH"], "DISABLE_AUTOUPDATER": "1",
               "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "ENABLE_TOOL_SEARCH": "false",
               "SYSTEM1_STATE_DIR": str(base / "state"), "XDG_CONFIG_HOME": str(base / "xdg"),
               "SYSTEM1_INSTALL_DIR": str(install), "SYSTEM1_SERVE_PORT": "0", "SYSTEM1_SERVE_AUTOSTART": "0",
               TOKEN_VAR: token}
        python = str(install / "venv" / "bin" / "python")
        cli = [sys.executable, "-m", "system1_gateway.cli", "daemon"]
        subprocess.run([*cli, "start"], env=env, check=True, capture_output=True, timeout=180)
        import socket

        def free_port() -> int:
            with socket.socket() as probe:
                probe.bind(("127.0.0.1", 0))
                return probe.getsockname()[1]

        http_port, stub_port = free_port(), free_port()
        server = subprocess.Popen([sys.executable, __file__, "--http-server", str(http_port), token], env=env)
        stub = subprocess.Popen([sys.executable, __file__, "--http-server", str(stub_port), token, "--stub"],
                                env=env)
        try:
            end = time.monotonic() + 180
            while json.loads(subprocess.run([*cli, "status"], env=env, capture_output=True, text=True).stdout
                             ).get("health") != "ok":
                if time.monotonic() > end:
                    raise SystemExit("the daemon did not become ready")
                time.sleep(0.2)
            plugins = {arm: plugin_dir(base, arm, python, http_port, stub_port) for arm in arms}
            results = {arm: {"prompt": [], "tool": [], "hinted": []} for arm in arms}
            rng = random.Random(28)
            for r in range(a.rounds):
                order = arms[:]
                rng.shuffle(order)
                for arm in order:
                    debug = a.debug_dir / f"{arm}-{r + 1}.log" if a.debug_dir else None
                    got = session(claude, env, project, plugins[arm], a.turns, debug, a.gap_s)
                    for key, values in got.items():
                        results[arm][key] += values
                print(f"round {r + 1}/{a.rounds} done", file=sys.stderr, flush=True)
        finally:
            server.terminate()
            stub.terminate()
            subprocess.run([*cli, "stop"], env=env, capture_output=True, timeout=60)
        shutil.rmtree(base / "plugins", ignore_errors=True)
        if BEFORE:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(BEFORE[0])], check=False)
        log = base / "state" / "logs" / "routing.jsonl"
        records = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
        hooked = sum(1 for arm in arms if arm not in ("baseline", "command_stub", "http_stub", "mcp_stub"))
    report(results, a, os.cpu_count() or 0)
    travel(results)
    if a.debug_dir:
        hook_times(a.debug_dir, arms)
    print(f"\nrouting log: {sum(r.get('source') == 'prompt' for r in records)} prompt records for "
          f"{hooked * a.rounds * (a.turns + 1)} prompts sent to the {hooked} arms that run the route hook")
    return 0


def report(results: dict[str, dict[str, list[float]]], a: argparse.Namespace, cpus: int) -> None:
    base = results.get("baseline") or {"prompt": [], "tool": []}
    print(f"\nClaude Code 2.1.332 hook handlers, end to end ([routing] mode = {a.mode}; {a.rounds} rounds x {a.turns} "
          f"turns per arm, {a.gap_s:g} s between turns, {cpus} CPUs; ms; added = arm - baseline at the same "
          "percentile)\n")
    print("| arm | prompt p50 | prompt p95 | added p50 | added p95 | tool call p50 | tool call p95 "
          "| added p50 | added p95 | x baseline p50 (prompt / tool) | hinted |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for arm, r in results.items():
        if not r["prompt"]:
            print(f"| {arm} | no samples |")
            continue
        row = [arm]
        ratios = []
        for key in ("prompt", "tool"):
            p50, p95 = statistics.median(r[key]), pct(r[key], 0.95)
            b50 = statistics.median(base[key]) if base[key] else float("nan")
            b95 = pct(base[key], 0.95) if base[key] else float("nan")
            row += [f"{p50:.1f}", f"{p95:.1f}", f"{p50 - b50:+.1f}", f"{p95 - b95:+.1f}"]
            ratios.append(f"{p50 / b50:.2f}")
        row += [" / ".join(ratios), f"{sum(r['hinted']):.0f}/{len(r['hinted'])}"]
        print("| " + " | ".join(row) + " |")


def travel(results: dict[str, dict[str, list[float]]]) -> None:
    """The figures that travel: per prompt and per Bash call, no plugin, a do-nothing command
    hook, a do-nothing `mcp_tool` hook and the shipped entries side by side (p50 / p95), and
    what the shipped entries add over no plugin and over a do-nothing hook of their own type
    (route: `mcp_tool`; guard: command), all from the same run."""
    if not {"baseline", "shipped"} <= results.keys():
        return
    print("\nWhat the shipped hooks add, over no plugin and over a do-nothing hook of the same type, same run "
          "(ms, p50 / p95)\n")
    stubs = [arm for arm in ("command_stub", "mcp_stub") if results.get(arm, {}).get("prompt")]
    print("| per | no plugin | " + " | ".join(f"{arm} (+ over none)" for arm in stubs)
          + " | shipped (+ over none) | shipped − do-nothing of its type |")
    print("|---|---|" + "---|" * len(stubs) + "---|---|")
    for key, label in (("prompt", "prompt (UserPromptSubmit)"), ("tool", "Bash call (PreToolUse)")):
        def at(arm: str) -> tuple[float, float]:
            values = results[arm][key]
            return statistics.median(values), pct(values, 0.95)
        none = at("baseline")
        cells = [label, f"{none[0]:.1f} / {none[1]:.1f}"]
        for arm in stubs:
            p50, p95 = at(arm)
            cells.append(f"{p50:.1f} / {p95:.1f} ({p50 - none[0]:+.1f} / {p95 - none[1]:+.1f})")
        ship = at("shipped")
        cells.append(f"{ship[0]:.1f} / {ship[1]:.1f} ({ship[0] - none[0]:+.1f} / {ship[1] - none[1]:+.1f})")
        same = SHIPPED_TYPE[key]
        if same in stubs:
            stub = at(same)
            cells.append(f"{ship[0] - stub[0]:+.1f} / {ship[1] - stub[1]:+.1f} (vs {same})")
        else:
            cells.append(f"– (arm {same} not run)")
        print("| " + " | ".join(cells) + " |")


def hook_times(folder: Path, arms: list[str]) -> None:
    """Each hook's own time as Claude Code's debug logs show it: an `mcp_tool` call from
    "mcp_tool calling" to its "success" line, a command hook its "finished … (N ms)"; and per
    Bash call the time from the tool_use reply's first streamed chunk to the command's dispatch
    (every PreToolUse hook and the permission check: the part of the tool call a hook can add
    to, free of the model's and the command's own time; the warm-up turn not counted)."""
    from datetime import datetime

    def ms(line: str) -> float:
        return datetime.strptime(line[:23], "%Y-%m-%dT%H:%M:%S.%f").timestamp() * 1000

    print("\nEach hook's own time in Claude Code's debug log (ms, p50 / p95, n)\n")
    print("| arm | hook | p50 | p95 | n |\n|---|---|---|---|---|")
    for arm in arms:
        times: dict[str, list[float]] = {}
        for path in sorted(folder.glob(f"{arm}-*.log")):
            calling: dict[str, float] = {}  # hook event -> when its mcp_tool call started
            chunk: float | None = None  # when the latest reply began to stream
            warmed = False  # the session's first Bash call (turn 0, the warm-up) is not counted
            for line in path.read_text(errors="replace").splitlines():
                if "Hooks: mcp_tool calling" in line:
                    tool = line.split("calling ", 1)[1].split(" ", 1)[0].rsplit("/", 1)[-1]
                    calling[tool] = ms(line)
                elif " success" in line and ('"Hook UserPromptSubmit' in line or '"Hook PreToolUse' in line):
                    tool = "route" if "UserPromptSubmit" in line else "guard"
                    if tool in calling:
                        times.setdefault(f"mcp_tool {tool}", []).append(ms(line) - calling.pop(tool))
                elif "finished with status" in line and line.rstrip().endswith("ms)"):
                    event = "prompt" if "UserPromptSubmit" in line else "tool"
                    times.setdefault(f"command ({event})", []).append(float(line.rsplit("(", 1)[1][:-3]))
                elif "Stream started - received first chunk" in line:
                    chunk = ms(line)
                elif "tool_dispatch_start tool=Bash" in line and chunk is not None:
                    # the tool_use reply's first chunk to the command's dispatch: the PreToolUse
                    # hooks and the permission check, without the model's or the command's time
                    if warmed:
                        times.setdefault("Bash call: reply to dispatch", []).append(ms(line) - chunk)
                    chunk, warmed = None, True
        for hook, values in sorted(times.items()):
            print(f"| {arm} | {hook} | {statistics.median(values):.1f} | {pct(values, 0.95):.1f} | {len(values)} |")


if __name__ == "__main__":
    sys.exit(main())
