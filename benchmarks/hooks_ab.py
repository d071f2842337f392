"""Two installs of the gateway side by side on the Claude Code hooks, interleaved run by run so
that a busy machine slows both alike (what `hooks_latency.py` cannot do across two runs).

    python benchmarks/hooks_ab.py --a /old/venv/bin/python --b /new/venv/bin/python [--n 25]

For each daemon (A's, then B's) and each hook (route: four features; guard: `destructive`),
the hook process of A and of B run in turn against that daemon, `python -I -m
system1_gateway.hooks.<name>` with the hook input on stdin, as Claude Code runs them. Prints
p50 / p95 per pair and B − A at p50. A hook that cannot use the daemon (e.g. an older client
without the daemon's token) answers fast and empty: its "answered" column says so.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_stats import pct

PROMPT = "Refactor the parser module so that it handles nested quotes and add tests for the edge cases"
COMMAND = "git status && git log --oneline -5 && rm -rf build/"
CONFIG = ('[providers.embedded]\ntier = "fast"\n[routing]\nenabled = true\nhint = true\nmin_confidence = 0.0\n'
          '[skills]\nenabled = false\n[guard]\nenabled = true\nmin_confidence = 0.0\n')


def one_daemon(daemon_python: str, hooks: dict[str, str], n: int) -> list[tuple[str, str, list[float], int]]:
    """Start `daemon_python`'s daemon; run each hook of each install in turn, n times."""
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        (base / "config.toml").write_text(CONFIG)
        env = {**{k: v for k, v in os.environ.items() if not k.startswith("SYSTEM1_")},
               "SYSTEM1_CONFIG": str(base / "config.toml"), "SYSTEM1_STATE_DIR": str(base / "state"),
               "XDG_CONFIG_HOME": str(base / "xdg"), "SYSTEM1_SERVE_PORT": "0", "SYSTEM1_SERVE_AUTOSTART": "0"}
        cli = [daemon_python, "-m", "system1_gateway.cli", "daemon"]
        subprocess.run([*cli, "start"], env=env, check=True, capture_output=True, timeout=180)
        try:
            for _ in range(300):
                status = json.loads(subprocess.run([*cli, "status"], env=env, capture_output=True, text=True).stdout)
                if status.get("health") == "ok":
                    break
                time.sleep(0.2)
            inputs = {"route": {"prompt": PROMPT, "cwd": tmp},
                      "guard": {"tool_name": "Bash", "tool_input": {"command": COMMAND}, "cwd": tmp}}
            times = {(hook, label): [] for hook in inputs for label in hooks}
            answered = {key: 0 for key in times}
            for i in range(n + 3):  # the first three warm the heads' caches and the page cache
                for hook, payload in inputs.items():
                    for label, python in hooks.items():
                        t0 = time.perf_counter()
                        proc = subprocess.run([python, "-I", "-m", f"system1_gateway.hooks.{hook}"],
                                              input=json.dumps(payload), env=env, capture_output=True, text=True)
                        if i >= 3:
                            times[(hook, label)].append((time.perf_counter() - t0) * 1000)
                            answered[(hook, label)] += bool(proc.stdout.strip())
            return [(hook, label, values, answered[(hook, label)]) for (hook, label), values in times.items()]
        finally:
            subprocess.run([*cli, "stop"], env=env, capture_output=True, timeout=60)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--a", required=True, help="python of install A (e.g. the previous release's venv)")
    ap.add_argument("--b", default=sys.executable, help="python of install B (default: this one)")
    ap.add_argument("--n", type=int, default=25, help="runs per hook and install")
    args = ap.parse_args()
    hooks = {"A": args.a, "B": args.b}
    print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}; A = {args.a}; B = {args.b}")
    print(f"{'daemon':8s}{'hook':8s}{'client':8s}{'n':>4s}{'answered':>10s}{'p50 ms':>9s}{'p95 ms':>9s}")
    for daemon_label in ("A", "B"):
        rows = one_daemon(hooks[daemon_label], hooks, args.n)
        for hook, label, values, answered in rows:
            print(f"{daemon_label:8s}{hook:8s}{label:8s}{len(values):4d}{answered:10d}"
                  f"{statistics.median(values):9.1f}{pct(values, 0.95):9.1f}")
        for hook in ("route", "guard"):
            medians = {label: statistics.median(values) for h, label, values, _ in rows if h == hook}
            print(f"{daemon_label:8s}{hook:8s}B − A at p50: {medians['B'] - medians['A']:+.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
