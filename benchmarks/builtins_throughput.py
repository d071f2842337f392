"""Built-in questions through a one-shot `system1 judge --jsonl`, process start included.

    python benchmarks/builtins_throughput.py [--repeat 3]

A process that asks only built-in questions (answered by their learned heads) should never
load the accurate tier (a 1 GB model): it loads when a question without a head first needs it.
Runs, side by side, in-process (no daemon: SYSTEM1_SERVE_AUTOSTART=0, a fresh state dir):
  * the 230 labelled built-in items of data/heads/dev/dev_builtins.jsonl, one request each;
  * the same items plus one last request with a question no head answers (the accurate tier
    loads for it, when the `local` extra is installed).
Prints wall time (median of --repeat runs), items per second, and accuracy of the answers.
Target: >= 200 items/s for the built-ins alone.
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

ROOT = Path(__file__).resolve().parents[1]
DEV = ROOT / "data" / "heads" / "dev" / "dev_builtins.jsonl"
OTHER = {"state": "The invoice total is wrong after the discount.",
         "questions": {"q": {"type": "choice", "instructions": "Which team should handle this?",
                             "criteria": ["billing", "engineering", "sales"]}}}


def run(lines: list[str], env: dict[str, str]) -> tuple[float, list[dict]]:
    t0 = time.perf_counter()
    proc = subprocess.run([str(Path(sys.executable).parent / "system1"), "judge", "--jsonl"], input="".join(lines),
                          capture_output=True, text=True, env=env, timeout=900)
    elapsed = time.perf_counter() - t0
    if proc.returncode not in (0, 1):
        raise SystemExit(f"judge --jsonl exited {proc.returncode}: {proc.stderr[-2000:]}")
    return elapsed, [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    items = [json.loads(line) for line in DEV.read_text().splitlines() if line.strip()]
    lines = [json.dumps({"state": it["state"], "questions": {"q": {"builtin": it["task"]}}}) + "\n" for it in items]
    cases = {"built-ins only": lines, "built-ins + 1 question without a head": lines + [json.dumps(OTHER) + "\n"]}
    print(f"{len(items)} built-in items, one-shot `system1 judge --jsonl` in-process, start included")
    print(f"{'case':40} {'wall s (median)':>16} {'items/s':>9} {'accuracy':>9}  models")
    for name, case in cases.items():
        times = []
        for _ in range(args.repeat):
            with tempfile.TemporaryDirectory() as state:
                env = {k: v for k, v in os.environ.items() if not k.startswith("SYSTEM1_")}
                env.update(SYSTEM1_STATE_DIR=state, SYSTEM1_SERVE_AUTOSTART="0", XDG_CONFIG_HOME=state)
                elapsed, results = run(case, env)
                times.append(elapsed)
        right = sum(1 for it, r in zip(items, results, strict=False) if r.get("answers", {}).get("q", {}).get("p_true") is not None
                    and (r["answers"]["q"]["p_true"] >= 0.5) == bool(it["expected"]))
        models = sorted({r.get("model") or "-" for r in results})
        wall = statistics.median(times)
        print(f"{name:40} {wall:16.2f} {len(case) / wall:9.1f} {right / len(items):9.3f}  {', '.join(models)[:80]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
