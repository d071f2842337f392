"""A warm embedded decision through the daemon vs the same decision inside the daemon's gateway.

    python benchmarks/daemon_overhead.py [--runs 30] [--provider embedded|mock]

Starts a daemon (`system1 daemon start`, fresh state dir, default config: the embedded
accurate tier), warms the question, then for each run posts one decide through the stdlib
client (client.Daemon.post, what the CLI and the MCP server use) and compares the client's
wall time with the `latency_ms` the daemon's gateway measured for the same request: the
difference is everything the daemon adds (HTTP, JSON, the server, the hand-off to a worker).
Target: overhead ≤ 2 ms p50.
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


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--provider", default="embedded")
    args = ap.parse_args()
    root = Path(tempfile.mkdtemp(prefix="system1-overhead-"))
    (root / "config.toml").write_text(f'[gateway]\nprovider = "{args.provider}"\ndeadline_s = 120\ntimeout_s = 120\n')
    for key in [k for k in os.environ if k.startswith("SYSTEM1_")]:
        del os.environ[key]
    os.environ.update(SYSTEM1_CONFIG=str(root / "config.toml"), SYSTEM1_STATE_DIR=str(root / "state"),
                      SYSTEM1_SERVE_AUTOSTART="0", SYSTEM1_SERVE_PORT="0")
    system1 = str(Path(sys.executable).parent / "system1")
    start = subprocess.run([system1, "daemon", "start"], capture_output=True, text=True)
    if start.returncode != 0:
        raise SystemExit(f"daemon start failed: {start.stdout}{start.stderr}")
    from system1_gateway.daemon import client

    payload = {"question": "Is `git push --force origin main` destructive?"}
    try:
        daemon = client.wait_ready(300)[0]
        if daemon is None:
            raise SystemExit("the daemon never became ready")
        for _ in range(3):  # the question's first use and the warm-up
            daemon.post("/v1/decide", payload, 120)
        wall, inside = [], []
        for _ in range(args.runs):
            t0 = time.perf_counter()
            result = daemon.post("/v1/decide", payload, 120)
            wall.append((time.perf_counter() - t0) * 1000)
            inside.append(result["latency_ms"])
            assert result["status"] in ("decided", "abstained"), result
    finally:
        subprocess.run([system1, "daemon", "stop"], capture_output=True)
    over = [w - i for w, i in zip(wall, inside, strict=False)]
    print(f"{'decide, ' + args.provider:<34} {'median ms':>10} {'p95 ms':>8}  (n={args.runs}, model {result['model']})")
    print(f"{'in the daemon gateway (latency_ms)':<34} {statistics.median(inside):>10.2f} {pct(inside, 0.95):>8.2f}")
    print(f"{'through the daemon (client wall)':<34} {statistics.median(wall):>10.2f} {pct(wall, 0.95):>8.2f}")
    print(f"{'overhead (wall - latency_ms)':<34} {statistics.median(over):>10.2f} {pct(over, 0.95):>8.2f}")
    print(f"ratio through / inside: {statistics.median(wall) / statistics.median(inside):.3f}; "
          f"target overhead ≤ 2 ms p50 → {'met' if statistics.median(over) <= 2 else 'NOT met'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
