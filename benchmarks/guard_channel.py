"""What one Bash call's guard costs as a process, script to answer, without Claude Code:
hooks/guard.sh asking the warm hook server, beside the floor of any command hook and beside
the channel of an earlier commit, in one run.

    python benchmarks/guard_channel.py [--calls 200] [--before cda51f6]

Arms, interleaved call by call (a busy machine slows all alike):

  floor      `sh -c 'cat >/dev/null'`: a POSIX sh command hook that reads its input and says
             nothing (what any command hook costs before it does anything)
  now        `sh hooks/guard.sh` asking this checkout's hook server (the installed package)
  before     the same at `--before REV`: that commit's hooks/guard.sh asking that commit's
             hook server (its `src/` from `git worktree`, on PYTHONPATH; the server then runs
             without `-I`, which changes nothing it does); skipped without --before
  command    the command guard, `python -I -m system1_gateway.hooks.guard` (what guard.sh runs
             when no server answers)

Commands alternate between `ls -la` (the rules let it pass: silence) and `rm -rf ./build` (the
rules ask); both are answered by the hook server without the daemon. The guard is on, in a
temporary config and state dir. Prints p50 / p95 per arm, and each arm's p50 over the floor's.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_stats import pct

ROOT = Path(__file__).resolve().parents[1]
COMMANDS = ["ls -la", "rm -rf ./build"]


class Server:
    """A hook server as Claude Code starts it (this process is its parent and guard.sh's)."""

    def __init__(self, data: Path, env: dict[str, str], src: Path | None):
        self.data = data
        data.mkdir(parents=True)
        (data / "venv").symlink_to(Path(sys.prefix))
        env = {**env, "CLAUDE_PLUGIN_DATA": str(data)}
        argv = [sys.executable, "-I", "-m", "system1_gateway.hooks.serve"]
        if src is not None:
            env["PYTHONPATH"] = str(src)
            argv.remove("-I")
        self.env = env
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
        named = data / "hook-servers" / str(os.getpid())
        end = time.monotonic() + 30
        while not (named.exists() and named.read_text().split()[:1] == [str(self.proc.pid)]):
            if time.monotonic() > end or self.proc.poll() is not None:
                raise SystemExit("the hook server did not start")
            time.sleep(0.02)
        time.sleep(1.0)  # the rules load in the background

    def stop(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


def once(argv: list[str], env: dict[str, str], given: bytes) -> tuple[float, bytes]:
    t0 = time.perf_counter()
    out = subprocess.run(argv, input=given, capture_output=True, env=env, check=True).stdout
    return (time.perf_counter() - t0) * 1000, out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=200, help="calls per arm")
    parser.add_argument("--before", metavar="REV", help="also measure the channel at this commit")
    args = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="guard-channel-"))
    config = scratch / "config.toml"
    config.write_text('[gateway]\nprovider = "mock"\n[guard]\nenabled = true\nbudget_s = 0.5\n')
    env = {**os.environ, "SYSTEM1_CONFIG": str(config), "SYSTEM1_STATE_DIR": str(scratch / "state"),
           "SYSTEM1_SERVE_AUTOSTART": "0"}
    servers: dict[str, Server] = {}
    arms: dict[str, list[str]] = {"floor": ["sh", "-c", "cat >/dev/null"]}
    worktree = None
    try:
        servers["now"] = Server(scratch / "now", env, None)
        arms["now"] = ["sh", str(ROOT / "hooks" / "guard.sh")]
        if args.before:
            worktree = scratch / "before"
            subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "-q", "--detach", str(worktree), args.before],
                           check=True)
            servers["before"] = Server(scratch / "before-data", env, worktree / "src")
            arms["before"] = ["sh", str(worktree / "hooks" / "guard.sh")]
        arms["command"] = [sys.executable, "-I", "-m", "system1_gateway.hooks.guard"]
        times: dict[str, list[float]] = {arm: [] for arm in arms}
        for i in range(args.calls + 5):
            command = COMMANDS[i % len(COMMANDS)]
            given = json.dumps({"hook_event_name": "PreToolUse", "tool_name": "Bash", "cwd": str(scratch),
                                "tool_input": {"command": command}, "permission_mode": "default"}).encode()
            for arm, argv in arms.items():
                arm_env = servers[arm].env if arm in servers else env
                took, out = once(argv, arm_env, given)
                if arm not in ("floor", "command"):  # the command guard asks the (absent) daemon
                    asked = b'"ask"' in out
                    if asked != (command.startswith("rm")) or (arm == "now" and b"could not judge" in out):
                        raise SystemExit(f"{arm}: unexpected answer to {command!r}: {out!r}")
                if i >= 5:  # the first calls warm the caches
                    times[arm].append(took)
        floor = statistics.median(times["floor"])
        print(f"{'arm':<10} {'p50 ms':>8} {'p95 ms':>8} {'p50 - floor':>12}   ({args.calls} calls each, interleaved)")
        for arm, values in times.items():
            p50 = statistics.median(values)
            print(f"{arm:<10} {p50:8.2f} {pct(values, 0.95):8.2f} {p50 - floor:+12.2f}")
        if "before" in times:
            print(f"now / before (p50): {statistics.median(times['now']) / statistics.median(times['before']):.2f}")
    finally:
        for server in servers.values():
            server.stop()
        if worktree is not None:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(worktree)], check=False)
        shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
