"""The routing log module: one place for its path, record shapes, streaming read and rewrite."""

import os
import stat

from system1_gateway.routing import FEATURES, TIERS, log


def test_append_writes_private_lines_that_entries_read_back(tmp_path, monkeypatch):
    monkeypatch.setenv("SYSTEM1_STATE_DIR", str(tmp_path / "state"))
    rec = {**log.record("prompt", "s1", "p1", "repo", "/w"), "prompt": "explain x",
           "features": log.features({"read_only": (True, 0.91234)})}
    where = log.append(rec)
    assert where == log.path() and where.startswith(str(tmp_path / "state"))
    assert stat.S_IMODE(os.stat(where).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(os.path.dirname(where)).st_mode) == 0o700
    with open(where, "a") as handle:
        handle.write("not json\n[1, 2]\n")
    log.append({**log.record("guard", None, None, None, "/w"), "command": "ls"})
    got = list(log.entries())
    assert [n for n, _ in got] == [1, 4]  # the two bad lines are skipped, numbering kept
    assert got[0][1]["features"] == {"read_only": {"answer": True, "confidence": 0.9123}}
    assert got[0][1]["session_id"] == "s1" and got[1][1]["session_id"] is None
    assert [e["source"] for _, e in log.entries(only='"source":"prompt"')] == ["prompt"]
    assert list(log.entries(tmp_path / "missing.jsonl")) == []


def test_rewrite_changes_only_revised_lines_keeps_a_backup_and_writes_nothing_unchanged(tmp_path):
    path = tmp_path / "routing.jsonl"
    path.write_bytes(b'{"a":1}\n{"b":2}\n')
    assert log.rewrite(path, lambda line: None) is False
    assert not (tmp_path / "routing.jsonl.bak").exists()
    assert log.rewrite(path, lambda line: b'{"b":3}\n' if b'"b"' in line else None) is True
    assert path.read_bytes() == b'{"a":1}\n{"b":3}\n'
    assert (tmp_path / "routing.jsonl.bak").read_bytes() == b'{"a":1}\n{"b":2}\n'
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_the_features_and_tiers_are_those_the_default_rule_reads():
    from system1_gateway.routing.rule import DEFAULT, apply_rule

    assert FEATURES == ("read_only", "design", "review", "specified") and TIERS == ("haiku", "sonnet", "opus", "fable")
    assert apply_rule({f: False for f in FEATURES}, DEFAULT) == "opus"
    assert apply_rule({"read_only": True, "design": False, "review": False, "specified": True}, DEFAULT) == "haiku"
