"""The contributor's loop says what CI does: `make test` is the README's command 2 and the last
line of `.ci/run`, `make lint` runs what the lint and type tests run, and the timings that choose
`make test-fast`'s tests and the suite's order follow the rule timing.py states."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

import timing
from conftest import ROOT

COMMAND_2 = re.compile(r"^rm -rf dist src/\*\.egg-info && python3 -m venv --clear \.venv.*$", re.M)


def _dry_run(target: str) -> str:
    make = shutil.which("make")
    assert make, "make is not installed (scripts/test_clients.sh installs it)"
    proc = subprocess.run([make, "-n", "-s", "-C", str(ROOT), target, "PYTHON=python3"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_make_test_is_readme_command_2_and_what_ci_runs():
    readme = COMMAND_2.findall((ROOT / "README.md").read_text())
    ci = COMMAND_2.findall((ROOT / ".ci/run").read_text())
    assert len(readme) == 1 and ci == readme
    assert _dry_run("test").strip().splitlines()[-1] == readme[0]


def test_make_lint_runs_ruff_and_mypy_on_what_their_tests_check():
    lines = _dry_run("lint").splitlines()
    assert any(re.search(r"-m ruff check src tests scripts benchmarks$", line) for line in lines), lines
    assert any(line.endswith("-m mypy") for line in lines), lines


def test_make_test_fast_leaves_out_the_slow_mark():
    assert any('-m "not slow"' in line for line in _dry_run("test-fast").splitlines())


def test_the_slow_rule():
    record = {
        "tests/test_a.py::test_quick": [0.01, 0.2, 0.01],
        "tests/test_a.py::test_long": [0.0, 1.5, 0.0],
        "tests/test_b.py::test_first": [2.0, 0.1, 0.0],  # a module fixture: the whole file is slow
        "tests/test_b.py::test_second": [0.0, 0.1, 0.0],
        "tests/test_c.py::test_edge": [0.3, 0.4, 0.3],  # 1.0 s in all: slow
    }
    assert timing.slow_ids(record) == {"tests/test_a.py::test_long", "tests/test_b.py::test_first",
                                       "tests/test_b.py::test_second", "tests/test_c.py::test_edge"}
    assert timing.file_seconds(record)["tests/test_b.py"] == pytest.approx(2.2)


def test_the_record_covers_the_suite_and_leaves_a_fast_loop():
    record = timing.load()
    assert record, "tests/durations.json is missing: `make durations` writes it"
    files = {node.split("::")[0] for node in record}
    on_disk = {f"tests/{p.name}" for p in (ROOT / "tests").glob("test_*.py")}
    assert len(files & on_disk) >= 0.9 * len(on_disk), sorted(on_disk - files)
    slow = timing.slow_ids(record)
    fast = [node for node in record if node not in slow]
    assert len(fast) >= 300
