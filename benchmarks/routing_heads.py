"""The four routing features of one prompt in one request: the heads before 0.3.0 (first 256
tokens, our own data) against today's (real prompts, the mixed reading), side by side.

    python benchmarks/routing_heads.py [--old-ref 4c88ad3] [--repeat 3]

A warm in-process gateway (fast tier and heads loaded, no accurate tier: the routing heads never
escalate), one request per prompt with the four built-in routing questions, as the route hook
asks them. Prompts: the real held-out prompts (scripts/routing_study.py's split) and, for the
short end, the project's dev routing items. The old heads are read from git at `--old-ref`.
Prints median, p95 and the new/old ratio per prompt set, and accuracy on the real held-out set.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

import train_builtin_heads as tbh
from bench_stats import pct
from system1_gateway.config.settings import Config, GatewaySettings
from system1_gateway.core.gateway import Gateway
from system1_gateway.providers.embedded import EmbeddedProvider
from system1_gateway.providers.embedded.heads import SHIPPED_DIR, HeadStore

ROUTING = ("read_only", "design", "review", "specified")


def old_heads(ref: str, into: Path) -> Path:
    for name in ROUTING:
        rel = f"src/system1_gateway/providers/embedded/heads_shipped/{name}.npz"
        data = subprocess.run(["git", "-C", str(ROOT), "show", f"{ref}:{rel}"], capture_output=True, check=True).stdout
        (into / f"{name}.npz").write_bytes(data)
    return into


def gateway(shipped: Path) -> Gateway:
    provider = EmbeddedProvider("embedded", {"tier": "fast"})
    provider._heads = HeadStore(None, shipped_dir=shipped)
    provider.warm()
    return Gateway(Config(gateway=GatewaySettings(timeout_s=60, deadline_s=120)), providers={"embedded": provider})


def ask(gw: Gateway, text: str) -> tuple[float, dict]:
    t = time.perf_counter()
    result = gw.judge({"state": text, "questions": {n: {"builtin": n} for n in ROUTING}, "min_confidence": 0})
    elapsed = (time.perf_counter() - t) * 1000
    assert result["status"] == "answered" and all(m.startswith("head:") for m in [result["model"]]), result
    return elapsed, result["answers"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--old-ref", default="4c88ad3", help="the commit whose shipped routing heads are 'old'")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    real: dict[str, dict] = {}
    for task in ROUTING:
        for row in tbh.real_test(task):
            real.setdefault(row["state"], {})[task] = row["expected"]
    dev = sorted({json.loads(line)["state"] for line in (tbh.DATA / "dev" / "dev_builtins.jsonl").read_text().splitlines()
                  if line.strip() and json.loads(line)["task"] in ROUTING})
    sets = {"real held-out": list(real), "dev routing": dev}
    with tempfile.TemporaryDirectory() as tmp:
        engines = {"old": gateway(old_heads(args.old_ref, Path(tmp))), "new": gateway(SHIPPED_DIR)}
        print(f"{'prompts':<15} {'n':>4} {'chars p50':>9} | {'old p50':>8} {'old p95':>8} | {'new p50':>8} {'new p95':>8} "
              f"| {'ratio p50':>9} {'ratio p95':>9}")
        for name, texts in sets.items():
            lat: dict[str, list[float]] = {"old": [], "new": []}
            answers: dict[str, list[dict]] = {"old": [], "new": []}
            for text in texts:  # interleaved, so both see the same machine
                for _ in range(args.repeat):
                    for which, gw in engines.items():
                        ms, got = ask(gw, text)
                        lat[which].append(ms)
                for which, gw in engines.items():
                    answers[which].append(ask(gw, text)[1])
            p50 = {w: statistics.median(v) for w, v in lat.items()}
            p95 = {w: pct(v, 0.95) for w, v in lat.items()}
            chars = statistics.median(len(t) for t in texts)
            print(f"{name:<15} {len(texts):>4} {chars:>9.0f} | {p50['old']:>8.2f} {p95['old']:>8.2f} | {p50['new']:>8.2f} "
                  f"{p95['new']:>8.2f} | {p50['new'] / p50['old']:>9.2f} {p95['new'] / p95['old']:>9.2f}")
            if name == "real held-out":
                for which in ("old", "new"):
                    accs = []
                    for task in ROUTING:
                        pairs = [(a[task], real[t][task]) for t, a in zip(texts, answers[which], strict=False) if task in real[t]]
                        accs.append(sum((p["p_true"] >= 0.5) == e for p, e in pairs) / len(pairs))
                    print(f"  {which} heads on the real held-out prompts: accuracy "
                          + ", ".join(f"{t} {a:.3f}" for t, a in zip(ROUTING, accs, strict=False)) + f"; macro {statistics.mean(accs):.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
