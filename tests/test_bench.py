"""`system1 bench`: the mock and the embedded fast tier over a small labelled set — figures
checked by hand for the deterministic mock, plots written, the cache resumes, bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import run_cli

DESTRUCTIVE = {"type": "noul", "instructions": "Does the command delete or overwrite existing data?",
               "criteria": {"true": "It deletes, overwrites or truncates existing files or data.",
                            "false": "It only reads, lists or prints; nothing existing is changed."}}
AREA = {"type": "choice", "instructions": "Which part of the code base does the request touch?",
        "criteria": {"frontend": "User interface: pages, components, CSS, the browser.",
                     "database": "Database: tables, SQL queries, migrations, indexes."}}
ITEMS = [("rm -rf ./build", DESTRUCTIVE, True), ("ls -la src", DESTRUCTIVE, False),
         ("truncate -s 0 app.log", DESTRUCTIVE, True), ("cat README.md", DESTRUCTIVE, False),
         ("Fix the button colour on the login page", AREA, "frontend"),
         ("Add an index on orders.customer_id", AREA, "database"),
         ("Write the migration that drops the legacy users table", AREA, "database")]


def labelled_set(tmp_path: Path) -> Path:
    path = tmp_path / "set.jsonl"
    path.write_text("".join(json.dumps({"id": f"i{i}", "task": "destructive" if q is DESTRUCTIVE else "area",
                                        "state": s, "question": q, "expected": e}) + "\n"
                            for i, (s, q, e) in enumerate(ITEMS)))
    return path


CONFIG = """[gateway]
provider = "mock"
[providers.mock]
answer = "true"
[providers.fast]
kind = "embedded"
tier = "fast"
heads = false
"""


@pytest.mark.models
def test_bench_mock_and_the_fast_tier_with_plots_and_resume(tmp_path, write_config):
    write_config(CONFIG)
    out = tmp_path / "out"
    code, _, err = run_cli("bench", str(labelled_set(tmp_path)), "--providers", "mock,fast", "--out", str(out),
                           timeout=300)
    assert code == 0, err
    results = json.loads((out / "results.json").read_text())["results"]
    mock = results["mock"]
    # the mock says "true" everywhere: right on the 2 destructive commands of 4; on choices "true" is
    # not a label, so it picks by hash: only the count of items is fixed
    assert mock["tasks"]["destructive"]["accuracy"] == 0.5 and mock["tasks"]["destructive"]["n"] == 4
    assert mock["tasks"]["area"]["n"] == 3 and mock["models"] == ["mock-1"]
    lo, hi = mock["tasks"]["destructive"]["ci95"]
    assert 0 <= lo <= 0.5 <= hi <= 1
    # confidence 0.9 on each of the 4 commands, right on half of them: one bin, |0.9 - 0.5|
    assert mock["tasks"]["destructive"]["ece"] == pytest.approx(0.4)
    fast = results["fast"]
    assert fast["models"] == ["all-minilm-l6-v2-int8"] and fast["macro"] is not None
    assert fast["p50_ms"] < 1000
    # ECE is at most the mean of |confidence - right| per item; on yes/no the confidence is in
    # 0.5..1, so a right item adds at most 0.5 and a wrong one at most 1: 1 - accuracy / 2
    destructive = fast["tasks"]["destructive"]
    assert 0 <= destructive["ece"] <= 1 - destructive["accuracy"] / 2
    for png in ("hero.png", "heatmap.png", "reliability.png"):
        assert (out / png).stat().st_size > 10_000, png
    assert "provider" in err and "destructive" in err  # the table
    cached = (out / "cache.jsonl").read_text().splitlines()
    assert len(cached) == 14
    code, _, _ = run_cli("bench", str(labelled_set(tmp_path)), "--providers", "mock,fast", "--out", str(out))
    assert code == 0 and (out / "cache.jsonl").read_text().splitlines() == cached  # nothing asked again


@pytest.mark.parametrize("args, message", [
    (["--providers", "mock,nosuch"], "nosuch"),
    (["--providers", "mock,mock"], "--providers: expected distinct rung names"),
    (["--providers", "mock", "--limit", "0"], "--limit: expected a count ≥ 1"),
])
def test_bench_bad_input_names_the_flag(tmp_path, write_config, args, message):
    write_config(CONFIG)
    code, _, err = run_cli("bench", str(labelled_set(tmp_path)), *args, "--out", str(tmp_path / "o"))
    assert code == 2 and message in err


def test_bench_a_missing_set_and_bad_lines(tmp_path, write_config):
    write_config(CONFIG)
    code, _, err = run_cli("bench", str(tmp_path / "none.jsonl"), "--providers", "mock", "--out", str(tmp_path / "o"))
    assert code == 2 and "none.jsonl: does not exist" in err
    path = labelled_set(tmp_path)
    path.write_text(path.read_text() + "{broken\n")
    code, _, err = run_cli("bench", str(path), "--providers", "mock", "--out", str(tmp_path / "o"))
    assert code == 2 and "set.jsonl:8: invalid JSON" in err  # reported; the valid lines still ran
    assert json.loads((tmp_path / "o" / "results.json").read_text())["results"]["mock"]["tasks"]["destructive"]["n"] == 4
