"""The suite's timings: which tests are slow and which files run first, read from the last
full run's measurements instead of hand-kept lists.

`tests/durations.json` holds, for every test of a full run on 2 cores, its setup, call and
teardown seconds (`make durations` rewrites it: `pytest --record-durations tests/durations.json`).
From it, at collection:

* **order**: files run longest first (their tests' seconds summed); with `--dist loadfile` each
  worker takes the next file when it is free, so a long file must not come last. A file the
  record does not know yet runs first (it may be long; a short one costs nothing there).
* **`slow`**: a test whose setup, call and teardown took `SLOW_S` or more, every test of a file
  whose setup of one test took `SLOW_S` or more (a module fixture: a daemon, a real client, a
  model load, paid by whichever of its tests runs first), and every test marked `models`.
  `make test-fast` runs `-m "not slow"`. A test the record does not know is not slow until the
  next `make durations` measures it.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import pytest

RECORD = Path(__file__).resolve().parent / "durations.json"
SLOW_S = 1.0

_phases: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0])
_PHASE = {"setup": 0, "call": 1, "teardown": 2}


def load(path: Path = RECORD) -> dict[str, list[float]]:
    """{node id: [setup s, call s, teardown s]} of the last recorded run; {} when absent."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data.get("tests", {}) if isinstance(data, dict) else {}


def slow_ids(record: dict[str, list[float]]) -> set[str]:
    """The recorded tests `slow` applies to (the rule in the module docstring)."""
    heavy_files = {node.split("::")[0] for node, (setup, _, _) in record.items() if setup >= SLOW_S}
    return {node for node, phases in record.items()
            if sum(phases) >= SLOW_S or node.split("::")[0] in heavy_files}


def file_seconds(record: dict[str, list[float]]) -> dict[str, float]:
    totals: dict[str, float] = defaultdict(float)
    for node, phases in record.items():
        totals[node.split("::")[0]] += sum(phases)
    return dict(totals)


def pytest_addoption(parser):
    parser.addoption("--record-durations", metavar="PATH", default=None,
                     help="write every test's setup/call/teardown seconds to PATH (tests/durations.json)")


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: took ≥ 1 s in the last recorded run (tests/durations.json); "
                                       "`make test-fast` leaves these out")


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    record = load()
    slow = slow_ids(record)
    seconds = file_seconds(record)
    for item in items:
        if item.nodeid in slow or item.get_closest_marker("models"):
            item.add_marker(pytest.mark.slow)
    # unknown files first, then the longest; stable, so the order within a file is kept
    items.sort(key=lambda item: -seconds.get(item.nodeid.split("::")[0], float("inf")))


def pytest_runtest_logreport(report):
    _phases[report.nodeid][_PHASE[report.when]] += report.duration


def pytest_sessionfinish(session, exitstatus):
    path = session.config.getoption("--record-durations")
    if not path or hasattr(session.config, "workerinput"):  # the controller writes, not each worker
        return
    tests = {node: [round(p, 3) for p in phases] for node, phases in sorted(_phases.items())}
    Path(path).write_text(json.dumps({"slow_s": SLOW_S, "tests": tests}, indent=0) + "\n")
