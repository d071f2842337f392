"""The code passes its own lint rules ([tool.ruff] in pyproject.toml), run by CI with the suite.

The rules are few and chosen: pyflakes and pycodestyle's errors, a reason for every broad
`except`, and no suppression comment that no longer suppresses anything (RUF100).
"""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_ruff_finds_nothing():
    proc = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "src", "tests", "scripts", "benchmarks"],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
