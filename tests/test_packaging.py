"""What users install is what is tested: the suite runs against the installed wheel, every file
the package reads is in it, every console command works from it in a fresh HOME, and one
version is reported everywhere a user or Claude Code reads one."""

from __future__ import annotations

import importlib.metadata
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import system1_gateway
from conftest import ROOT, not_the_installed_wheel

DIST = importlib.metadata.distribution("system1-gateway")
PACKAGE = Path(system1_gateway.__file__).resolve().parent
BIN = Path(sys.executable).parent
TRACEBACK = "Traceback (most recent call last)"


def test_the_suite_imports_the_installed_wheel():
    """Not src/, not an editable install: a file missing from the wheel fails here, as it would
    for a user (SYSTEM1_TEST_SOURCE=1 lets a developer run the rest against the source tree)."""
    assert not_the_installed_wheel() is None
    assert ROOT / "src" not in PACKAGE.parents  # the source tree is never where the package comes from


def _in_wheel() -> set[str]:
    """The package's files as the wheel's RECORD lists them (paths relative to site-packages)."""
    return {str(f) for f in DIST.files or () if str(f).startswith("system1_gateway/")}


def _runtime_data() -> dict[str, Path]:
    """Every data file the code opens, named by the constant (or function) that opens it."""
    from system1_gateway import pi_install
    from system1_gateway.core import calibration
    from system1_gateway.insight import prices
    from system1_gateway.model import builtins
    from system1_gateway.providers.embedded import assets, heads
    from system1_gateway.routing import rule

    files = {
        "calibration.SHIPPED_PATH": calibration.SHIPPED_PATH,
        "insight.prices.SHIPPED": prices.SHIPPED,
        "embedded.assets.TOKENIZER_PATH": assets.TOKENIZER_PATH,
        "embedded MiniLM NOTICE": assets.TOKENIZER_PATH.with_name("NOTICE"),
        "routing.rule.DEFAULT (the routing rule)": Path(rule.DEFAULT),
    }
    for name in builtins.BUILTINS:
        files[f"heads_shipped/{name}.npz"] = heads.SHIPPED_DIR / f"{name}.npz"
    for b in builtins.EARLIER:  # an earlier version keeps its head (`destructive@1.npz`)
        files[f"heads_shipped/{b.name}@{b.version}.npz"] = heads.SHIPPED_DIR / f"{b.name}@{b.version}.npz"
    for name in (pi_install.ENTRY, "core.ts", "classifier.ts", "judge_request.schema.json"):
        files[f"pi_extension/{name}"] = pi_install.source() / name
    return files


def test_every_file_the_code_opens_is_in_the_installed_wheel():
    record = _in_wheel()
    for what, path in _runtime_data().items():
        path = Path(path).resolve()
        assert path.is_file(), f"{what}: {path} is not installed"
        assert PACKAGE in path.parents, f"{what}: {path} is not inside the installed package {PACKAGE}"
        assert str(path.relative_to(PACKAGE.parent)) in record, f"{what}: {path} is not in the wheel's RECORD"


def test_every_tracked_file_of_the_package_is_in_the_wheel():
    """A new data file (or a folder without __init__.py) that pyproject forgets fails here."""
    tracked = subprocess.run(["git", "-C", str(ROOT), "ls-files", "src/system1_gateway"], capture_output=True,
                             text=True, check=True).stdout.split()
    assert len(tracked) > 50
    record = _in_wheel()
    missing = [path for path in tracked if path.removeprefix("src/") not in record]
    assert missing == [], f"tracked but not in the wheel: {missing}"


# --- every console command, from the installed scripts, in a fresh HOME -----------------------

