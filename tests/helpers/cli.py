"""The `system1` CLI as a child process."""

from __future__ import annotations

import json
import os
import subprocess
import sys


def run_cli(*args, input=None, env=None, timeout=120):
    """Run `python -m system1_gateway.cli ARGS`; returns (exit code, parsed stdout lines, stderr)."""
    full_env = {**os.environ, **(env or {})}
    proc = subprocess.run(
        [sys.executable, "-m", "system1_gateway.cli", *args],
        input=input, capture_output=True, text=True, env=full_env, timeout=timeout,
    )
    lines = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    return proc.returncode, lines, proc.stderr
