"""Import time of the gateway's modules and the SDKs under them, each in a fresh interpreter.

    python benchmarks/imports.py [--runs 10]

A hook or a CLI call starts one process per prompt, and the MCP server's spawn time is mostly
imports, so these are cold imports: every run is a new `python -I` process timing one
`import` statement (the interpreter's own start is not included). Prints median and p95 side
by side, with min and max, per module.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys

from bench_stats import pct

MODULES = [
    "pydantic",
    "system1_gateway.core.gateway",  # what `system1 decide` needs before any engine
    "system1_gateway.cli",
    "httpx",
    "mcp.server.lowlevel",  # the MCP SDK's server, alone
    "system1_gateway.mcp_server",  # our whole MCP face, SDK included
]

CHILD = "import time; t = time.perf_counter(); import {module}; print(time.perf_counter() - t)"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=10)
    args = ap.parse_args()
    print(f"{'module':<30} {'median ms':>10} {'p95 ms':>8} {'min':>8} {'max':>8}  (fresh `python -I` per run, n={args.runs})")
    for module in MODULES:
        times = []
        for _ in range(args.runs):
            out = subprocess.run([sys.executable, "-I", "-c", CHILD.format(module=module)],
                                 capture_output=True, text=True, check=True)
            times.append(float(out.stdout.strip().splitlines()[-1]) * 1000)
        print(f"{module:<30} {statistics.median(times):>10.1f} {pct(times, .95):>8.1f} {min(times):>8.1f} {max(times):>8.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
