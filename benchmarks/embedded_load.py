"""Cold load of the embedded engine in a fresh process: each step timed, RSS after each.

    python benchmarks/embedded_load.py [--runs 3]

Runs every measurement in a new interpreter (a cold start is what a user pays per process).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys

CHILD = r"""
import json, resource, time
t0 = time.perf_counter()
from system1_gateway.providers.embedded import EmbeddedProvider, assets
steps = {}
def mark(name, since):
    steps[name] = round((time.perf_counter() - since) * 1000, 1)
    steps[name + "_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    return time.perf_counter()
t = mark("import", t0)
provider = EmbeddedProvider("embedded", {})
assets.gguf_path()
t = mark("gguf_verified", t)
provider._llm_engine()
t = mark("llm_load_and_warm", t)
provider._fast_engine()
t = mark("fast_load_and_warm", t)
steps["total"] = round((time.perf_counter() - t0) * 1000, 1)
print(json.dumps(steps))
"""


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    runs = []
    for _ in range(args.runs):
        out = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, check=True)
        runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
    keys = [k for k in runs[0] if not k.endswith("_rss_mb")]
    print(f"{'step':<22} {'median ms':>10} {'min':>8} {'max':>8} {'RSS after (MB)':>15}")
    for key in keys:
        values = [r[key] for r in runs]
        rss = runs[-1].get(key + "_rss_mb", "")
        print(f"{key:<22} {statistics.median(values):>10.1f} {min(values):>8.1f} {max(values):>8.1f} {rss!s:>15}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
