import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

# The CI gate's hooks, imported so pytest finds them here (see ci_gate.py).
from ci_gate import (  # noqa: F401
    pytest_runtest_logreport, pytest_sessionfinish, pytest_terminal_summary, require,
)

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def isolated_env(monkeypatch, tmp_path):
    """No test sees the user's config, state or SYSTEM1_* variables."""
    for var in list(os.environ):
        if var.startswith("SYSTEM1_"):
            monkeypatch.delenv(var)
    monkeypatch.setenv("SYSTEM1_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    # No test starts the per-user daemon unless it asks to (tests of the daemon set it to 1).
    monkeypatch.setenv("SYSTEM1_SERVE_AUTOSTART", "0")
    from system1_gateway import notices

    notices._last.clear()  # each test starts like a new process
    return tmp_path


@pytest.fixture
def write_config(monkeypatch, tmp_path):
    def write(text: str) -> Path:
        path = tmp_path / "config.toml"
        path.write_text(text)
        monkeypatch.setenv("SYSTEM1_CONFIG", str(path))
        return path

    return write


@pytest.fixture
def mock_gateway(monkeypatch):
    """A gateway whose chain is the mock provider with the given settings."""
    from system1_gateway.core import Gateway

    def make(**settings):
        monkeypatch.setenv("SYSTEM1_PROVIDER", "mock")
        for key, value in settings.items():
            monkeypatch.setenv(f"SYSTEM1_MOCK_{key.upper()}", str(value))
        return Gateway.from_environment()

    return make


def run_cli(*args, input=None, env=None, timeout=120):
    """Run `python -m system1_gateway ARGS`; returns (exit code, parsed stdout lines, stderr)."""
    full_env = {k: v for k, v in os.environ.items()}
    full_env.update(env or {})
    proc = subprocess.run(
        [sys.executable, "-m", "system1_gateway.cli", *args],
        input=input, capture_output=True, text=True, env=full_env, timeout=timeout,
    )
    lines = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    return proc.returncode, lines, proc.stderr


def judge_payload(**questions):
    return {"state": "The build failed after the last merge.", "questions": questions or {
        "q": {"type": "noul", "instructions": "Is this about a build?"}}}
