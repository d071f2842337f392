"""Accuracy and latency of the embedded engine on the labelled dev set, through the gateway.

    python benchmarks/embedded_dev.py [--tier auto|llm|fast] [--order shuffled|grouped] [--limit N] [--json rows.json]
    python benchmarks/embedded_dev.py --summary rows.json   # the figures of a saved run again

Zero-shot: nothing is fitted on the labels. The label-free correction (`prior`, content-free
contextual calibration) is computed once per question, from the question alone. Prints
per-task accuracy, macro accuracy, ECE, latency per decision (median, p95), load time and
peak RSS. The dev set is the set the prompts and constants were developed on: these are
in-sample figures.
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path

from bench_stats import pct
from system1_gateway.config.settings import Config, GatewaySettings
from system1_gateway.core.gateway import Gateway
from system1_gateway.providers.embedded import EmbeddedProvider

DEV = Path(__file__).resolve().parents[2] / "shared" / "data" / "dev.jsonl"


def correct(answer: dict, expected) -> bool:
    if answer["type"] == "noul":
        return (answer["p_true"] >= 0.5) == bool(expected)
    if answer["type"] == "choice":
        return answer["choice"] == expected
    return answer["level"] == int(expected)


def confidence(answer: dict) -> float:
    """The top-label probability of an answer."""
    if answer["type"] == "noul":
        return max(answer["p_true"], 1 - answer["p_true"])
    return max(answer["probabilities"].values())


def ece(pairs: list[tuple[float, bool]], bins: int = 10) -> float:
    """Expected calibration error of (top-label confidence, correct) pairs, equal-width bins."""
    groups: list[list[tuple[float, bool]]] = [[] for _ in range(bins)]
    for conf, ok in pairs:
        groups[min(bins - 1, int(conf * bins))].append((conf, ok))
    return sum(abs(sum(c for c, _ in g) - sum(o for _, o in g)) for g in groups) / max(1, len(pairs))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--data", type=Path, default=DEV)
    ap.add_argument("--tier", default="auto", choices=["auto", "llm", "fast"])
    ap.add_argument("--order", default="shuffled", choices=["shuffled", "grouped"])
    ap.add_argument("--limit", type=int, default=0)
    ap.add_argument("--no-prior", action="store_true")
    ap.add_argument("--heads", action="store_true",
                    help="let learned heads answer (off by default: the shipped heads were trained on dev)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", type=Path, help="also write per-item results here")
    ap.add_argument("--summary", type=Path, help="print the figures of a run saved with --json, without running")
    args = ap.parse_args()
    if args.summary:
        summarize(json.loads(args.summary.read_text()))
        return 0

    items = [json.loads(line) for line in args.data.read_text().splitlines() if line.strip()]
    if args.order == "shuffled":
        random.Random(args.seed).shuffle(items)
    if args.limit:
        items = items[: args.limit]

    provider = EmbeddedProvider("embedded", {"tier": args.tier, "prior": not args.no_prior, "heads": args.heads})
    # Generous budgets: this measures accuracy and steady-state latency, and the first
    # decision on each of the 9 questions decodes its prompt prefix (seconds on 2 cores) and
    # its reference (unless the state dir has both from an earlier run).
    gateway = Gateway(Config(gateway=GatewaySettings(timeout_s=300, deadline_s=600)), providers={"embedded": provider})
    t0 = time.perf_counter()
    provider.warm()
    load_s = time.perf_counter() - t0

    rows = []
    for item in items:
        t = time.perf_counter()
        result = gateway.judge({"state": item["state"], "questions": {"q": item["question"]}, "min_confidence": 0})
        ms = (time.perf_counter() - t) * 1000
        # A new question's prefix and reference are prepared in the background while the
        # engine is idle; a back-to-back loop leaves it no idle time, so it waits here,
        # outside the timing (answers are then the steady state's from the next item on).
        if hasattr(provider, "wait_prepared"):
            provider.wait_prepared(600)
        if result["status"] != "answered":
            print(f"{item['id']}: {result['error']}", file=sys.stderr)
            rows.append({"id": item["id"], "task": item["task"], "ok": False, "conf": None, "ms": ms, "answer": None})
            continue
        answer = result["answers"]["q"]
        ok = correct(answer, item["expected"])
        rows.append({"id": item["id"], "task": item["task"], "ok": ok, "conf": confidence(answer), "ms": ms, "answer": answer})

    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"tier={args.tier} order={args.order} prior={not args.no_prior} heads={args.heads} n={len(items)} threads={provider.threads}")
    summarize(rows)
    print(f"load + warm-up: {load_s:.2f} s; peak RSS: {rss_mb:.0f} MB")
    if args.json:
        args.json.write_text(json.dumps(rows))
    return 0


def summarize(rows: list[dict]) -> None:
    hits: dict[str, list[bool]] = defaultdict(list)
    for r in rows:
        hits[r["task"]].append(r["ok"])
    per_task = {task: sum(v) / len(v) for task, v in sorted(hits.items())}
    latency = [r["ms"] for r in rows]
    slowest: dict[str, float] = defaultdict(float)
    for r in rows:  # with a cold state dir, a question's slowest decision paid its prefix and reference
        slowest[r["task"]] = max(slowest[r["task"]], r["ms"])
    print("in-sample: dev is the set the prompts and constants were developed on")
    print(f"{'task':<12} {'n':>4} {'accuracy':>9}")
    for task, acc in per_task.items():
        print(f"{task:<12} {len(hits[task]):>4} {acc:>9.3f}")
    print(f"{'macro':<12} {len(rows):>4} {statistics.mean(per_task.values()):>9.3f}")
    print(f"ECE (10 bins, top label, pooled): {ece([(r['conf'], r['ok']) for r in rows if r['conf'] is not None]):.3f}")
    print(f"latency per decision: p50 {pct(latency, 0.5):.1f} ms, p95 {pct(latency, 0.95):.1f} ms, mean {statistics.mean(latency):.1f} ms")
    cold = sorted(slowest.values())
    print(f"slowest decision per question (with a cold state dir: its prompt prefix and reference): "
          f"median {statistics.median(cold) / 1000:.1f} s, max {cold[-1] / 1000:.1f} s")


if __name__ == "__main__":
    sys.exit(main())
