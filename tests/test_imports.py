"""The hook-critical path stays light: the core imports no engine runtime until one is needed."""

import subprocess
import sys

HEAVY = ["cyllama", "onnxruntime", "numpy", "httpx", "mcp", "tokenizers", "rich", "tree_sitter"]

SCRIPT = """
import sys
import system1_gateway.core.gateway, system1_gateway.cli, system1_gateway.config.settings
from system1_gateway.core.gateway import Gateway
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


FAST_HEAVY = ["pydantic", "mcp", "numpy", "httpx", "rich", "fastapi", "uvicorn", "tree_sitter"]

# `system1 decide` as the console script runs it, through the daemon; then what was imported.
FAST_PATH = """
import sys, time
t0 = time.perf_counter()
from system1_gateway import cli
imported_s = time.perf_counter() - t0
code = cli.main(["decide", "ok?"])
loaded = sorted(m for m in %r if m in sys.modules)
sys.stderr.write("LOADED=" + ",".join(loaded) + "\\nIMPORT_MS=%%.1f\\n" %% (imported_s * 1000))
sys.exit(code)
"""


def test_cli_fast_path_through_a_daemon_imports_the_stdlib_only(write_config, start_daemon):
    import json

    write_config('[gateway]\nprovider = "mock"\n')
    start_daemon()
    proc = subprocess.run([sys.executable, "-c", FAST_PATH % FAST_HEAVY], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["attempts"][0]["provider"] == "daemon" and result["attempts"][0]["outcome"] == "ok"
    report = dict(line.split("=", 1) for line in proc.stderr.splitlines() if "=" in line)
    assert report["LOADED"] == "", report["LOADED"]
    # The CLI module and what it imports up to the daemon call: stdlib only, measured.
    print(f"cli import: {report['IMPORT_MS']} ms")
    assert float(report["IMPORT_MS"]) < 150, report["IMPORT_MS"]  # a loaded 2-core machine; pydantic alone ≈ 140 ms


def test_client_module_is_stdlib_only(tmp_path):
    script = ("import sys\nimport system1_gateway.daemon.client\n"
              f"print(','.join(sorted(m for m in {FAST_HEAVY!r} if m in sys.modules)))\n")
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          env={"SYSTEM1_STATE_DIR": str(tmp_path), "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == ""


def test_the_pi_helpers_are_stdlib_only(tmp_path):
    """`jev-ask` and `system1 install-pi` run in a shell before anything heavy is needed."""
    script = ("import sys\nimport system1_gateway.jev_ask, system1_gateway.pi_install, system1_gateway.core.overrides\n"
              f"print(','.join(sorted(m for m in {FAST_HEAVY!r} if m in sys.modules)))\n")
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          env={"SYSTEM1_STATE_DIR": str(tmp_path), "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == ""


def test_an_embedded_module_imports_no_sibling_and_the_package_re_exports_on_use(tmp_path):
    """Importing one module of providers/embedded (heads, as the teach and study scripts do) runs
    neither the provider nor pydantic; the package's names resolve to their modules' objects."""
    script = ("import sys\nimport system1_gateway.providers.embedded.heads\n"
              "loaded = [m for m in ('system1_gateway.providers.embedded.provider', "
              "'system1_gateway.providers.embedded.settings', 'pydantic') if m in sys.modules]\n"
              "from system1_gateway.providers import embedded\n"
              "from system1_gateway.providers.embedded import provider, questions, settings\n"
              "assert embedded.EmbeddedProvider is provider.EmbeddedProvider\n"
              "assert embedded.usable_cpus is settings.usable_cpus and embedded.describable is questions.describable\n"
              "assert all(getattr(embedded, name) is not None for name in embedded.__all__)\n"
              "try:\n    embedded.nothing\nexcept AttributeError as exc:\n    assert 'nothing' in str(exc)\n"
              "else:\n    raise AssertionError('an unknown name resolved')\n"
              "print(','.join(loaded))\n")
    proc = subprocess.run([sys.executable, "-I", "-c", script], capture_output=True, text=True,
                          env={"SYSTEM1_STATE_DIR": str(tmp_path), "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == ""
