"""The one atomic-write helper every module uses (paths.write_atomic)."""

import os
import stat
import subprocess
import sys

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


def _walk_modes(root):
    """Every folder and file below `root` (itself included) with its permission bits."""
    found = {root: stat.S_IMODE(root.stat().st_mode)}
    for path in root.rglob("*"):
        found[path] = stat.S_IMODE(path.stat().st_mode)
    return found


def _decide_and_consent(state, tmp_path, umask):
    """A real decision (audit log, shared state) and a consent record, in a process whose
    umask is `umask`, as a user's shell might have it."""
    env = {**os.environ, "SYSTEM1_STATE_DIR": str(state), "SYSTEM1_PROVIDER": "mock"}
    for code in ("from system1_gateway.cli import main; main(['decide', 'Is it?'])",
                 "from system1_gateway.core import consent; consent.save({'openai': 'now'})"):
        proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                              timeout=120, preexec_fn=lambda: os.umask(umask))
        assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize("umask", [0o000, 0o022])
def test_state_is_the_owners_only_whatever_the_umask(tmp_path, umask):
    """The state dir was 0755 and audit.jsonl, state.db, consents.json 0644 (with
    DEBUG logging the audit holds full evidence). Every folder the gateway makes is 0700 and
    every state file 0600, with a permissive umask too; parents it had to create as well."""
    state = tmp_path / "made" / "by" / "us" / "state"
    _decide_and_consent(state, tmp_path, umask)
    modes = _walk_modes(tmp_path / "made")
    names = {p.relative_to(state).as_posix() for p in modes if state in p.parents}
    assert {"logs/audit.jsonl", "state.db", "consents.json"} <= names, names
    for path, mode in modes.items():
        assert mode == (0o700 if path.is_dir() else 0o600), (path, oct(mode))


def test_a_state_dir_left_open_by_an_older_version_is_tightened(tmp_path):
    """An existing 0755 state dir with 0644 files (what earlier versions left) is made the
    owner's only the next time the gateway writes there; a folder outside the state dir that
    already existed keeps its mode."""
    import sqlite3

    state = tmp_path / "state"
    (state / "logs").mkdir(parents=True)
    (state / "logs" / "audit.jsonl").write_text("")
    sqlite3.connect(state / "state.db").close()
    (state / "consents.json").write_text("{}")
    for path in (state, state / "logs", state / "logs" / "audit.jsonl", state / "state.db", state / "consents.json"):
        path.chmod(0o755 if path.is_dir() else 0o644)
    tmp_path.chmod(0o755)
    _decide_and_consent(state, tmp_path, 0o022)
    for path, mode in _walk_modes(state).items():
        assert mode == (0o700 if path.is_dir() else 0o600), (path, oct(mode))
    assert stat.S_IMODE(tmp_path.stat().st_mode) == 0o755  # not ours to change
