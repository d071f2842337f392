"""The Pi extension with the real `pi` (0.73.1 from npm, installed by `.ci/run`), headless,
against a loopback mock of the OpenAI chat API (tests/mock_openai_chat.py) that scripts the
model's tool calls and records every request; the gateway is this repository's, through its
CLI or its warm daemon. Also: the extension's own unit tests (Node's test runner), the type
check against Pi's installed types, and the schema kept identical to the gateway's."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from system1_gateway import pi_install
from system1_gateway.state.base import FLUSH_EVERY_S

from conftest import ROOT, require
from mock_openai_chat import MockOpenAIChat, text_of, tool_messages

TOOLS = Path(os.environ.get("SYSTEM1_TOOLS_DIR", ROOT / ".tools"))
PI = TOOLS / "pi" / "node_modules" / ".bin" / "pi"
NODE22 = TOOLS / "node22" / "node_modules" / ".bin" / "node"
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
    def __init__(self, base: Path, config: str | None = MOCK_RUNGS):
        require(PI.exists(), str(PI))
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
        return [str(PI), *mode, "--no-session", "--model", "mock/mock-model", "--no-extensions", "-e",
                str(EXTENSION / "index.ts")]

    def print_mode(self, api: MockOpenAIChat, prompt: str, json_mode: bool = False, env: dict | None = None):
        mode = ["--mode", "json"] if json_mode else ["-p"]
        return subprocess.run([*self.args(api, mode), prompt], capture_output=True, text=True, cwd=self.work,
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


# -- the extension's own checks ---------------------------------------------------------------

def test_node_unit_tests_pass():
    require(NODE22.exists(), str(NODE22))
    proc = subprocess.run([str(NODE22), "--test", "tests/pi/*.test.ts"], capture_output=True, text=True, timeout=120,
                          cwd=ROOT)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert "# fail 0" in proc.stdout


def test_typescript_type_checks_against_the_installed_pi(tmp_path):
    require(TSC.exists(), str(TSC))
    require(PI.exists(), str(PI))
    modules = TOOLS / "pi" / "node_modules"
    config = {"compilerOptions": {
        "target": "ES2022", "module": "ESNext", "moduleResolution": "bundler", "strict": True, "noEmit": True,
        "allowImportingTsExtensions": True, "skipLibCheck": True, "types": ["node"],
        "typeRoots": [str(TOOLS / "tsc" / "node_modules" / "@types")], "baseUrl": ".",
        "paths": {"*": [f"{modules}/*", f"{modules}/@types/*", f"{TOOLS / 'tsc' / 'node_modules' / '@types'}/*"]}},
        "files": [str(EXTENSION / "index.ts"), str(EXTENSION / "core.ts")]}
    (tmp_path / "tsconfig.json").write_text(json.dumps(config))
    proc = subprocess.run([str(TSC), "-p", str(tmp_path / "tsconfig.json")], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    broken = tmp_path / "broken.ts"
    broken.write_text('import * as core from "%s";\nconst n: number = core.readSettings().order;\n' % (EXTENSION / "core.ts"))
    config["files"] = [str(broken)]
    (tmp_path / "tsconfig.json").write_text(json.dumps(config))
    assert subprocess.run([str(TSC), "-p", str(tmp_path / "tsconfig.json")], capture_output=True,
                          timeout=300).returncode != 0  # the check can fail


def test_the_tool_schema_is_the_gateways_published_judge_schema():
    from system1_gateway.results import json_schemas

    shipped = json.loads((EXTENSION / "judge_request.schema.json").read_text())
    assert shipped == json_schemas()["judge_request"]


# -- the tool through the real pi ----------------------------------------------------------------

def test_the_spec_example_is_judged_and_the_answers_reach_the_model(tmp_path):
    home = PiHome(tmp_path)
    with MockOpenAIChat(call_tool("system1_judge", EXAMPLE)) as api:
        proc = home.print_mode(api, "Judge the test output with System 1", json_mode=True)
    assert proc.returncode == 0, proc.stderr
    tool = [m for m in tool_messages(api.requests[-1])]
    text = text_of(tool[-1]["content"])
    assert "passed · bool: p(true) = 0.900" in text and "kind · choice: " in text and "quality · score: " in text
    assert "The tests passed." not in text  # the evidence is not echoed
    end = [json.loads(line) for line in proc.stdout.splitlines() if '"tool_execution_end"' in line][0]
    details = end["result"]["details"]
    assert details["status"] == "answered" and details["order"] == ["jev"] and details["provider"] == "jev"
    assert set(details["answers"]) == {"passed", "kind", "quality"} and details["usage"]["input_tokens"] is None
    assert not end["isError"]


@pytest.mark.models
def test_the_spec_example_on_the_real_embedded_engine_through_the_warm_daemon(tmp_path, prejoined):
    home = PiHome(tmp_path, config=None)
    prejoined(tmp_path / "state")  # the session's joined GGUF: a warm daemon, not a first run
    home.write_settings({"waterfall": ["embedded"]})
    started = subprocess.run([str(CLI), "daemon", "start"], capture_output=True, text=True, env=home.env, timeout=180)
    assert started.returncode == 0, started.stdout + started.stderr
    try:
        end = time.monotonic() + 180
        while home.system1("daemon", "status").get("health") != "ok":
            assert time.monotonic() < end
            time.sleep(0.5)
        with MockOpenAIChat(call_tool("system1_judge", EXAMPLE)) as api:
            proc = home.print_mode(api, "Judge the test output with System 1", json_mode=True)
        assert proc.returncode == 0, proc.stderr
        end_event = [json.loads(line) for line in proc.stdout.splitlines() if '"tool_execution_end"' in line][0]
        details = end_event["result"]["details"]
        assert details["status"] == "answered" and details["provider"] == "embedded", details
        assert details["attempts"][0]["provider"] == "embedded"  # straight to the daemon, not via the CLI
    finally:
        subprocess.run([str(CLI), "daemon", "stop"], capture_output=True, env=home.env, timeout=60)


def test_an_invalid_waterfall_is_an_error_even_with_a_valid_backend_and_nothing_is_called(tmp_path):
    home = PiHome(tmp_path)
    home.write_settings({"backend": "jev", "waterfall": ["jev", "jev"]})
    with MockOpenAIChat(call_tool("system1_judge", EXAMPLE)) as api:
        proc = home.print_mode(api, "Judge the test output with System 1")
    text = text_of(tool_messages(api.requests[-1])[-1]["content"])
    assert proc.returncode == 0 and str(home.settings) in text and "twice" in text
    assert home.judge_calls() == 0


# -- /system1 -------------------------------------------------------------------------------------

def test_status_makes_no_model_request_and_no_engine_call(tmp_path):
    home = PiHome(tmp_path)
    home.write_settings({"waterfall": ["jev", "openai"], "theme": "x"})
    with MockOpenAIChat() as api:
        rpc = Rpc(home, api)
        try:
            events = rpc.prompt("/system1 status", until="response")
        finally:
            rpc.close()
    text = "\n".join(notified(events))
    assert "order: jev → openai-decisions" in text and "jev: mock" in text and "cooling: none" in text, text
    assert api.requests == [] and home.judge_calls() == 0


def test_order_with_openai_is_refused_headless_and_the_file_is_unchanged(tmp_path):
    home = PiHome(tmp_path)
    home.write_settings('{"theme": "dark", "waterfall": ["jev"]}')
    with MockOpenAIChat() as api:
        proc = home.print_mode(api, "/system1 order openai jev")
    assert proc.returncode == 0 and api.requests == []
    assert home.settings.read_text() == '{"theme": "dark", "waterfall": ["jev"]}'


def test_order_with_openai_confirmed_through_rpc_rewrites_the_file_keeping_other_fields(tmp_path):
    home = PiHome(tmp_path)
    home.write_settings({"theme": "dark", "backend": "jev", "waterfall": ["jev"], "toolGate": {"enabled": False}})
    confirms = []

    def answer(request):
        if request.get("method") == "confirm":
            confirms.append(request)
            return {"confirmed": True}
        return None

    with MockOpenAIChat() as api:
        rpc = Rpc(home, api, answer)
        try:
            rpc.prompt("/system1 order openai jev", until="response")
            rpc.prompt("/system1 order jev openai", until="response")  # reordering: no new confirmation
            rpc.prompt("/system1 jev", until="response")
            rpc.prompt("/system1 order jev openai-decisions", until="response")  # added again: asks again
            events = rpc.prompt("/system1 order bogus words here twice twice", until="response")
            unknown = rpc.prompt("/system1 frobnicate", until="response")
        finally:
            rpc.close()
    assert len(confirms) == 2 and "auto-recharge is off" in confirms[0]["message"]
    data = json.loads(home.settings.read_text())
    assert list(data) == ["theme", "backend", "waterfall", "toolGate"]
    assert data == {"theme": "dark", "backend": "jev", "waterfall": ["jev", "openai-decisions"], "toolGate": {"enabled": False}}
    assert "openai" in json.loads((tmp_path / "state" / "consents.json").read_text())
    assert any("listed twice" in m for m in notified(events))
    assert any("Valid forms" in m for m in notified(unknown))
    assert api.requests == []


def test_a_429_rung_falls_through_with_one_notice_and_the_footer_shows_the_route(tmp_path):
    from fault_engine import FaultEngine

    engine = FaultEngine("429")
    try:
        home = PiHome(tmp_path, config=f'[providers.jev]\nkind = "systemone"\nendpoint = "{engine.url}"\n'
                                       'model = "fault-1"\n[providers.openai]\nkind = "mock"\nmodel = "openai-mock"\n')
        home.write_settings({"waterfall": ["jev", "openai"]})
        with MockOpenAIChat(call_tool("system1_judge", EXAMPLE)) as api:
            rpc = Rpc(home, api)
            try:
                first = rpc.prompt("Judge the test output with System 1", until="agent_end")
                second = rpc.prompt("Judge it again with System 1", until="agent_end")
            finally:
                rpc.close()
    finally:
        engine.close()
    assert len(engine.requests) == 1  # the 429 cooled the rung: the second call did not try it
    assert "S1 openai-decisions" in statuses(first) and "S1 openai-decisions" in statuses(second)
    failures = [m for m in notified(first + second) if "jev failed" in m]
    assert len(failures) == 1, notified(first + second)
    answered = [text_of(tool_messages(r)[-1]["content"]) for r in api.requests if tool_messages(r)]
    assert len(answered) == 2 and all("(by openai-decisions openai-mock" in t for t in answered)


def test_the_picker_sets_a_preset(tmp_path):
    home = PiHome(tmp_path)
    home.write_settings({"waterfall": ["jev"], "keep": 1})

    def answer(request):
        if request.get("method") == "select":
            assert "Jev → OpenAI" in request["options"] and "Embedded only (offline, on this machine)" in request["options"]
            return {"value": "Jev → Embedded"}
        return None

    with MockOpenAIChat() as api:
        rpc = Rpc(home, api, answer)
        try:
            rpc.prompt("/system1", until="response")
        finally:
            rpc.close()
    assert json.loads(home.settings.read_text()) == {"waterfall": ["jev", "embedded"], "keep": 1, "backend": "jev"}


# -- the tool gate ----------------------------------------------------------------------------------

@pytest.mark.models
def test_the_tool_gate_blocks_rm_lets_ls_run_and_fails_closed(tmp_path):
    home = PiHome(tmp_path, config='[providers.embedded]\ntier = "fast"\n')
    home.write_settings({"waterfall": ["embedded"], "toolGate": {"enabled": True, "minConfidence": 0.8}})
    build = home.work / "build"
    build.mkdir()
    (build / "keep.txt").write_text("x")
    (home.work / "marker.txt").write_text("x")
    with MockOpenAIChat(call_tool("bash", {"command": "rm -rf ./build"})) as api:
        proc = home.print_mode(api, "Clean up the build folder")
    result = text_of(tool_messages(api.requests[-1])[-1]["content"])
    assert (build / "keep.txt").exists() and "System 1 tool gate: this command reads as destructive" in result, proc.stderr
    with MockOpenAIChat(call_tool("bash", {"command": "ls -la"})) as api:
        home.print_mode(api, "List the files")
    assert "marker.txt" in text_of(tool_messages(api.requests[-1])[-1]["content"])
    with MockOpenAIChat(call_tool("bash", {"command": "ls -la"})) as api:
        home.print_mode(api, "List the files", env={"SYSTEM1_CLI": str(tmp_path / "no-such-system1")})
    down = text_of(tool_messages(api.requests[-1])[-1]["content"])
    assert "fails closed" in down and "marker.txt" not in down
    # Interactive (RPC): the user is asked, and a yes lets the command run.
    asked = []

    def yes(request):
        if request.get("method") == "confirm":
            asked.append(request)
            return {"confirmed": True}
        return None

    with MockOpenAIChat(call_tool("bash", {"command": "rm -rf ./build"})) as api:
        rpc = Rpc(home, api, yes)
        try:
            rpc.prompt("Clean up the build folder", until="agent_end")
        finally:
            rpc.close()
    assert len(asked) == 1 and "rm -rf ./build" in asked[0]["message"] and not build.exists()
