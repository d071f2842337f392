"""The package's source type-checks under its own settings ([tool.mypy] in pyproject.toml), run by CI
with the suite, like the lint rules (test_lint.py).

mypy comes pinned with the `test` extra and reads the installed dependencies' types from this
interpreter's environment; a missing mypy fails the test rather than skipping it. Its cache is kept
in the temporary folder, not in the checkout: a cold run (CI's) takes about 20 s on 2 cores, most of it
reading the dependencies' types (openai, ray), and a rerun well under a second.
"""

import getpass
import hashlib
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CACHE = Path(tempfile.gettempdir()) / (
    f"system1-gateway-mypy-{getpass.getuser()}-{hashlib.sha256(str(ROOT).encode()).hexdigest()[:12]}")


def test_mypy_finds_nothing():
    proc = subprocess.run([sys.executable, "-m", "mypy", "--cache-dir", str(CACHE)],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert "No module named mypy" not in proc.stderr, "mypy is not installed: install the `test` extra"
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert proc.stdout.startswith("Success:"), proc.stdout[-4000:]
