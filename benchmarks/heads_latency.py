"""Latency of built-in questions answered by their heads, against the accurate tier, in one run.

    python benchmarks/heads_latency.py [--llm-items 20]

A warm process (models loaded, one request per question first). Measured through the
gateway (validation, chain, answer check included), per request:
  * destructive: one built-in question per command (the Bash guard's request);
  * routing: the four routing features of one prompt in one request (the routing hook's);
each with heads (the default) and with heads off and the accurate tier (`tier = "llm"`,
what answered before heads), on the dev items of data/heads/dev/. Prints median, p95 and
the ratio side by side.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

from bench_stats import pct
from system1_gateway.config.settings import Config, GatewaySettings
from system1_gateway.core.gateway import Gateway
from system1_gateway.providers.embedded import EmbeddedProvider, assets

ROOT = Path(__file__).resolve().parents[1]
DEV = ROOT / "data" / "heads" / "dev" / "dev_builtins.jsonl"
ROUTING = ("read_only", "design", "review", "specified")


def timed(gateway: Gateway, requests: list[dict], expect_model: str | None) -> list[float]:
    out = []
    for req in requests:
        t = time.perf_counter()
        result = gateway.judge(req)
        out.append((time.perf_counter() - t) * 1000)
        assert result["status"] == "answered", result["error"]
        if expect_model:
            assert expect_model in result["model"], result["model"]
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--llm-items", type=int, default=20, help="requests per case for the (slow) accurate tier")
    args = ap.parse_args()
    items = [json.loads(line) for line in DEV.read_text().splitlines() if line.strip()]
    commands = [i["state"] for i in items if i["task"] == "destructive"]
    prompts = list(dict.fromkeys(i["state"] for i in items if i["task"] in ROUTING))
    guard = [{"state": c, "questions": {"d": {"builtin": "destructive"}}, "min_confidence": 0} for c in commands]
    route = [{"state": p, "questions": {n: {"builtin": n} for n in ROUTING}, "min_confidence": 0} for p in prompts]

    cfg = Config(gateway=GatewaySettings(timeout_s=60, deadline_s=120))
    with_heads = EmbeddedProvider("embedded", {})
    with_heads.warm()
    gw = Gateway(cfg, providers={"embedded": with_heads})
    timed(gw, guard[:3] + route[:3], None)  # first requests: head files read, buffers allocated
    rows = {"destructive, head": timed(gw, guard, "head:destructive@1"),
            "routing x4, heads": timed(gw, route, "head:read_only@1")}
    if assets.llm_available():
        llm = EmbeddedProvider("embedded", {"tier": "llm", "heads": False})
        llm.warm()
        gl = Gateway(cfg, providers={"embedded": llm})
        timed(gl, guard[:1] + route[:1], None)
        llm.wait_prepared(600)  # each question's prompt prefix, outside the timing
        rows["destructive, llm"] = timed(gl, guard[:args.llm_items], None)
        rows["routing x4, llm"] = timed(gl, route[:args.llm_items], None)
        llm.close()
    with_heads.close()
    print(f"warm process, {with_heads.threads} threads; gateway.judge wall time per request (ms)")
    print(f"{'case':<20} {'n':>4} {'p50':>8} {'p95':>8} {'max':>8}")
    for name, lat in rows.items():
        print(f"{name:<20} {len(lat):>4} {statistics.median(lat):>8.1f} {pct(lat, 0.95):>8.1f} {max(lat):>8.1f}")
    for case in ("destructive", "routing x4"):
        head = [v for k, v in rows.items() if k.startswith(case) and "llm" not in k][0]
        llm_lat = rows.get(f"{case}, llm")
        if llm_lat:
            print(f"{case}: llm p50 / head p50 = {statistics.median(llm_lat) / statistics.median(head):.0f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
