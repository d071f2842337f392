"""Speed and memory of `system1 report` over a large transcript tree (target: 1 GB
in ≤ 60 s, constant memory).

    python benchmarks/report_speed.py [--gb 1.0] [--keep DIR]

The transcripts are outcomes_speed.py's synthetic tree (Claude Code 2.1.332 record shapes,
long-tailed tool results, three spawns per session, each with its own subagent file). The
whole command runs (`report --json --html`) in a fresh interpreter; it prints files, GB,
seconds, MB/s and that process's peak RSS (VmHWM, interpreter included).
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from outcomes_speed import synthesize

CHILD = r"""
import argparse, io, json, sys, time
from contextlib import redirect_stdout
from system1_gateway.learn import commands
from system1_gateway.insight import report_view
p = argparse.ArgumentParser(); commands.report_arguments(p)
args = p.parse_args(sys.argv[1:])
buf = io.StringIO()
t0 = time.perf_counter()
with redirect_stdout(buf):
    code = report_view.run(args)
seconds = time.perf_counter() - t0
report = json.loads(buf.getvalue())
hwm = next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmHWM:")) / 1024
print(json.dumps({"code": code, "seconds": seconds, "rss_mb": hwm, "files": report["scan"]["files"],
                  "bytes": report["scan"]["bytes"], "spawns": report["spawns"], "prompts": report["prompts"]}))
"""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--gb", type=float, default=1.0)
    ap.add_argument("--keep", metavar="DIR", help="generate into DIR and keep it (re-used when it exists)")
    args = ap.parse_args()
    base = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="s1-report-bench-"))
    try:
        root = base / "projects"
        if not root.exists():
            t0 = time.perf_counter()
            sessions, total = synthesize(root, int(args.gb * 1e9))
            print(f"synthesized {sessions} sessions, {total / 1e9:.2f} GB in {time.perf_counter() - t0:.0f} s",
                  flush=True)
        html = base / "report.html"
        proc = subprocess.run([sys.executable, "-c", CHILD, "--projects", str(root), "--since", "3650d", "--json",
                               "--html", str(html)], capture_output=True, text=True)
        if proc.returncode != 0:
            print(proc.stdout, proc.stderr, file=sys.stderr)
            return 1
        r = json.loads(proc.stdout.strip().splitlines()[-1])
        print(f"report: {r['files']} files, {r['bytes'] / 1e9:.2f} GB, {r['seconds']:.1f} s, "
              f"{r['bytes'] / 1e6 / r['seconds']:.0f} MB/s, peak RSS {r['rss_mb']:.0f} MB; "
              f"{r['prompts']} prompts, {r['spawns']} spawns; page {html.stat().st_size / 1e3:.0f} KB")
        return 0
    finally:
        if not args.keep:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
