"""What `[guard] approve = "read-only"` adds per permission prompt it answers, as a process,
script to answer, without Claude Code: hooks/approve.sh asking the warm hook server, beside
the floor of any command hook and beside the guard (hooks/guard.sh) on the same server, in one
run, interleaved call by call (a busy machine slows all alike).

    python benchmarks/approve.py [--calls 200]

Arms:

  floor      `sh -c 'cat >/dev/null'`: a POSIX sh command hook that reads its input and says nothing
  approve    `sh hooks/approve.sh`, PermissionRequest input; commands alternate between ones it
             answers `allow` (`ls -la`, `git status && git diff --stat`, `rg foo src`, `find . -name
             '*.py'`) and ones it leaves to the user (`touch x`, `ls && rm -rf build`)
  guard      `sh hooks/guard.sh`, PreToolUse input, the same commands (the guard's own figure)
  judge      the decision alone in this process (shell/readonly.py `judge`, rules loaded)

Prints p50 / p95 per arm (and for approve, split into answered and left), and each arm's p50
over the floor's. The guard and approve are on, in a temporary config and state dir.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from guard_channel import ROOT, Server, once, pct

ANSWERED = ["ls -la", "git status && git diff --stat", "rg foo src", "find . -name '*.py'"]
LEFT = ["touch x", "ls && rm -rf build"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=200, help="calls per arm")
    args = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="approve-bench-"))
    config = scratch / "config.toml"
    config.write_text('[gateway]\nprovider = "mock"\n[guard]\nenabled = true\nbudget_s = 0.5\napprove = "read-only"\n')
    env = {**os.environ, "SYSTEM1_CONFIG": str(config), "SYSTEM1_STATE_DIR": str(scratch / "state"),
           "SYSTEM1_SERVE_AUTOSTART": "0"}
    os.environ.update({k: env[k] for k in ("SYSTEM1_CONFIG", "SYSTEM1_STATE_DIR")})
    from system1_gateway.shell import readonly

    server = Server(scratch / "data", env, None)
    commands = ANSWERED + LEFT
    times: dict[str, list[float]] = {"floor": [], "approve": [], "approve answered": [], "approve left": [], "guard": [],
                                     "judge": []}
    try:
        for i in range(args.calls + 6):
            command = commands[i % len(commands)]
            base = {"tool_name": "Bash", "cwd": str(scratch), "tool_input": {"command": command},
                    "permission_mode": "default", "session_id": "bench"}
            permission = json.dumps({**base, "hook_event_name": "PermissionRequest", "permission_suggestions": []}).encode()
            pre = json.dumps({**base, "hook_event_name": "PreToolUse"}).encode()
            floor, _ = once(["sh", "-c", "cat >/dev/null"], env, permission)
            took, out = once(["sh", str(ROOT / "hooks" / "approve.sh")], server.env, permission)
            if (b'"allow"' in out) != (command in ANSWERED):
                raise SystemExit(f"approve: unexpected answer to {command!r}: {out!r}")
            guard, _ = once(["sh", str(ROOT / "hooks" / "guard.sh")], server.env, pre)
            t0 = time.perf_counter()
            readonly.judge(command)
            judged = (time.perf_counter() - t0) * 1000
            if i >= 6:
                times["floor"].append(floor)
                times["approve"].append(took)
                times["approve answered" if command in ANSWERED else "approve left"].append(took)
                times["guard"].append(guard)
                times["judge"].append(judged)
        floor_p50 = statistics.median(times["floor"])
        print(f"{'arm':<17} {'p50 ms':>8} {'p95 ms':>8} {'p50 - floor':>12}   ({args.calls} calls, interleaved)")
        for arm, values in times.items():
            p50 = statistics.median(values)
            extra = f"{p50 - floor_p50:+12.2f}" if arm != "judge" else f"{'(in process)':>12}"
            print(f"{arm:<17} {p50:8.2f} {pct(values, 0.95):8.2f} {extra}")
    finally:
        server.stop()
        shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
