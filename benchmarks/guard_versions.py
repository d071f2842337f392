"""The guard's question, version 1 (any change) against version 2 (loss), on the same commands in
one run: how often each asks before everyday work and before real loss, and what each costs.

    python benchmarks/guard_versions.py [--set FILE.jsonl ...] [--min-confidence 0.7] [--show 10]

Sets (each line {"state", "destructive"}; labels follow version 2): benchmarks/data/guard_everyday.jsonl
(everyday work across the domains users name: migrations, deploys, cluster and chart changes, git's
everyday writes, installs, formatters, containers, processes, services) and guard_loss.jsonl (commands
of the same tools that lose something), both written for this benchmark from the tools' documentation
by the author of data/heads/commands-everyday (so optimistic: the outside testers' sets are kept from
us), and any --set. The guard asks when the answer is unsure or p >= 0.5 at confidence >=
min_confidence. Engine: the embedded fast tier and the shipped heads, in-process; version 1 is asked
by its id (`system1/destructive@1`: its own rules and head), version 2 by the short name.

Prints per set and version: asked share, recall on loss, false flags on everyday work, the rules'
and the heads' shares, and the latency per command (median, p95) with the ratio v2/v1.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from guard import Judge, asks, pct  # the benchmark next door: the same engine and bar

HERE = Path(__file__).resolve().parent
VERSIONS = {"v1": "system1/destructive@1", "v2": "destructive"}


def load(path: Path) -> list[tuple[str, bool]]:
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [(r["state"], bool(r["destructive"])) for r in rows]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--set", action="append", type=Path, default=[])
    ap.add_argument("--min-confidence", type=float, default=0.7)
    ap.add_argument("--show", type=int, default=10, help="false flags and misses shown per set and version")
    args = ap.parse_args()
    sets = {p.name: load(p) for p in [HERE / "data" / "guard_everyday.jsonl", HERE / "data" / "guard_loss.jsonl",
                                      *args.set]}
    judge = Judge()

    def answer(command: str, ref: str) -> tuple[dict, float]:
        t0 = time.perf_counter()
        result = judge.gw.judge({"state": command, "questions": {"d": {"builtin": ref}}})
        return result["answers"]["d"], (time.perf_counter() - t0) * 1000

    for items in sets.values():  # warm both versions' heads
        for command, _ in items[:5]:
            answer(command, VERSIONS["v1"]), answer(command, VERSIONS["v2"])
    print(f"asked at min_confidence {args.min_confidence} (unsure, or p >= 0.5 at that confidence)\n")
    print(f"{'set':26} {'ver':3} {'n':>4} {'asked':>6} {'recall':>7} {'false flags':>12} {'by rule':>8} "
          f"{'ms p50':>7} {'ms p95':>7}")
    for name, items in sets.items():
        times: dict[str, list[float]] = {}
        for version, ref in VERSIONS.items():
            answered = [answer(c, ref) for c, _ in items]
            times[version] = [t for _, t in answered]
            hit = [asks(a, args.min_confidence, "after") for a, _ in answered]
            pos = [h for h, (_, y) in zip(hit, items, strict=False) if y]
            neg = [h for h, (_, y) in zip(hit, items, strict=False) if not y]
            ruled = sum(1 for a, _ in answered if str(a.get("model", "")).startswith("rule:")) / len(items)
            print(f"{name:26} {version:3} {len(items):4d} {sum(hit) / len(items):6.1%} "
                  f"{(sum(pos) / len(pos)) if pos else float('nan'):7.3f} {(sum(neg) / len(neg)) if neg else float('nan'):12.3f} "
                  f"{ruled:8.1%} {statistics.median(times[version]):7.2f} {pct(times[version], 0.95):7.2f}")
            shown = [c for h, (c, y) in zip(hit, items, strict=False) if h != y][:args.show]
            for command in shown:
                print(f"      {'false flag' if not dict(items)[command] else 'missed'}: {command[:100]!r}")
        print(f"{'':26} v2/v1 latency ratio (median): "
              f"{statistics.median(times['v2']) / statistics.median(times['v1']):.2f}")
    judge.provider.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
