"""The installers for real: `install.sh` into a temporary HOME (a copied package with the
`local` extra, the config from config.example.toml, the model prepared), `system1 smoke`
against what it installed, registration with the real `claude` CLI, then `uninstall.sh` with
and without --purge. The PowerShell scripts are parsed with the tree-sitter PowerShell
grammar: no PowerShell can be installed from the registries CI reaches (it ships from NuGet
or GitHub), so they are checked for syntax and content, not run."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import ROOT, require

TOOLS = Path(os.environ.get("SYSTEM1_TOOLS_DIR", ROOT / ".tools"))
CLAUDE = TOOLS / "cc" / "node_modules" / ".bin" / "claude"
PI = TOOLS / "pi" / "node_modules" / ".bin" / "pi"


def sh(script: str, *args: str, env: dict[str, str], timeout: float = 900) -> subprocess.CompletedProcess:
    return subprocess.run(["sh", str(ROOT / script), *args], capture_output=True, text=True, env=env, timeout=timeout)


@pytest.fixture
def home_env(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    if CLAUDE.exists():
        (bin_dir / "claude").symlink_to(CLAUDE)
    if PI.exists():
        (bin_dir / "pi").symlink_to(PI)
    real_cache = os.environ.get("PIP_CACHE_DIR") or str(Path.home() / ".cache" / "pip")
    env = {"HOME": str(home), "PATH": f"{bin_dir}:{os.environ['PATH']}", "PIP_CACHE_DIR": real_cache,
           "DISABLE_AUTOUPDATER": "1", "SYSTEM1_SERVE_AUTOSTART": "0"}
    for key in ("PIP_FIND_LINKS", "PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "PIP_CONFIG_FILE", "PIP_CERT"):
        if key in os.environ:
            env[key] = os.environ[key]
    return home, env


@pytest.mark.models
@pytest.mark.timeout(1800)  # two pip installs into a new venv, model preparation, smoke
def test_install_smoke_register_uninstall_purge(home_env):
    require(CLAUDE.exists(), str(CLAUDE))
    require(PI.exists(), str(PI))
    home, env = home_env
    venv = home / ".system1-gateway" / "venv"
    config = home / ".config" / "system1" / "config.toml"

    installed = sh("install.sh", env=env)
    assert installed.returncode == 0, installed.stdout + installed.stderr
    assert config.read_text() == (ROOT / "config.example.toml").read_text()
    where = subprocess.run([str(venv / "bin" / "python"), "-I", "-c", "import system1_gateway; print(system1_gateway.__file__)"],
                           capture_output=True, text=True, env=env, check=True).stdout.strip()
    assert where.startswith(str(venv)) and "site-packages" in where  # a copy, not linked to the clone
    assert (home / ".system1-gateway" / "models").is_dir()  # the model was prepared once
    pi_extension = home / ".pi" / "agent" / "extensions" / "system1"
    assert (pi_extension / "index.ts").exists() and (pi_extension / "judge_request.schema.json").exists()  # pi is here
    register = next(line.strip() for line in installed.stdout.splitlines() if line.strip().startswith("claude mcp add"))
    assert register == f'claude mcp add --scope user --transport stdio system1 -- "{venv}/bin/python" -I -m system1_gateway'

    config.write_text(config.read_text() + "\n# mine\n")
    again = sh("install.sh", "--no-prepare", env=env)  # an upgrade keeps the user's config
    assert again.returncode == 0 and "kept" in again.stderr and config.read_text().endswith("# mine\n")

    # the smoke proves the install answers, not the CPU's speed: a generous attempt and deadline
    smoke = subprocess.run([str(venv / "bin" / "system1"), "smoke"], capture_output=True, text=True, timeout=600,
                           env={**env, "SYSTEM1_TIMEOUT_S": "120", "SYSTEM1_DEADLINE_S": "150"})
    report = json.loads(smoke.stdout)
    assert smoke.returncode == 0 and report["ok"], report
    assert [c["check"] for c in report["checks"]] == ["handshake", "tools", "health", "decision"]
    assert report["server"] == [f"{venv}/bin/python", "-I", "-m", "system1_gateway"]

    registered = subprocess.run(shlex.split(register), capture_output=True, text=True, env=env, timeout=120)
    assert registered.returncode == 0, registered.stderr
    got = subprocess.run(["claude", "mcp", "get", "system1"], capture_output=True, text=True, env=env, timeout=180)
    assert "Connected" in got.stdout, got.stdout + got.stderr

    removed = sh("uninstall.sh", env=env)
    assert removed.returncode == 0, removed.stderr
    assert "unregistered the MCP server" in removed.stderr and not venv.exists() and not pi_extension.exists()
    assert config.exists() and (home / ".system1-gateway" / "models").is_dir()  # kept without --purge
    gone = subprocess.run(["claude", "mcp", "get", "system1"], capture_output=True, text=True, env=env, timeout=120)
    assert gone.returncode == 1

    purged = sh("uninstall.sh", "--purge", env=env)
    assert purged.returncode == 0, purged.stderr
    assert not (home / ".system1-gateway").exists() and not config.exists()


def test_install_sh_without_a_python_says_what_to_do(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("dirname", "sed"):
        (bin_dir / tool).symlink_to(shutil.which(tool))
    env = {"HOME": str(tmp_path), "PATH": str(bin_dir), "SYSTEM1_PYTHON": "/bin/false"}
    proc = subprocess.run(["/bin/sh", str(ROOT / "install.sh")], capture_output=True, text=True, env=env, timeout=60)
    assert proc.returncode == 1
    assert "no Python 3.11 or newer found" in proc.stderr and "SYSTEM1_PYTHON" in proc.stderr


@pytest.mark.parametrize("script", ["install.sh", "uninstall.sh"])
def test_unknown_options_are_refused(tmp_path, script):
    proc = sh(script, "--frobnicate", env={"HOME": str(tmp_path), "PATH": os.environ["PATH"]})
    assert proc.returncode == 2 and "unknown option --frobnicate" in proc.stderr
    assert sh(script, "--help", env={"HOME": str(tmp_path), "PATH": os.environ["PATH"]}).returncode == 0


def parses(source: bytes) -> bool:
    import tree_sitter
    import tree_sitter_powershell

    parser = tree_sitter.Parser(tree_sitter.Language(tree_sitter_powershell.language()))
    return not parser.parse(source).root_node.has_error


@pytest.mark.parametrize("name", ["install.ps1", "uninstall.ps1"])
def test_powershell_scripts_parse(name):
    assert parses((ROOT / name).read_bytes())
    assert not parses(b"function f( { $x = ")  # the check can fail


def test_powershell_installer_content():
    text = (ROOT / "install.ps1").read_text()
    assert "'*\\WindowsApps\\*'" in text  # the Microsoft Store stub is skipped
    assert "system1 '--' " in text  # the separator is quoted for PowerShell
    assert "Scripts\\python.exe" in text and "config.example.toml" in text and "[local]" in text
    uninstall = (ROOT / "uninstall.ps1").read_text()
    assert "mcp remove system1 -s user" in uninstall and "[switch]$Purge" in uninstall
    assert "uninstall-login --apply" in uninstall
