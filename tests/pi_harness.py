"""The real `pi` driven headlessly for the Pi extension's tests (tests/test_pi.py,
tests/test_pi_native.py): the two supported Pi installs `.ci/run` makes, a Pi home (agent dir,
work dir, gateway state and config) per test, print/json runs and an RPC client that answers
the extension's UI requests."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from conftest import ROOT, require
from mock_openai_chat import MockOpenAIChat
from system1_gateway import pi_install
from system1_gateway.store.base import FLUSH_EVERY_S

TOOLS = Path(os.environ.get("SYSTEM1_TOOLS_DIR", ROOT / ".tools"))
NODE22 = TOOLS / "node22" / "node_modules" / ".bin" / "node"


@dataclass(frozen=True)
class PiInstall:
    """One Pi release as `.ci/run` installs it: `prefix` is its npm prefix, `package` its
    npm name (the scope moved from @mariozechner to @earendil-works at 0.74.0)."""

    version: str
    prefix: Path
    package: str
    node: Path | None = None  # a Node to run it with (Pi 1.x needs Node >= 22.19); None: `node` on PATH

    @property
    def modules(self) -> Path:
        return self.prefix / "node_modules"

    @property
    def bin(self) -> Path:
        return self.modules / ".bin" / "pi"

    def argv(self) -> list[str]:
        require(self.bin.exists(), str(self.bin))
        if self.node is None:
            return [str(self.bin)]
        require(self.node.exists(), str(self.node))
        return [str(self.node), str(self.bin.resolve())]


PI16 = PiInstall("1.6.0", TOOLS / "pi16", "@earendil-works/pi-coding-agent", NODE22)
PI073 = PiInstall("0.73.1", TOOLS / "pi", "@mariozechner/pi-coding-agent")
PIS = (PI16, PI073)  # the supported Pi releases, newest first
TSC = TOOLS / "tsc" / "node_modules" / ".bin" / "tsc"
EXTENSION = pi_install.source()  # the extension as the installed wheel ships it
CLI = Path(sys.executable).parent / "system1"
EXAMPLE = {"state": {"text": "The tests passed."}, "questions": {
    "passed": {"type": "bool", "instructions": "Did the tests pass?"},
    "kind": {"type": "choice", "instructions": "What kind of message is this?",
             "criteria": {"status": "a status report", "question": "a question", "error": "an error message"}},
    "quality": {"type": "score", "instructions": "How informative is the message?",
                "criteria": ["uninformative", "somewhat informative", "very informative"]}}}
MOCK_RUNGS = ('[providers.jev]\nkind = "mock"\nmodel = "jev-mock"\n'
              '[providers.openai]\nkind = "mock"\nmodel = "openai-mock"\n')


class PiHome:
    def __init__(self, base: Path, config: str | None = MOCK_RUNGS, pi: PiInstall = PI16):
        self.pi = pi
        self.base, self.agent, self.work = base, base / "agent", base / "work"
        self.agent.mkdir()
        self.work.mkdir()
        self.settings = self.agent / "system1.json"
        self.env = {k: v for k, v in os.environ.items() if not k.startswith(("SYSTEM1_", "PI_"))}
        self.env.update(PI_CODING_AGENT_DIR=str(self.agent), PI_OFFLINE="1", JITI_FS_CACHE="false",
                        SYSTEM1_STATE_DIR=str(base / "state"), XDG_CONFIG_HOME=str(base / "xdg"),
                        SYSTEM1_SERVE_AUTOSTART="0", SYSTEM1_SERVE_PORT="0", SYSTEM1_CLI=str(CLI))
        if config is not None:
            path = base / "config.toml"
            path.write_text(config)
            self.env["SYSTEM1_CONFIG"] = str(path)

    def write_settings(self, data: Any) -> None:
        self.settings.write_text(data if isinstance(data, str) else json.dumps(data))

    def args(self, api: MockOpenAIChat, mode: list[str]) -> list[str]:
        (self.agent / "models.json").write_text(json.dumps(api.models_json()))
        return [*self.pi.argv(), *mode, "--no-session", "--model", "mock/mock-model", "--no-extensions", "-e",
                str(EXTENSION / "index.ts")]

    def print_mode(self, api: MockOpenAIChat, prompt: str, json_mode: bool = False, env: dict | None = None,
                   extra: tuple[str, ...] = ()):
        """`extra`: more pi arguments, e.g. Pi 1.x's built-in extensions (`-e builtin:codemode`),
        which `--no-extensions` leaves out."""
        mode = ["--mode", "json"] if json_mode else ["-p"]
        return subprocess.run([*self.args(api, mode), *extra, prompt], capture_output=True, text=True, cwd=self.work,
                              env={**self.env, **(env or {})}, stdin=subprocess.DEVNULL, timeout=180)

    def system1(self, *args: str) -> dict[str, Any]:
        proc = subprocess.run([str(CLI), *args], capture_output=True, text=True, env=self.env, timeout=120)
        return json.loads(proc.stdout)

    def judge_calls(self) -> int:
        time.sleep(FLUSH_EVERY_S + 0.2)  # counters are flushed once a second: a late call must be seen
        return self.system1("status")["today"]["requests"]


class Rpc:
    """`pi --mode rpc`: JSONL commands in, events out; UI requests answered by `answer`."""

    def __init__(self, home: PiHome, api: MockOpenAIChat, answer=None):
        self.answer = answer or (lambda request: None)
        self.proc = subprocess.Popen(home.args(api, ["--mode", "rpc"]), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True, cwd=home.work, env=home.env)
        self.events: queue.Queue = queue.Queue()
        self.ui: list[dict[str, Any]] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            try:
                self.events.put(json.loads(line))
            except ValueError:
                pass

    def send(self, obj: dict[str, Any]) -> None:
        self.proc.stdin.write(json.dumps(obj) + "\n")
        self.proc.stdin.flush()

    def prompt(self, message: str, until: str, timeout: float = 120) -> list[dict[str, Any]]:
        """Send a prompt; collect events until one of type `until` ("response" for commands,
        "agent_end" for model turns), answering UI requests on the way."""
        rid = f"p{time.monotonic_ns()}"
        self.send({"id": rid, "type": "prompt", "message": message})
        seen, end = [], time.monotonic() + timeout
        while time.monotonic() < end:
            try:
                event = self.events.get(timeout=max(0.1, end - time.monotonic()))
            except queue.Empty:
                break
            seen.append(event)
            if event.get("type") == "extension_ui_request":
                self.ui.append(event)
                reply = self.answer(event)
                if reply is not None:
                    self.send({"type": "extension_ui_response", "id": event["id"], **reply})
            if event.get("type") == until and (until != "response" or event.get("id") == rid):
                return seen
        raise AssertionError(f"no {until} within {timeout} s; saw {seen[-5:]}; stderr {self.proc.stderr.read() if self.proc.poll() is not None else ''}")

    def close(self) -> None:
        self.proc.stdin.close()
        try:
            self.proc.wait(20)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def notified(events: list[dict[str, Any]]) -> list[str]:
    return [e.get("message", "") for e in events if e.get("type") == "extension_ui_request" and e.get("method") == "notify"]


def statuses(events: list[dict[str, Any]]) -> list[str]:
    return [e.get("statusText") for e in events if e.get("type") == "extension_ui_request" and e.get("method") == "setStatus"]


def call_tool(name: str, arguments: dict[str, Any]):
    return lambda body: ("tool", name, arguments)
