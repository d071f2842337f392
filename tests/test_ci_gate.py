"""The CI switch itself: a missing required component fails, an unexpected skip fails the
run, and both hold even when an autouse fixture clears every SYSTEM1_* variable (the bug
that once disabled the switch)."""

import os
import subprocess
import sys
import textwrap

from conftest import ROOT

CASE = textwrap.dedent('''
    import os
    import pytest
    from ci_gate import require

    @pytest.fixture(autouse=True)
    def clear(monkeypatch):
        for var in list(os.environ):
            if var.startswith("SYSTEM1_"):
                monkeypatch.delenv(var)

    def test_needs_a_missing_tool():
        require(False, "the frobnicator")

    def test_plain_skip():
        pytest.skip("not today")
''')


def run_case(tmp_path, required: bool):
    (tmp_path / "conftest.py").write_text("from ci_gate import *  # noqa: F401,F403\n")
    (tmp_path / "test_case.py").write_text(CASE)
    env = {k: v for k, v in os.environ.items() if not k.startswith("SYSTEM1_")}
    env["PYTHONPATH"] = str(ROOT / "tests")
    if required:
        env["SYSTEM1_REQUIRE_CLIENTS"] = "1"
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path)],
                          capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)


def test_in_ci_a_missing_component_fails_and_an_unexpected_skip_fails_the_run(tmp_path):
    proc = run_case(tmp_path, required=True)
    assert proc.returncode == 1, proc.stdout
    assert "1 failed" in proc.stdout and "the frobnicator is missing, and CI requires it" in proc.stdout
    assert "UNEXPECTED: test_case.py::test_plain_skip: not today" in proc.stdout


def test_locally_both_skip_and_the_list_is_printed(tmp_path):
    proc = run_case(tmp_path, required=False)
    assert proc.returncode == 0, proc.stdout
    assert "2 skipped" in proc.stdout and "skip list: 2 skipped" in proc.stdout
    assert "the frobnicator is missing" in proc.stdout
