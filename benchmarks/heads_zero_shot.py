"""The zero-shot engine's answers to the dev items of the built-in questions.

    python benchmarks/heads_zero_shot.py [--out data/heads/dev/zero_shot.json]

Heads off, tier `auto` (the default: llm and fast tier blended, fast alone when it is sure):
what a built-in question cost and scored before heads, and what an unsure head escalates to
and blends with. `scripts/train_builtin_heads.py` reads the file to choose each head's
escalation bar, and `benchmarks/heads_study.py` to compare. Prints accuracy, ECE and
latency per question.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

from system1_gateway.config.settings import Config, GatewaySettings
from system1_gateway.core.gateway import Gateway
from system1_gateway.learn import metrics
from system1_gateway.providers.embedded import LLM_MODEL, EmbeddedProvider
from system1_gateway.providers.embedded.assets import GGUF_SHA256

ROOT = Path(__file__).resolve().parents[1]
DEV = ROOT / "data" / "heads" / "dev" / "dev_builtins.jsonl"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", type=Path, default=DEV.parent / "zero_shot.json")
    args = ap.parse_args()
    items = [json.loads(line) for line in DEV.read_text().splitlines() if line.strip()]
    provider = EmbeddedProvider("embedded", {"tier": "auto", "heads": False})
    gateway = Gateway(Config(gateway=GatewaySettings(timeout_s=300, deadline_s=600)), providers={"embedded": provider})
    provider.warm()
    out: dict[str, list[float]] = {}
    latency: dict[str, list[float]] = {}
    for item in items:
        t = time.perf_counter()
        result = gateway.judge({"state": item["state"], "questions": {"q": item["question"]}, "min_confidence": 0})
        ms = (time.perf_counter() - t) * 1000
        provider.wait_prepared(600)  # a new question's prefix, outside the timing
        p = result["answers"]["q"]["p_true"]
        out[item["id"]] = [p, 1 - p]
        latency.setdefault(item["task"], []).append(ms)
    print(f"{'question':<12} {'n':>4} {'accuracy':>9} {'ECE':>6} {'p50 ms':>8} {'p95 ms':>8}")
    for task, lat in latency.items():
        rows = [i for i in items if i["task"] == task]
        probs = np.array([out[i["id"]] for i in rows])
        y = np.array([0 if i["expected"] else 1 for i in rows])
        s = metrics.summary(probs, y)
        lat = sorted(lat)
        print(f"{task:<12} {len(rows):>4} {s['accuracy']:>9.3f} {s['ece']:>6.3f} {statistics.median(lat):>8.0f} "
              f"{lat[int(0.95 * (len(lat) - 1))]:>8.0f}")
    args.out.write_text(json.dumps({"model": LLM_MODEL, "gguf_sha256": GGUF_SHA256, "tier": "auto", "heads": False,
                                    "latency_ms": {t: [round(v, 1) for v in lat] for t, lat in latency.items()},
                                    "items": {k: [round(v, 6) for v in p] for k, p in out.items()}}, indent=0) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
