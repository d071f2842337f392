"""The real per-user daemon (`system1 daemon start`, port 0) of a test's environment."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from system1_gateway.daemon import files as daemon_files

# Two mock rungs: what most daemon tests ask.
MOCK_CONFIG = ('[gateway]\nprovider = "first"\nfallback = ["second"]\n'
               '[providers.first]\nkind = "mock"\nmodel = "first-model"\n'
               '[providers.second]\nkind = "mock"\nmodel = "second-model"\nanswer = "no"\n')


class RunningDaemon:
    """A daemon of the test's environment (plus `env`), stopped at exit."""

    def __init__(self, env: dict[str, str] | None = None):
        self.env = {**os.environ, "SYSTEM1_SERVE_PORT": "0", **(env or {})}
        start = subprocess.run([sys.executable, "-m", "system1_gateway.cli", "daemon", "start"],
                               env=self.env, capture_output=True, text=True, timeout=120)
        assert start.returncode == 0, start.stdout + start.stderr
        self.record = self._wait_for_port_file()

    def _wait_for_port_file(self, timeout_s: float = 60.0) -> dict:
        end = time.monotonic() + timeout_s
        while time.monotonic() < end:
            record = daemon_files.read_port()
            if record and daemon_files.pid_alive(record["pid"]):
                return record
            time.sleep(0.05)
        raise AssertionError("no daemon port file within 60 s")

    @property
    def pid(self) -> int:
        return self.record["pid"]

    def kill(self) -> None:
        os.kill(self.pid, signal.SIGKILL)
        end = time.monotonic() + 10
        while daemon_files.pid_alive(self.pid) and time.monotonic() < end:
            time.sleep(0.01)

    def stop(self) -> None:
        if daemon_files.pid_alive(self.pid):
            subprocess.run([sys.executable, "-m", "system1_gateway.cli", "daemon", "stop"], env=self.env,
                           capture_output=True, timeout=60)
        if daemon_files.pid_alive(self.pid):
            os.kill(self.pid, signal.SIGKILL)


@pytest.fixture
def start_daemon():
    """start(**env) -> RunningDaemon; every daemon started is stopped after the test."""
    started: list[RunningDaemon] = []

    def start(**env: str) -> RunningDaemon:
        daemon = RunningDaemon(env)
        started.append(daemon)
        return daemon

    yield start
    for daemon in started:
        daemon.stop()


def route(result: dict) -> dict:
    """The attempt saying which path answered (only present when a daemon was involved)."""
    first = result["attempts"][0] if result["attempts"] else {}
    return first if first.get("provider") == "daemon" else {}
