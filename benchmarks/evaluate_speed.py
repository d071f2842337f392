"""`system1 evaluate` on a large routing log: wall time and peak memory (target:
5 000 entries in ≤ 30 s with the heads, constant memory).

    python benchmarks/evaluate_speed.py [--entries 5000]

Builds a synthetic log in a temporary state dir (4 in 5 entries prompts with their four
features labelled, 1 in 5 spawns with an outcome), then runs `system1 evaluate` in a
fresh process, twice per log: in a fresh state dir (the embedded engine first prepares
the four questions, as on a new machine) and again (prepared, as on a machine where the
daemon has run) on the default engine (embedded: the heads answer the four
features) and prints seconds, entries/s and the child's peak RSS (VmHWM). A second log ten
times smaller shows that memory does not grow with the log.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
from pathlib import Path

VERBS = ["Explain", "Refactor", "Add tests for", "Review", "Design", "Fix the bug in", "Document", "Rename",
         "Find where we call", "Speed up", "Split", "Migrate"]
THINGS = ["the retry logic in src/net/client.py", "the payment webhook handler", "our CI workflow",
          "the user settings page", "the SQL migration for orders", "the caching layer", "the CLI parser",
          "the auth middleware", "the README quick start", "the flaky integration test", "the event bus",
          "the billing export job"]
TAILS = ["so it stops timing out", "and keep the public API", "before the release on Friday",
         "— what are the trade-offs?", "without touching the database schema", "and tell me what you find",
         "using the existing helpers", ""]

CHILD = """
import argparse, json, sys, time
from system1_gateway.learn import commands, evaluate
p = argparse.ArgumentParser(); commands.evaluate_arguments(p)
args = p.parse_args(sys.argv[1:])
t = time.perf_counter()
report = evaluate.evaluate(args)
seconds = time.perf_counter() - t
hwm = next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmHWM"))
print(json.dumps({"seconds": seconds, "entries": report["entries"], "rss_mb": hwm / 1024,
                  "verdict": report["verdict"]}))
"""


def make_log(state: Path, entries: int, seed: int = 0) -> None:
    rng = random.Random(seed)
    logs = state / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    with open(logs / "routing.jsonl", "w") as log, open(logs / "labels.jsonl", "w") as labels:
        for i in range(entries):
            text = f"{rng.choice(VERBS)} {rng.choice(THINGS)} {rng.choice(TAILS)} (ticket {i})"
            if i % 5:
                log.write(json.dumps({"source": "prompt", "prompt_id": f"p{i}", "prompt": text}) + "\n")
                for name in ("read_only", "design", "review", "specified"):
                    labels.write(json.dumps({"key": f"prompt:p{i}:{name}", "label": rng.choice(["true", "false"])})
                                 + "\n")
            else:
                log.write(json.dumps({"source": "agent", "tool_use_id": f"t{i}", "prompt": text,
                                      "outcome": rng.choice(["failed", "succeeded"]),
                                      "outcome_tier": rng.choice(["haiku", "sonnet", "opus"])}) + "\n")


def run(state: Path) -> dict:
    env = {**os.environ, "SYSTEM1_STATE_DIR": str(state), "XDG_CONFIG_HOME": str(state / "xdg")}
    env.pop("SYSTEM1_CONFIG", None)
    out = subprocess.run([sys.executable, "-c", CHILD], env=env,
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--entries", type=int, default=5000)
    args = ap.parse_args()
    print(f"{'entries':>8} {'state dir':<34} {'seconds':>8} {'entries/s':>10} {'peak RSS MB':>12}")
    with tempfile.TemporaryDirectory() as tmp:
        for entries in (args.entries // 10, args.entries):
            state = Path(tmp) / f"state{entries}"
            make_log(state, entries)
            for when in ("fresh (engine prepares 4 questions)", "prepared (as after the daemon ran)"):
                r = run(state)
                print(f"{r['entries']:>8} {when:<34} {r['seconds']:>8.1f} {r['entries'] / r['seconds']:>10.0f} "
                      f"{r['rss_mb']:>12.0f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
