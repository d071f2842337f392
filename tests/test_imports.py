"""The hook-critical path stays light: the core imports no engine runtime until one is needed."""

import subprocess
import sys

HEAVY = ["cyllama", "onnxruntime", "numpy", "httpx", "mcp", "tokenizers", "rich"]

SCRIPT = """
import sys
import system1_gateway.core, system1_gateway.cli, system1_gateway.config
from system1_gateway.core import Gateway
import os
os.environ["SYSTEM1_PROVIDER"] = "mock"
result = Gateway.from_environment().judge({"state": "s", "questions": {"q": {"type": "noul", "instructions": "?"}}})
assert result["status"] == "answered", result
gw = Gateway.from_environment()
gw.health()  # builds the embedded provider? no: chain is mock only
loaded = sorted(m for m in %r if m in sys.modules)
print(",".join(loaded))
"""


def test_core_and_cli_import_no_engine_runtime(tmp_path):
    proc = subprocess.run([sys.executable, "-c", SCRIPT % HEAVY], capture_output=True, text=True,
                          env={"SYSTEM1_STATE_DIR": str(tmp_path), "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == ""


def test_building_the_embedded_provider_imports_no_runtime(tmp_path):
    script = (
        "import sys\nfrom system1_gateway.providers import build\n"
        "p = build('embedded', 'embedded', {})\np.health(1.0)\n"
        f"print(','.join(sorted(m for m in {HEAVY!r} if m in sys.modules)))\n"
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          env={"SYSTEM1_STATE_DIR": str(tmp_path), "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == ""
