"""The one atomic-write helper every module uses (paths.write_atomic)."""

import os
import stat

import pytest

from system1_gateway.paths import write_atomic


def test_write_atomic_is_private_by_default_and_replaces_whole(tmp_path):
    target = tmp_path / "new" / "dir" / "state.json"
    write_atomic(target, "one")
    assert target.read_text() == "one"
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert stat.S_IMODE(target.parent.stat().st_mode) == 0o700
    write_atomic(target, b"\x00two")
    assert target.read_bytes() == b"\x00two"
    write_atomic(target, "three", mode=0o644)  # a file that is the user's own keeps its mode
    assert stat.S_IMODE(target.stat().st_mode) == 0o644
    assert sorted(p.name for p in target.parent.iterdir()) == ["state.json"]  # no temp file left


def test_a_failed_write_leaves_the_old_file_and_no_temp_file(tmp_path, monkeypatch):
    target = tmp_path / "state.json"
    write_atomic(target, "old")

    def refuse(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", refuse)
    with pytest.raises(OSError):
        write_atomic(target, "new")
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["state.json"]
