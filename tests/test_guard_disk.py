"""What is on disk (docs/guard.md "What is on disk"): the guard looks at the
working tree where a command's loss depends on it, in real git repositories made here.

The reader (`shell/disk.py`) first: what it relaxes, what it never relaxes (something earlier
in the command can change the state, a path it cannot vouch for, a hostile cwd), what it says,
that it writes nothing and keeps to its budget. Then the real hook, as Claude Code runs it: the
command guard (`python -I -m system1_gateway.hooks.guard`, a real config and daemon whose mock
engine calls everything it is asked destructive) and guard.sh asking the plugin's hook server.
The commands are written from git's and coreutils' manuals for this repository layout.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from system1_gateway.shell import disk

GIT_ID = ["-c", "user.name=Dev", "-c", "user.email=dev@example.com"]


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *GIT_ID, *args], cwd=repo, check=True, capture_output=True, text=True).stdout


def make_repo(path: Path, dirty: bool = True) -> Path:
    """A project: src/app.py and README.md committed; build/, node_modules/ and .env ignored and
    present; with `dirty`, an uncommitted edit of src/app.py."""
    path.mkdir(parents=True)
    git(path, "init", "-q", "-b", "main")
    (path / "src").mkdir()
    (path / "src" / "app.py").write_text("def main():\n    return 1\n")
    (path / "README.md").write_text("# project\n")
    (path / ".gitignore").write_text("/build/\nnode_modules/\n.env\n*.sqlite\n")
    git(path, "add", "-A")
    git(path, "commit", "-qm", "first")
    (path / "build" / "lib").mkdir(parents=True)
    (path / "build" / "lib" / "app.o").write_bytes(b"\x7fELF")
    (path / "node_modules" / "left-pad").mkdir(parents=True)
    (path / "node_modules" / "left-pad" / "index.js").write_text("module.exports = 1\n")
    (path / ".env").write_text("API_KEY=not-a-real-key\n")
    if dirty:
        with (path / "src" / "app.py").open("a") as f:
            f.write("# work in progress\n")
    return path


def asked(command: str, cwd: Path | str) -> bool:
    """The text verdict stands (None) or the disk says it loses something."""
    got = disk.answer(command, str(cwd))
    return got is None or got["p_true"] == 1.0


def verdict(command: str, cwd: Path | str) -> tuple[float, str] | None:
    got = disk.answer(command, str(cwd))
    return None if got is None else (got["p_true"], got["rationale"])


@pytest.fixture
def dirty(tmp_path):
    return make_repo(tmp_path / "dirty")


@pytest.fixture
def clean(tmp_path):
    origin = make_repo(tmp_path / "origin", dirty=False)
    git(tmp_path, "clone", "-q", str(origin), "clone")
    return tmp_path / "clone"


# -- the reader --------------------------------------------------------------------------------

@pytest.mark.parametrize("command, says", [
    ("rm -rf node_modules", "node_modules/ is ignored by git and rebuilt"),
    ("rm -rf build", "build/ is ignored by git and rebuilt"),
    ("rm -r -f ./build/ node_modules", "build/, node_modules/ are ignored by git and rebuilt"),
    ("rm -rf 'node_modules'", "node_modules/ is ignored by git and rebuilt"),
    ("rm -rf dist", "nothing named dist exists"),
    ("ls -la && rm -rf build", "build/ is ignored by git and rebuilt"),
    ("echo hi > new-notes.txt", "new-notes.txt does not exist: it is created"),
    ("printf '%s\\n' a b > src/list.txt", "src/list.txt does not exist: it is created"),
    (": > fresh.log", "fresh.log does not exist: it is created"),
    ("truncate -s 0 trace.log", "trace.log does not exist: it is created"),
    ("cp /dev/null empty.txt", "empty.txt does not exist: it is created"),
    ("cat <<EOF > NOTES.md\nsteps so far\nEOF", "NOTES.md does not exist: it is created"),
    ("git checkout -- README.md", "README.md has no uncommitted changes"),
    ("git restore README.md .gitignore", "README.md, .gitignore have no uncommitted changes"),
    ("git clean -fd", "nothing it would delete is there"),
    ("git status --short && git checkout -- README.md", "README.md has no uncommitted changes"),
])
def test_a_dirty_tree_loses_nothing_here(dirty, command, says):
    p, why = verdict(command, dirty)
    assert p == 0.0 and says in why, why


@pytest.mark.parametrize("command, says", [
    ("git checkout -- src/app.py", "src/app.py has uncommitted changes"),
    ("git checkout -- .", "src/app.py has uncommitted changes"),
    ("git restore src", "src/app.py has uncommitted changes"),
    ("git reset --hard", "src/app.py has uncommitted changes"),
    ("git reset -q --hard HEAD", "src/app.py has uncommitted changes"),
    ("git stash drop", "src/app.py has uncommitted changes"),
    (": > .env", ".env exists (23 bytes)"),
    ("> .env", ".env exists (23 bytes)"),
    ("truncate -s 0 .env", ".env exists (23 bytes)"),
    ("git clean -fdx", "would be deleted (untracked or ignored)"),
    ("git clean -fX", ".env, build/, node_modules/ would be deleted (ignored)"),
])
def test_what_would_be_lost_is_said(dirty, command, says):
    p, why = verdict(command, dirty)
    assert p == 1.0 and says in why, why


@pytest.mark.parametrize("command", [
    "rm -rf src", "rm -f .env", "rm -rf ~", "rm -rf /", "rm -rf ..", "rm -rf .", "rm -rf $HOME/build",
    "rm -rf b*", "rm -rf build/../build", "rm -rf ./src/../build", "rm -rf {build,src}", "rm -rf \\build",
    "rm -rf -- ~/build", "rm -rf \"$(pwd)/build\"", "rm -rf build src",
    "sudo rm -rf build", "bash -c 'rm -rf build'", "echo build | xargs rm -rf", "find . -name build -exec rm -rf {} +",
    "ssh host rm -rf build", "docker run --rm img rm -rf build", "timeout 5 rm -rf build",
    "rm --no-preserve-root -rf build", "rm -rf --interactive=never build",
    # something in the same command can change what was looked at
    "git add -A && git reset --hard", "cd other && rm -rf build", "touch x; > x", "mkdir -p a && rm -rf a",
    "git stash && git stash drop", "ln -s ~/.ssh/id_ed25519 notes.txt; : > notes.txt", "cd /tmp; rm -rf build",
    "alias rm='rm -i'; rm -rf build", "rm() { command rm -rf ~; }; rm -rf build", "PATH=.:$PATH rm -rf build",
    "GIT_DIR=/tmp/other.git git reset --hard", "GIT_WORK_TREE=/ git checkout -- .",
    "git -C ../other reset --hard", "git --work-tree=/ reset --hard",
    # git forms that move more than uncommitted work, or name paths it cannot vouch for
    "git reset --hard HEAD~1", "git reset --hard origin/main", "git checkout main -- README.md",
    "git restore --source=HEAD~2 README.md", "git checkout -- '*.md'", "git checkout -- :/", "git clean -fd -e x",
    "git stash drop stash@{1}", "git checkout -- ../README.md",
    # redirections and truncations it cannot vouch for
    "{\"command\": \"echo hi > new-notes.txt\"}", "echo x > $OUT", "echo x > ~/notes.txt", "echo x > /tmp/x", "make > new.log", "cat .env > .env.bak && : > .env",
])
def test_never_relaxed(dirty, command):
    assert asked(command, dirty), verdict(command, dirty)


def test_a_clean_clone_loses_nothing_on_reset_or_checkout(clean):
    for command in ("git reset --hard", "git checkout -- .", "git checkout .", "git reset --hard HEAD",
                    "git stash drop", "git stash clear", "git restore ."):
        p, why = verdict(command, clean)
        assert p == 0.0 and ("no uncommitted changes" in why or "no stash entry" in why
                             or "no file here" in why), (command, why)
    # from a subdirectory: `git reset --hard` still resets the whole tree
    (clean / "README.md").write_text("edited\n")
    p, why = verdict("git reset --hard", clean / "src")
    assert p == 1.0 and "README.md has uncommitted changes" in why
    assert verdict("git checkout -- app.py", clean / "src")[0] == 0.0


def test_what_git_status_does_not_see_is_not_vouched_for(clean):
    """Files marked assume-unchanged or skip-worktree hide their edits from `git status`; a
    stash entry is lost by a drop whatever the tree; a staged change counts as uncommitted."""
    (clean / "README.md").write_text("local only\n")
    git(clean, "update-index", "--assume-unchanged", "README.md")
    assert git(clean, "status", "--porcelain") == ""
    assert verdict("git reset --hard", clean)[0] == 1.0  # git cannot vouch for it: the text verdict stands
    git(clean, "update-index", "--no-assume-unchanged", "README.md")
    git(clean, "update-index", "--skip-worktree", "README.md")
    assert verdict("git checkout -- README.md", clean)[0] == 1.0
    git(clean, "update-index", "--no-skip-worktree", "README.md")
    git(clean, "stash", "-q")
    p, why = verdict("git stash drop", clean)
    assert p == 1.0 and "the stash has entries" in why
    git(clean, "stash", "drop", "-q")
    (clean / "src" / "app.py").write_text("staged\n")
    git(clean, "add", "src/app.py")
    p, why = verdict("git checkout -- src", clean)
    assert p == 1.0 and "src/app.py has uncommitted changes" in why


def test_only_whole_ignored_regenerated_directories(dirty):
    """Not ignored, a tracked file inside, a nested repository, a precious name, a link: asked."""
    (dirty / "dist").mkdir()
    (dirty / "dist" / "bundle.js").write_text("x")
    p, why = verdict("rm -rf dist", dirty)  # untracked, not ignored: nothing says it is rebuilt
    assert p == 1.0 and "dist/ is not ignored by git as a whole" in why, why
    (dirty / "build" / "keep.txt").write_text("hand-written\n")
    git(dirty, "add", "-f", "build/keep.txt")
    p, why = verdict("rm -rf build", dirty)
    assert p == 1.0 and "build/keep.txt under it is tracked by git" in why
    git(dirty, "init", "-q", "node_modules")  # a repository of its own (one deeper is not looked for: no walk)
    assert asked("rm -rf node_modules", dirty)
    (dirty / "local.sqlite").mkdir()
    (dirty / "local.sqlite" / "db").write_text("rows")
    assert asked("rm -rf local.sqlite", dirty)  # ignored, but a database
    os.symlink(dirty / "src", dirty / "target")
    assert asked("rm -rf target", dirty)  # a link to the sources
    os.symlink(dirty / "src", dirty / "out")
    assert asked("echo x > out/new.txt", dirty)  # a link on the way
    (dirty / "empty").mkdir()
    assert asked("rm -rf empty", dirty)  # only the regenerated names, even empty
    assert asked("rm -rf no-such-dir", dirty)


@pytest.mark.parametrize("cwd", ["", "relative/dir", "/no/such/dir", "/", "/etc", "/usr/lib", "~", 42, None,
                                 "/tmp/\x00x"])
def test_a_hostile_cwd_is_never_looked_at(cwd):
    assert disk.answer("rm -rf node_modules", cwd) is None


def test_a_file_as_cwd_or_the_home_directory_is_never_looked_at(dirty, monkeypatch):
    assert disk.answer("rm -rf node_modules", str(dirty / "README.md")) is None
    monkeypatch.setenv("HOME", str(dirty))
    assert disk.answer("rm -rf node_modules", str(dirty)) is None


def test_the_hooks_environment_pointing_git_elsewhere_relaxes_nothing(dirty, monkeypatch):
    monkeypatch.setenv("GIT_DIR", str(dirty / ".git"))
    assert disk.answer("rm -rf node_modules", str(dirty)) is None


def test_nothing_is_written_and_the_budget_holds(dirty):
    def snapshot():
        return sorted((str(p), p.stat().st_mtime_ns, p.stat().st_size) for p in (dirty / ".git").rglob("*"))

    before = snapshot()
    for command in ("git reset --hard", "git checkout -- .", "git clean -fdx", "rm -rf node_modules", "git stash drop"):
        disk.answer(command, str(dirty))
    assert snapshot() == before
    # past its budget git is stopped and the text verdict stands (the answer is no relaxation)
    for command in ("rm -rf build", "git checkout -- README.md", "git reset --hard"):
        got = disk.answer(command, str(dirty), budget_s=0.0)
        assert got["p_true"] == 1.0 and got["model"] in ("rule:rm", "rule:git-checkout-discard", "rule:git-reset-hard")
        assert ";" not in got["rationale"]  # nothing was looked at


def test_outside_a_repository_only_what_needs_no_git(tmp_path):
    (tmp_path / "node_modules" / "x").mkdir(parents=True)
    assert asked("rm -rf node_modules", tmp_path)
    assert verdict("git reset --hard", tmp_path)[0] == 1.0
    assert verdict("echo hi > new.txt", tmp_path)[0] == 0.0


# -- the real hook -------------------------------------------------------------------------------

ASKS = ["rm -rf src", "git checkout -- src/app.py", "git reset --hard", ": > .env", "rm -f .env", "git stash drop",
        "rm -rf ~"]
SILENT = ["rm -rf node_modules", "rm -rf build", "echo hi > new-notes.txt", "git checkout -- README.md"]
SILENT_IN_A_CLEAN_CLONE = ["git reset --hard", "git checkout -- ."]


def _decision(out) -> str | None:
    return out["hookSpecificOutput"].get("permissionDecision") if out else None


def test_the_command_guard_reads_the_working_tree(write_config, tmp_path, start_daemon, dirty, clean):
    from test_hooks import config, hook

    config(write_config, tmp_path, guard={"enabled": True})  # the mock engine calls everything destructive
    start_daemon()
    for command in ASKS:
        code, out, err = hook("guard", {"tool_name": "Bash", "tool_input": {"command": command}, "cwd": str(dirty)},
                              "--explain")
        assert code == 0 and _decision(out) == "ask", (command, err)
    reason = hook("guard", {"tool_input": {"command": "git checkout -- src/app.py"}, "cwd": str(dirty)})[1]
    assert "src/app.py has uncommitted changes" in reason["hookSpecificOutput"]["permissionDecisionReason"]
    for command in SILENT:
        code, out, err = hook("guard", {"tool_name": "Bash", "tool_input": {"command": command}, "cwd": str(dirty)},
                              "--explain")
        assert code == 0 and out is None, (command, out, err)
        assert "disk: part 1 of 1" in err
    for command in SILENT_IN_A_CLEAN_CLONE:
        code, out, err = hook("guard", {"tool_input": {"command": command}, "cwd": str(clean)}, "--explain")
        assert code == 0 and out is None, (command, out, err)
    # the same commands, with no cwd to look at: the text decides, and asks
    for command in SILENT:
        assert _decision(hook("guard", {"tool_input": {"command": command}})[1]) == "ask", command


def test_with_the_engine_down_only_what_loses_nothing_everywhere_goes_through(write_config, tmp_path, dirty):
    from test_hooks import config, hook

    config(write_config, tmp_path, guard={"enabled": True, "budget_s": 0.5})  # no daemon
    for command in ("rm -rf node_modules", "echo hi > new-notes.txt"):
        code, out, err = hook("guard", {"tool_input": {"command": command}, "cwd": str(dirty)}, "--explain")
        assert code == 0 and out is None, (command, err)
    for command in ("rm -rf src", "git checkout -- src/app.py", "rm -rf node_modules && make"):
        out = hook("guard", {"tool_input": {"command": command}, "cwd": str(dirty)})[1]
        assert "could not judge" in out["hookSpecificOutput"]["permissionDecisionReason"], command


def test_the_hook_server_reads_the_working_tree(write_config, tmp_path, start_daemon, dirty, clean):
    from test_guard_channel import Plugin
    from test_hooks import config

    config(write_config, tmp_path, guard={"enabled": True})
    start_daemon()
    plugin = Plugin(tmp_path, venv=False)  # no venv: every answer comes from the server
    plugin.start()
    try:
        for command in ASKS:
            out, _, proc = plugin.guard(command, dirty)
            assert _decision(out) == "ask", (command, proc.stderr)
        for command in SILENT:
            out, _, proc = plugin.guard(command, dirty)
            assert out is None, (command, out)
        for command in SILENT_IN_A_CLEAN_CLONE:
            out, _, proc = plugin.guard(command, clean)
            assert out is None, (command, out)
        out, _, _ = plugin.guard("git add -A && git reset --hard", clean)
        assert _decision(out) == "ask"
    finally:
        plugin.stop()