def _fresh_home_env(home: Path) -> dict[str, str]:
    """A new user's environment: no SYSTEM1_* settings, config and state under a new HOME. The
    mock answers (no model load); no daemon is started (a daemon here would outlive the test)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SYSTEM1_", "XDG_", "CLAUDE_", "PI_"))}
    env.update(HOME=str(home), SYSTEM1_SERVE_AUTOSTART="0", PYTHONDONTWRITEBYTECODE="1")
    return env


def _run(argv: list[str], env: dict[str, str], stdin: str = "", timeout: float = 180) -> subprocess.CompletedProcess:
    return subprocess.run(argv, input=stdin, capture_output=True, text=True, env=env, timeout=timeout,
                          cwd=env["HOME"])


def _subcommands() -> list[str]:
    from system1_gateway.cli import _parser

    parser = _parser()
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    return sorted(sub.choices)


@pytest.fixture
def home(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    return home


def test_version_is_the_wheel_version(home):
    proc = _run([str(BIN / "system1"), "--version"], _fresh_home_env(home))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == f"system1-gateway {DIST.version} ({system1_gateway.__codename__})"


@pytest.mark.parametrize("command", _subcommands())
def test_every_subcommand_has_help(command, home):
    proc = _run([str(BIN / "system1"), command, "--help"], _fresh_home_env(home))
    assert proc.returncode == 0 and TRACEBACK not in proc.stderr, proc.stderr
    assert proc.stdout.startswith(f"usage: system1 {command}")


def test_the_subcommand_list_is_the_one_this_test_knows():
    """A new subcommand needs a real invocation below, not only --help."""
    assert set(_subcommands()) == set(INVOCATIONS) | {"mcp", "serve"}


BENCH_SET = [
    {"id": f"b{i}", "task": "t", "state": state, "expected": expected,
     "question": {"type": "choice", "instructions": "Which area does this task belong to?",
                  "criteria": {"docs": "documentation", "code": "source code"}}}
    for i, (state, expected) in enumerate([("Fix the README typo", "docs"), ("Refactor the parser", "code"),
                                           ("Document the CLI flags", "docs")])
]
TEACH_SET = [
    {"state": f"{verb} the {thing}", "expected": label,
     "question": {"type": "noul", "instructions": "Does this task change code?"}}
    for verb, label in (("Refactor", True), ("Rewrite", True), ("Fix", True), ("Explain", False),
                        ("Describe", False), ("Summarise", False))
    for thing in ("parser", "cache layer", "login form", "retry loop", "config loader")
]
JUDGE = {"state": "The build failed after the last merge.",
         "questions": {"q": {"type": "noul", "instructions": "Is this about a build?"}}}


def _files(home: Path) -> dict[str, Path]:
    (home / "projects").mkdir(exist_ok=True)
    paths = {"projects": home / "projects", "judge": home / "judge.json", "jsonl": home / "requests.jsonl",
             "bench": home / "bench.jsonl", "teach": home / "teach.jsonl", "out": home / "out.jsonl",
             "benchout": home / "bench-out"}
    paths["judge"].write_text(json.dumps(JUDGE))
    paths["jsonl"].write_text("".join(json.dumps(JUDGE) + "\n" for _ in range(3)))
    paths["bench"].write_text("".join(json.dumps(item) + "\n" for item in BENCH_SET))
    paths["teach"].write_text("".join(json.dumps(item) + "\n" for item in TEACH_SET))
    return paths


# command → (arguments, stdin, the exit codes its documentation allows, what stdout must hold)
INVOCATIONS: dict[str, tuple[list[str], str, set[int], str]] = {
    "decide": (["Is this a build failure?", "--chain", "mock"], "", {0}, '"status"'),
    "judge": (["{judge}", "--chain", "mock"], "", {0}, '"answers"'),
    "bulk": (["{jsonl}", "{out}", "--pool", "--workers", "1", "--chain", "mock"], "", {0}, ""),
    "health": ([], "", {0, 1}, '"status"'),
    "capabilities": ([], "", {0}, '"version"'),
    "status": ([], "", {0}, '"order"'),
    "order": (["mock"], "", {0}, '"order"'),
    "retry": ([], "", {0}, ""),
    "toggle": (["status"], "", {0}, ""),
    "daemon": (["status"], "", {0, 1}, ""),
    "teach": (["{teach}", "--dry-run", "--no-baseline", "--k", "3"], "", {0}, ""),
    "calibrate": (["--pending"], "", {0}, ""),
    "evaluate": ([], "", {3}, ""),  # no labels yet: not READY
    "outcomes": (["--projects", "{projects}"], "", {0}, ""),
    "report": (["--projects", "{projects}"], "", {0}, ""),
    "bench": (["{bench}", "--providers", "mock", "--out", "{benchout}"], "", {0}, ""),
    "routing": (["status"], "", {0}, '"mode": "log"'),
    "install-claude": ([], "", {0}, "claude mcp add"),
    "install-pi": ([], "", {0}, "extensions"),
    "smoke": (["--pretty"], "", {0}, '"ok": true'),
}


@pytest.mark.parametrize("command", sorted(INVOCATIONS))
def test_every_subcommand_runs_from_the_installed_wheel(command, home):
    args, stdin, codes, expect = INVOCATIONS[command]
    paths = _files(home)
    env = _fresh_home_env(home)
    if command in ("health", "smoke", "calibrate", "evaluate", "status", "capabilities"):
        env["SYSTEM1_PROVIDER"] = "mock"  # no model load for a probe of the chain
    argv = [str(BIN / "system1"), command, *(a.format(**paths) for a in args)]
    proc = _run(argv, env, stdin)
    assert proc.returncode in codes, f"{argv} exited {proc.returncode}\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}"
    assert TRACEBACK not in proc.stderr, proc.stderr
    assert expect in proc.stdout, proc.stdout[-2000:]


def test_report_reads_the_shipped_prices_from_a_regular_install(home):
    """The bug that started this: prices.json was not in the wheel, so report failed for every user."""
    _files(home)
    proc = _run([str(BIN / "system1"), "report", "--projects", str(home / "projects"), "--json"],
                _fresh_home_env(home))
    assert proc.returncode == 0, proc.stderr
    assert "prices.json" not in proc.stderr


def test_jev_ask_help_from_the_installed_script(home):
    proc = _run([str(BIN / "jev-ask"), "--help"], _fresh_home_env(home))
    assert proc.returncode == 0 and proc.stdout.startswith("usage: jev-ask"), proc.stderr


@pytest.mark.parametrize("hook", ["route", "guard", "agent", "session_start"])
@pytest.mark.parametrize("payload", ["", "{}", "not json", "[1, 2]"])
def test_every_hook_module_takes_an_empty_or_broken_payload(hook, payload, home):
    """Claude Code runs them as `python -I -m system1_gateway.hooks.<name>`: exit 0, no traceback,
    and stdout empty or one JSON object (a hook never breaks the user's turn)."""
    proc = _run([sys.executable, "-I", "-m", f"system1_gateway.hooks.{hook}"], _fresh_home_env(home), payload,
                timeout=30)
    assert proc.returncode == 0 and TRACEBACK not in proc.stderr, proc.stderr
    assert proc.stdout.strip() == "" or isinstance(json.loads(proc.stdout), dict)


# --- one version everywhere ---------------------------------------------------------------------

def test_one_version_everywhere(home):
    version = system1_gateway.__version__
    assert DIST.version == version
    caps = json.loads(_run([str(BIN / "system1"), "capabilities"], _fresh_home_env(home)).stdout)
    assert (caps["version"], caps["codename"]) == (version, system1_gateway.__codename__)
    plugin = json.loads((ROOT / ".claude-plugin" / "plugin.json").read_text())
    market = json.loads((ROOT / ".claude-plugin" / "marketplace.json").read_text())
    entry = next(p for p in market["plugins"] if p["name"] == plugin["name"])
    assert plugin["version"] == entry["version"] == version
    # The newest release in the changelog is this one, with its codename.
    releases = re.findall(r'^## \[(\d+\.\d+\.\d+)\] "([^"]+)" - \d{4}-\d{2}-\d{2}$',
                          (ROOT / "CHANGELOG.md").read_text(), re.M)
    assert releases and releases[0] == (version, system1_gateway.__codename__)
    # The codename scheme: minor release n is chapter n of *Thinking, Fast and Slow*.
    assert all(CHAPTERS[int(v.split(".")[1])] == name for v, name in releases)


CHAPTERS = {1: "The Characters of the Story", 2: "Attention and Effort", 3: "The Lazy Controller",
            4: "The Associative Machine", 5: "Cognitive Ease", 6: "Norms, Surprises, and Causes",
            7: "A Machine for Jumping to Conclusions", 8: "How Judgments Happen",
            9: "Answering an Easier Question"}


def test_ci_runs_the_readme_command_2():
    """The README's second quick-start command is the line CI runs, word for word."""
    readme = (ROOT / "README.md").read_text()
    command = readme.split("# 2. ", 1)[1].splitlines()[1].strip()
    assert "python -m build" in command and "pytest" in command and " -e " not in command
    ci_lines = [line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()]
    assert command in ci_lines
