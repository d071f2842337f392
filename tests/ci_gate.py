"""Honest CI: a component `.ci/run` installs is required, not optional, and no test skips
unnoticed.

`SYSTEM1_REQUIRE_CLIENTS=1` (set by `.ci/run`) is read once, when this plugin is imported —
before any fixture runs — because the suite's autouse fixture clears every `SYSTEM1_*`
variable; a switch read inside a test body never saw it (that bug disabled the switch once).

* `require(available, what)` fails the test in CI and skips it locally.
* At the end of a run the skip list is printed; in CI any skip that is not in
  `ALLOWED_SKIPS` (test node id → why it may skip) fails the session.
"""

from __future__ import annotations

import os

import pytest

__all__ = ["require", "pytest_runtest_logreport", "pytest_terminal_summary", "pytest_sessionfinish"]

REQUIRED = os.environ.get("SYSTEM1_REQUIRE_CLIENTS") == "1"

# Skips CI accepts, each with its reason. Empty: everything CI installs must run.
ALLOWED_SKIPS: dict[str, str] = {}

_skipped: list[tuple[str, str]] = []


def require(available: bool, what: str) -> None:
    """Fail (CI) or skip (local run) the calling test when `what` is not available."""
    if available:
        return
    if REQUIRED:
        pytest.fail(f"{what} is missing, and CI requires it (SYSTEM1_REQUIRE_CLIENTS=1; run .ci/run)", pytrace=False)
    pytest.skip(f"{what} is missing (`make clients` installs what CI does)")


def pytest_runtest_logreport(report):
    if report.skipped:
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        reason = reason.removeprefix("Skipped: ")
        _skipped.append((report.nodeid, reason))


def pytest_terminal_summary(terminalreporter):
    unexpected = [(node, why) for node, why in _skipped if node not in ALLOWED_SKIPS]
    terminalreporter.section(f"skip list: {len(_skipped)} skipped, {len(unexpected)} not allowed")
    for node, why in _skipped:
        mark = "allowed" if node in ALLOWED_SKIPS else "UNEXPECTED"
        terminalreporter.line(f"{mark}: {node}: {why}")
    if REQUIRED and unexpected:
        terminalreporter.line(f"CI gate: {len(unexpected)} unexpected skip(s) fail this run")


def pytest_sessionfinish(session, exitstatus):
    if REQUIRED and any(node not in ALLOWED_SKIPS for node, _ in _skipped) and exitstatus == 0:
        session.exitstatus = 1
