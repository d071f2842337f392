"""`system1 decide` as a whole CLI process through a running daemon (mock chain), against a
bare interpreter start and the in-process CLI, measured interleaved in one run.

    python benchmarks/daemon_cli.py [--runs 20]

Target: p50 ≤ 60 ms, or ≤ 7× `python -c pass`. Each run is a new process; the
four commands take turns so a busy moment of the (shared) machine hits all of them. The
daemon runs in a fresh state dir with `[gateway] provider = "mock"`, started with
`system1 daemon start`; the in-process CLI uses a second state dir where no daemon runs.
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

VENV_BIN = Path(sys.executable).parent


def timed(cmd: list[str], env: dict[str, str]) -> float:
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    elapsed = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"{cmd} failed: {proc.stderr.decode()[-500:]}")
    return elapsed * 1000


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=20)
    args = ap.parse_args()
    root = Path(tempfile.mkdtemp(prefix="system1-bench-"))
    config = root / "config.toml"
    config.write_text('[gateway]\nprovider = "mock"\n')
    base = {k: v for k, v in os.environ.items() if not k.startswith("SYSTEM1_")}
    base.update(SYSTEM1_CONFIG=str(config), SYSTEM1_SERVE_AUTOSTART="0", SYSTEM1_SERVE_PORT="0")
    warm = {**base, "SYSTEM1_STATE_DIR": str(root / "with-daemon")}
    cold = {**base, "SYSTEM1_STATE_DIR": str(root / "no-daemon")}
    system1 = str(VENV_BIN / "system1")
    start = subprocess.run([system1, "daemon", "start"], env=warm, capture_output=True, text=True)
    if start.returncode != 0:
        raise SystemExit(f"daemon start failed: {start.stdout}{start.stderr}")
    commands = {
        "python -I -S -c pass": ([sys.executable, "-I", "-S", "-c", "pass"], base),
        "python -c pass": ([sys.executable, "-c", "pass"], base),
        "system1 decide (daemon)": ([system1, "decide", "Is `rm -rf build/` destructive?"], warm),
        "system1 decide (in-process)": ([system1, "decide", "Is `rm -rf build/` destructive?"], cold),
    }
    times: dict[str, list[float]] = {name: [] for name in commands}
    try:
        for cmd, env in commands.values():
            timed(cmd, env)  # one warm-up each (page cache, .pyc)
        for _ in range(args.runs):
            for name, (cmd, env) in commands.items():
                times[name].append(timed(cmd, env))
    finally:
        subprocess.run([system1, "daemon", "stop"], env=warm, capture_output=True)
    bare = statistics.median(times["python -c pass"])
    print(f"{'command':<30} {'median ms':>10} {'p95 ms':>8} {'× python -c pass':>17}  (n={args.runs}, interleaved)")
    for name, values in times.items():
        med = statistics.median(values)
        print(f"{name:<30} {med:>10.1f} {pct(values, 0.95):>8.1f} {med / bare:>17.2f}")
    med = statistics.median(times["system1 decide (daemon)"])
    ok = med <= 60 or med <= 7 * bare
    print(f"target p50 ≤ 60 ms or ≤ 7× python -c pass: {med:.1f} ms = {med / bare:.2f}× → {'met' if ok else 'NOT met'}")
    print(f"in-process / daemon: {statistics.median(times['system1 decide (in-process)']) / med:.2f}×")
    return 0


if __name__ == "__main__":
    sys.exit(main())
