"""Accuracy and latency of the embedded engine on the labelled dev set, through the gateway.

    python benchmarks/embedded_dev.py [--tier auto|llm|fast] [--order shuffled|grouped] [--limit N]

Zero-shot: nothing is fitted on the labels. The label-free running prior starts empty and
learns from the stream as a user's engine would. Prints per-task accuracy, macro accuracy,
latency per decision (median, p95), load time and peak RSS.
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from system1_gateway.config import Config, GatewaySettings
from system1_gateway.core import Gateway
from system1_gateway.providers.embedded import EmbeddedProvider
from system1_gateway.providers.embedded.prior import RunningPrior

DEV = Path(__file__).resolve().parents[2] / "shared" / "data" / "dev.jsonl"


def correct(answer: dict, expected) -> bool:
    if answer["type"] == "noul":
        return (answer["p_true"] >= 0.5) == bool(expected)
    if answer["type"] == "choice":
        return answer["choice"] == expected
    return answer["level"] == int(expected)


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--data", type=Path, default=DEV)
    ap.add_argument("--tier", default="auto", choices=["auto", "llm", "fast"])
    ap.add_argument("--order", default="shuffled", choices=["shuffled", "grouped"])
    ap.add_argument("--limit", type=int, default=0)
    ap.add_argument("--no-prior", action="store_true")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", type=Path, help="also write per-item results here")
    args = ap.parse_args()

    items = [json.loads(line) for line in args.data.read_text().splitlines() if line.strip()]
    if args.order == "shuffled":
        random.Random(args.seed).shuffle(items)
    if args.limit:
        items = items[: args.limit]

    provider = EmbeddedProvider("embedded", {"tier": args.tier, "prior": not args.no_prior})
    provider.prior = RunningPrior(path=Path(tempfile.mkdtemp()) / "priors.json")  # start empty
    # Generous budgets: this measures accuracy and steady-state latency, and the first
    # decision on each of the 9 questions decodes its prompt prefix (seconds on 2 cores).
    gateway = Gateway(Config(gateway=GatewaySettings(timeout_s=300, deadline_s=600)))
    gateway._rungs["embedded"] = provider
    t0 = time.perf_counter()
    provider.warm()
    load_s = time.perf_counter() - t0

    hits: dict[str, list[bool]] = defaultdict(list)
    latency: list[float] = []
    rows = []
    for item in items:
        t = time.perf_counter()
        result = gateway.judge({"state": item["state"], "questions": {"q": item["question"]}, "min_confidence": 0})
        latency.append((time.perf_counter() - t) * 1000)
        if result["status"] != "answered":
            print(f"{item['id']}: {result['error']}", file=sys.stderr)
            hits[item["task"]].append(False)
            continue
        answer = result["answers"]["q"]
        ok = correct(answer, item["expected"])
        hits[item["task"]].append(ok)
        rows.append({"id": item["id"], "task": item["task"], "ok": ok, "ms": latency[-1], "answer": answer})

    per_task = {task: sum(v) / len(v) for task, v in sorted(hits.items())}
    macro = statistics.mean(per_task.values())
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"tier={args.tier} order={args.order} prior={not args.no_prior} n={len(items)} threads={provider.threads}")
    print(f"{'task':<12} {'n':>4} {'accuracy':>9}")
    for task, acc in per_task.items():
        print(f"{task:<12} {len(hits[task]):>4} {acc:>9.3f}")
    print(f"{'macro':<12} {len(items):>4} {macro:>9.3f}")
    print(f"latency per decision: p50 {pct(latency, 0.5):.1f} ms, p95 {pct(latency, 0.95):.1f} ms, mean {statistics.mean(latency):.1f} ms")
    print(f"load + warm-up: {load_s:.2f} s; peak RSS: {rss_mb:.0f} MB")
    if args.json:
        args.json.write_text(json.dumps(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
