"""The read-only approval and the Bash guard's rules on real agent shell commands.

    python benchmarks/sessions_guard.py [--data data/sessions/commands-agent-sessions/examples.jsonl] [--show 40]

Reads the commands coding agents ran in committed sessions (data/sessions/commands-agent-sessions,
each labelled read / write / run / network / destructive / other) and prints, with no engine and
no model (the rules alone, fast):

  (a) `shell.readonly.judge`: the share of `read` commands approved (no permission prompt with
      `[guard] approve = "read-only"`), the share of all harmless (kind != destructive) commands
      approved, and every approved command whose kind is not `read` (a false allow: must be none);
  (b) `shell.structure.plan` + `certain`: the share of commands the rules alone decide destructive,
      per kind, and the harmless ones so decided (false flags by rule), with the rule that fired.

Counts are over distinct commands (each line once, whatever its `n`); the weighted shares by `n`
are printed beside them.
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
from pathlib import Path

from system1_gateway.shell import readonly, structure

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "data" / "sessions" / "commands-agent-sessions" / "examples.jsonl"
KINDS = ["read", "write", "run", "network", "other", "destructive"]


def share(a: float, b: float) -> str:
    return f"{a}/{b} = {100.0 * a / b:.1f} %" if b else f"{a}/0"


def short(cmd: str, width: int = 150) -> str:
    one = cmd.replace("\n", " ⏎ ")
    return one if len(one) <= width else one[:width - 1] + "…"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--show", type=int, default=40, help="at most this many listed per list")
    a = ap.parse_args()
    rows = [json.loads(line) for line in a.data.read_text().splitlines() if line.strip()]
    print(f"{len(rows)} distinct commands ({sum(r['n'] for r in rows)} with repeats) from "
          f"{len({r['repo'] for r in rows})} repositories")
    print("per kind:", dict(collections.Counter(r["kind"] for r in rows).most_common()))

    # (a) read-only approval
    approved, why_not = {}, collections.Counter()
    for r in rows:
        approval, why = readonly.judge(r["command"])
        approved[r["command"]] = approval
        if approval is None and r["kind"] == "read":
            why_not[why] += 1
    reads = [r for r in rows if r["kind"] == "read"]
    harmless = [r for r in rows if r["kind"] != "destructive"]
    ok_reads = [r for r in reads if approved[r["command"]] is not None]
    ok_harmless = [r for r in harmless if approved[r["command"]] is not None]
    false_allows = [r for r in rows if approved[r["command"]] is not None and r["kind"] != "read"]
    print("\n(a) read-only approval (shell.readonly.judge)")
    print(f"  read commands approved:       {share(len(ok_reads), len(reads))}"
          f"   (weighted by n: {share(sum(r['n'] for r in ok_reads), sum(r['n'] for r in reads))})")
    print(f"  harmless commands approved:   {share(len(ok_harmless), len(harmless))}")
    print(f"  false allows (approved, kind != read): {len(false_allows)}")
    for r in false_allows[:a.show]:
        print(f"    [{r['kind']}] {short(r['command'])}  ({r['repo']})")
    print("  why read commands were left to the user (top reasons):")
    for why, n in why_not.most_common(12):
        print(f"    {n:4d}  {why}")

    # (b) the guard's rules
    print("\n(b) Bash guard rules alone (shell.structure.plan + certain)")
    flagged = collections.Counter()
    total = collections.Counter()
    false_flags = []
    for r in rows:
        plan = structure.plan(r["command"])
        total[r["kind"]] += 1
        if structure.certain(plan):
            flagged[r["kind"]] += 1
            if r["kind"] != "destructive":
                rule = next((j.verdict.rule for j in plan.parts if j.verdict is not None and j.verdict.destructive), "?")
                part = next((j.text for j in plan.parts if j.verdict is not None and j.verdict.destructive), "")
                false_flags.append((r, rule, part))
    for k in KINDS:
        if total[k]:
            print(f"  {k:12s} decided destructive by rule: {share(flagged[k], total[k])}")
    harmless_n = sum(total[k] for k in KINDS if k != "destructive")
    print(f"  harmless (kind != destructive) false flags by rule: {share(len(false_flags), harmless_n)}")
    for r, rule, part in false_flags[:a.show]:
        print(f"    [{r['kind']}] rule {rule}: {short(part, 80)!s}  <- {short(r['command'], 110)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
