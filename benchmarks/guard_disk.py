"""What looking at the working tree costs the guard (docs/guard.md "What is on
disk"), in a repository of 10 000 tracked files made in a temporary folder.

    python benchmarks/guard_disk.py [--files 10000] [--n 60]

The repository: src/ of `--files` tracked files, an ignored node_modules/ of 5 000 files, an
ignored build/ and .env, one uncommitted edit; its index refreshed once (as any `git status`
leaves it). Measured in-process, as the plugin's hook server runs the guard (`guard.body` on a
served `Run`: the rules, then the disk), with the disk step and without it (the text-only
guard), per command: median and p95 in ms, and the added time. Commands that need no state
(the disk step returns at once) and state-dependent ones (it reads the command again and asks
git about the paths named). Also the reader alone (`disk.answer`), and the command path's
one-time cost of loading the shell grammar (a new interpreter per call, where the text would ask).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_stats import pct

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

NO_STATE = ["ls -la", "git status", "git log --oneline -5", "kubectl delete namespace staging",
            "dd if=/dev/zero of=/dev/sdb bs=1M", "rm -rf ~", "git push --force origin main"]
STATEFUL = ["rm -rf node_modules", "rm -rf build", "echo hi > new-notes.txt", "git checkout -- README.md",
            "git checkout -- src/m3/f4.py", "git reset --hard", "git clean -fd", ": > .env", "git stash drop"]
GIT_ID = ["-c", "user.name=Bench", "-c", "user.email=bench@example.com"]


def make_repo(path: Path, files: int) -> None:
    def git(*args: str) -> None:
        subprocess.run(["git", *GIT_ID, *args], cwd=path, check=True, capture_output=True)

    path.mkdir()
    git("init", "-q", "-b", "main")
    per = 100
    for d in range(files // per):
        folder = path / "src" / f"m{d}"
        folder.mkdir(parents=True)
        for f in range(per):
            (folder / f"f{f}.py").write_text(f"VALUE = {d * per + f}\n")
    (path / "README.md").write_text("# bench\n")
    (path / ".gitignore").write_text("node_modules/\n/build/\n.env\n")
    git("add", "-A")
    git("commit", "-qm", "files")
    for d in range(50):
        folder = path / "node_modules" / f"pkg{d}"
        folder.mkdir(parents=True)
        for f in range(100):
            (folder / f"i{f}.js").write_text("module.exports = 1\n")
    (path / "build").mkdir()
    (path / "build" / "app.o").write_bytes(b"\0" * 64)
    (path / ".env").write_text("TOKEN=x\n")
    with (path / "src" / "m3" / "f4.py").open("a") as f:
        f.write("# edit\n")
    time.sleep(1.1)  # past the index's timestamp: entries are not racily clean
    git("status", "--porcelain")  # refreshes the index, as a developer's own `git status` does


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--files", type=int, default=10_000)
    ap.add_argument("--n", type=int, default=60)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="system1-disk-") as tmp:
        base = Path(tmp)
        (base / "config.toml").write_text("[guard]\nenabled = true\non_failure = \"ask\"\n")
        os.environ.update(SYSTEM1_CONFIG=str(base / "config.toml"), SYSTEM1_STATE_DIR=str(base / "state"),
                          SYSTEM1_SERVE_AUTOSTART="0")
        repo = base / "repo"
        t0 = time.perf_counter()
        make_repo(repo, args.files)
        tracked = subprocess.run(["git", "ls-files"], cwd=repo, capture_output=True, text=True).stdout.count("\n")
        print(f"repository: {tracked} tracked files, node_modules/ of 5000 ignored files "
              f"(made in {time.perf_counter() - t0:.1f} s)")

        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-I", "-c", "from system1_gateway.shell import structure; structure.warm()"],
                       check=True, env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
        grammar = (time.perf_counter() - t0) * 1000
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-I", "-c", "pass"], check=True)
        floor = (time.perf_counter() - t0) * 1000
        print(f"command path: loading the grammar and rules in a new interpreter ≈ {grammar - floor:.0f} ms "
              f"(paid only where the text would ask and the command names a path)\n")

        from system1_gateway.hooks import common, guard
        from system1_gateway.shell import disk, structure

        structure.warm()
        real_on_disk = guard.on_disk

        def body(command: str, with_disk: bool) -> tuple[float, object]:
            guard.on_disk = real_on_disk if with_disk else (lambda run, command: None)
            run = common.Run("guard", payload={"tool_name": "Bash", "tool_input": {"command": command},
                                               "cwd": str(repo), "permission_mode": "default"})
            t = time.perf_counter()
            out = guard.body(run)
            return (time.perf_counter() - t) * 1000, out

        def decision(out) -> str:
            return out["hookSpecificOutput"].get("permissionDecision", "context") if out else "silent"

        for title, commands in (("commands that need no state", NO_STATE), ("state-dependent commands", STATEFUL)):
            print(f"{title}: the served guard, ms (median / p95), without and with the disk step")
            print(f"  {'command':32} {'text only':>13} {'with disk':>13} {'added p50/p95':>14}  answer (text → disk)")
            for command in commands:
                rows = {}
                for with_disk in (False, True, False, True):  # interleaved: the same minutes for both
                    times = rows.setdefault(with_disk, [])
                    for _ in range(args.n // 2):
                        took, out = body(command, with_disk)
                        times.append(took)
                    rows[(with_disk, "out")] = out
                a, b = rows[False], rows[True]
                print(f"  {command[:32]:32} {statistics.median(a):6.2f}/{pct(a, 0.95):6.2f} "
                      f"{statistics.median(b):6.2f}/{pct(b, 0.95):6.2f} "
                      f"{statistics.median(b) - statistics.median(a):+6.2f}/{pct(b, 0.95) - pct(a, 0.95):+6.2f}  "
                      f"{decision(rows[(False, 'out')])} → {decision(rows[(True, 'out')])}")
            print()
        guard.on_disk = real_on_disk

        print("the reader alone (disk.answer: the parse, the checks, git), ms: median / p95")
        for command in STATEFUL:
            times = []
            for _ in range(args.n):
                t = time.perf_counter()
                got = disk.answer(command, str(repo))
                times.append((time.perf_counter() - t) * 1000)
            said = "text verdict stands" if got is None else got["rationale"].split(": ", 2)[-1][:70]
            print(f"  {command[:32]:32} {statistics.median(times):6.2f} / {pct(times, 0.95):6.2f}  {said}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
