"""The two real Jev clients from PyPI — the official `typesafe-sdk` 0.7.5 (`base_url=`) and
`jev-lite` 0.0.6 — against a real `system1 serve` process.

They live in their own venv, `$SYSTEM1_TOOLS_DIR/jevclients` (.ci/run installs it), and run
tests/clients/jev_clients.py, which asserts on what each client parsed.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from ci_gate import require

ROOT = Path(__file__).resolve().parents[1]
TOOLS = Path(os.environ.get("SYSTEM1_TOOLS_DIR") or ROOT / ".tools")
CLIENTS_PYTHON = TOOLS / "jevclients" / "bin" / "python"
SCRIPT = ROOT / "tests" / "clients" / "jev_clients.py"
LISTENING = re.compile(r"listening on (http://\S+)")


def clients_installed() -> bool:
    if not CLIENTS_PYTHON.exists():
        return False
    # The SDK compresses only when it has a zstd compressor (Python 3.14+, or its [zstd] extra).
    probe = subprocess.run([str(CLIENTS_PYTHON), "-c", "import jev_lite, zstandard; from typesafe_sdk._core."
                            "compression import COMPRESSORS; assert 'zstd' in COMPRESSORS"],
                           capture_output=True, timeout=60)
    return probe.returncode == 0


def serve(env: dict[str, str], ready_s: float = 60):
    """Start `system1 serve --port 0`; return (process, base URL) once /healthz says ok
    (the first rung is warm)."""
    proc = subprocess.Popen([sys.executable, "-m", "system1_gateway.cli", "serve", "--port", "0"],
                            env={**os.environ, **env}, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + ready_s
    url = None
    while url is None:
        line = proc.stderr.readline()
        if not line and proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise AssertionError(f"system1 serve did not start (exit {proc.poll()})")
        match = LISTENING.search(line)
        url = match.group(1) if match else None
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url + "/healthz", timeout=2) as resp:
                if json.loads(resp.read())["status"] == "ok":
                    return proc, url
        except OSError:
            pass
        time.sleep(0.05)
    proc.kill()
    raise AssertionError("system1 serve never became ready")


@pytest.fixture
def server():
    started = []

    def start(env, ready_s=60):
        proc, url = serve(env, ready_s)
        started.append(proc)
        return url

    yield start
    for proc in started:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
        proc.stderr.close()


def run_clients(url: str, scenario: str) -> dict:
    proc = subprocess.run([str(CLIENTS_PYTHON), str(SCRIPT), url, scenario], capture_output=True, text=True,
                          timeout=240, env={k: v for k, v in os.environ.items() if not k.startswith("TYPESAFE_")})
    assert proc.returncode == 0, f"{scenario} failed:\n{proc.stdout}\n{proc.stderr}"
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_sdk_and_jev_lite_full_judge_call(server):
    require(clients_installed(), f"the Jev clients' venv ({CLIENTS_PYTHON}: typesafe-sdk[zstd], jev-lite, zstandard)")
    report = run_clients(server({"SYSTEM1_PROVIDER": "mock"}), "mock")
    assert report["sdk_model"] == report["lite_model"] == "mock/mock-1"
    assert report["sdk"] == report["lite"]  # same request, same deterministic mock answers
    assert report["sdk_zstd"]["sent_bytes"] < report["sdk_zstd"]["state_bytes"]
    assert "questions.u.score.criteria" in report["sdk_422"]
    assert report["sdk_models"] == report["lite_models"] and "mock" in report["sdk_models"]
    assert "unknown model" in report["lite_422"]


def test_waterfall_behind_the_jev_wire(server, tmp_path):
    require(clients_installed(), f"the Jev clients' venv ({CLIENTS_PYTHON}: typesafe-sdk[zstd], jev-lite, zstandard)")
    config = tmp_path / "waterfall.toml"
    config.write_text("""
[gateway]
provider = "broken"
fallback = ["backup"]
[providers.broken]
kind = "mock"
mode = "fail"
failure = "rate_limit"
[providers.backup]
kind = "mock"
model = "backup-7"
""")
    report = run_clients(server({"SYSTEM1_CONFIG": str(config)}), "waterfall")
    assert report["sdk_model"] == report["lite_model"] == "backup/backup-7"
    assert 0 < report["sdk_429_retry_after_ms"] <= 30_000
    assert "cooling" in report["lite_429"]


@pytest.mark.models
def test_the_embedded_engine_answers_a_jev_client(server, prejoined):
    require(clients_installed(), f"the Jev clients' venv ({CLIENTS_PYTHON}: typesafe-sdk[zstd], jev-lite, zstandard)")
    # Generous limits: this proves the wiring on a shared CI machine, not the engine's speed.
    prejoined()  # the session's joined GGUF (the first run is tests/test_first_call.py's)
    url = server({"SYSTEM1_PROVIDER": "embedded", "SYSTEM1_TIMEOUT_S": "120", "SYSTEM1_DEADLINE_S": "150"},
                 ready_s=300)  # the accurate tier loads before /healthz says ok
    report = run_clients(url, "embedded")
    assert report["sdk_model"].startswith("embedded/")
    assert report["sdk"]["choice"] in {"billing", "tech", "sales"}
