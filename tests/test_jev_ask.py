"""`jev-ask`, the console script: the Pi extension's order (`system1.json`) run as
`system1 judge --chain …`, its output and exit codes passed through, `--model` for Jev alone.

The gateway's rungs are mocks named as the Pi backends map to them: `jev`, and `openai`
(the gateway name of `openai-decisions`; kind mock, so no billing consent is involved).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import judge_payload
from system1_gateway.model.results import judge_result_adapter

JEV_ASK = Path(sys.executable).parent / "jev-ask"
CONFIG = ('[gateway]\nprovider = "jev"\n'
          '[providers.jev]\nkind = "mock"\nmodel = "jev-mock"\nanswer = "true"\n'
          '[providers.openai]\nkind = "mock"\nmodel = "openai-mock"\nanswer = "false"\n')


@pytest.fixture
def pi(write_config, monkeypatch, tmp_path):
    """A Pi agent dir; returns a function writing its system1.json (None: no file)."""
    write_config(CONFIG)
    agent = tmp_path / "agent"
    agent.mkdir()
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(agent))

    def settings(content: dict | None) -> Path:
        path = agent / "system1.json"
        if content is not None:
            path.write_text(json.dumps(content))
        return path

    return settings


def jev_ask(*args: str, request: dict | str | None = None, env: dict[str, str] | None = None):
    """Run the installed console script; (exit code, parsed stdout lines, stderr)."""
    assert JEV_ASK.is_file(), f"{JEV_ASK} missing: pip install -e . (pyproject [project.scripts])"
    text = request if isinstance(request, str) else json.dumps(request or judge_payload())
    proc = subprocess.run([str(JEV_ASK), *args], input=text, capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, timeout=120)
    lines = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    return proc.returncode, lines, proc.stderr


def test_no_settings_file_asks_jev_alone(pi):
    pi(None)
    code, out, _ = jev_ask()
    assert code == 0 and len(out) == 1
    judge_result_adapter.validate_python(out[0])
    assert out[0]["order"] == ["jev"] and out[0]["provider"] == "jev" and out[0]["model"] == "jev-mock"


def test_the_waterfall_order_reaches_the_gateway(pi):
    pi({"waterfall": ["openai-decisions", "jev"], "backend": "openai-decisions"})
    code, out, _ = jev_ask()
    assert code == 0 and out[0]["order"] == ["openai", "jev"] and out[0]["provider"] == "openai"
    # the first rung failing: the second answers, both attempts shown
    code, out, _ = jev_ask(env={"SYSTEM1_OPENAI_MODE": "fail"})
    assert code == 0 and out[0]["provider"] == "jev"
    assert [(a["provider"], a["outcome"]) for a in out[0]["attempts"]] == [("openai", "error"), ("jev", "ok")]


def test_legacy_backend_and_the_openai_alias(pi):
    pi({"backend": "openai"})
    code, out, _ = jev_ask()
    assert code == 0 and out[0]["order"] == ["openai"] and out[0]["provider"] == "openai"


def test_a_request_file_and_pretty_output(pi, tmp_path):
    pi({"waterfall": ["jev"]})
    request = tmp_path / "request.json"
    request.write_text(json.dumps(judge_payload() | {"request_id": "from-file"}))
    proc = subprocess.run([str(JEV_ASK), str(request), "--pretty"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and proc.stdout.startswith("{\n  ")
    assert json.loads(proc.stdout)["request_id"] == "from-file"


def test_exit_codes_are_system1s(pi):
    pi({"waterfall": ["jev", "openai"]})
    code, out, _ = jev_ask(env={"SYSTEM1_JEV_MODE": "fail", "SYSTEM1_OPENAI_MODE": "fail"})
    assert code == 1 and out[0]["error"]["code"] == "provider_error" and out[0]["order"] == ["jev", "openai"]
    code, out, _ = jev_ask(request="{not json")
    assert code == 2 and "stdin: invalid JSON" in out[0]["error"]["message"]
    pi({"waterfall": ["laptop"]})  # not a rung of this gateway: the gateway says so
    code, out, _ = jev_ask()
    assert code == 2 and "--chain: 'laptop' is not a configured rung" in out[0]["error"]["message"]


def test_model_override_for_jev_alone(pi):
    pi(None)
    code, out, _ = jev_ask("--model", "jev-9.9.9")
    assert code == 0 and out[0]["provider"] == "jev" and out[0]["model"] == "jev-9.9.9"


@pytest.mark.parametrize("settings", [{"waterfall": ["jev", "openai"]}, {"waterfall": ["openai"]},
                                      {"backend": "openai-decisions"}])
def test_model_override_is_refused_unless_the_order_is_jev_alone(pi, settings):
    pi(settings)
    code, out, _ = jev_ask("--model", "jev-9.9.9", env={"SYSTEM1_JEV_MODE": "fail"})
    assert code == 2 and len(out) == 1 and out[0]["error"]["code"] == "invalid_request"
    assert out[0]["error"]["message"].startswith("--model: a model override needs a singleton Jev chain")


def test_an_invalid_settings_file_exits_2_naming_it(pi):
    path = pi({"waterfall": [], "backend": "jev"})  # an invalid waterfall wins over a valid backend
    code, out, _ = jev_ask()
    assert code == 2 and out[0]["error"]["code"] == "invalid_request"
    assert out[0]["error"]["message"].startswith(f"{path}: waterfall is empty")


def test_a_missing_system1_command_exits_1_naming_it(pi, monkeypatch, tmp_path, capsys):
    from system1_gateway import jev_ask as module

    pi(None)
    monkeypatch.setattr(sys, "executable", str(tmp_path / "nowhere" / "python"))
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert module.main([]) == 1
    captured = capsys.readouterr()
    assert "the `system1` command was not found" in captured.err and captured.out == ""
