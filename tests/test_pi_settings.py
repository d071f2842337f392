"""The Pi extension's settings file (`system1.json`): every case of the shared table.

tests/data/pi_settings_cases.json is the one definition of the rules, so the TypeScript
extension can be tested against the very same cases. Each case is an object:

  name   what the case shows
  file   the file's content as JSON, written with json.dumps; null: no file at all
  raw    (optional) the file's exact text instead of `file` (for text that is not JSON)
  order  the order read_order returns (Pi names, aliases resolved), or null when it fails
  chain  that order as gateway rung names (gateway_chain), or null when it fails
  error  a substring of the error message, or null when the file is valid
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from system1_gateway.pi_settings import PiSettingsError, agent_dir, gateway_chain, read_order, settings_path

CASES = json.loads((Path(__file__).parent / "data" / "pi_settings_cases.json").read_text(encoding="utf-8"))


def write_case(case: dict, path: Path) -> None:
    if "raw" in case:
        path.write_text(case["raw"], encoding="utf-8")
    elif case["file"] is not None:
        path.write_text(json.dumps(case["file"]), encoding="utf-8")


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_every_case_of_the_shared_table(case, tmp_path):
    path = tmp_path / "system1.json"
    write_case(case, path)
    if case["error"] is None:
        order = read_order(path)
        assert order == case["order"] and gateway_chain(order) == case["chain"]
    else:
        with pytest.raises(PiSettingsError) as caught:
            read_order(path)
        assert case["error"] in str(caught.value) and str(path) in str(caught.value)


def test_the_table_covers_every_rule():
    names = " ".join(c["name"] for c in CASES)
    for rule in ("missing file", "alias", "authoritative", "legacy backend", "waterfall empty with a valid backend",
                 "duplicate through the alias", "backend not a string", "not JSON"):
        assert rule in names, rule
    assert all(set(c) <= {"name", "file", "raw", "order", "chain", "error"} for c in CASES)
    assert all((c["order"] is None) == (c["error"] is not None) for c in CASES)


def test_an_unreadable_file_is_an_error_naming_it(tmp_path):
    folder = tmp_path / "system1.json"
    folder.mkdir()  # a directory where the file should be
    with pytest.raises(PiSettingsError, match="cannot read"):
        read_order(folder)
    latin = tmp_path / "latin.json"
    latin.write_bytes(b'{"backend": "caf\xe9"}')
    with pytest.raises(PiSettingsError, match="not UTF-8 text"):
        read_order(latin)


def test_the_file_lives_in_pis_agent_dir(monkeypatch, tmp_path):
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "agent"))
    assert settings_path() == tmp_path / "agent" / "system1.json"
    monkeypatch.setenv("PI_CODING_AGENT_DIR", "~/elsewhere")  # Pi expands `~` itself
    assert agent_dir() == Path.home() / "elsewhere"
    monkeypatch.delenv("PI_CODING_AGENT_DIR")
    assert settings_path() == Path.home() / ".pi" / "agent" / "system1.json"
