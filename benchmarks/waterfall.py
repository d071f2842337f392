"""Gateway overhead and deadline adherence, all in one run.

    python benchmarks/waterfall.py [--calls 2000] [--http 300] [--hangs 200]

1. In-process overhead per request with `mock`: `Gateway.judge` wall time (validation, rung,
   answer checks, cooldown lookup, audit) — p50 / p99.
2. Over HTTP against a local `/v1/systemone` server (tests/fault_engine.py, mode ok): the
   gateway's call vs a raw `httpx` POST of the same body, interleaved, side by side; ratio of
   medians.
3. Deadline adherence: requests against an engine that accepts and hangs; overshoot of the
   elapsed time past `deadline_s` (max and p99).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
os.environ["SYSTEM1_STATE_DIR"] = tempfile.mkdtemp()

import httpx

from bench_stats import pct
from fault_engine import FaultEngine
from system1_gateway.config.settings import Config, GatewaySettings
from system1_gateway.core.gateway import Gateway

REQUEST = {"state": "rm -rf build/", "questions": {"d": {"type": "noul", "instructions": "Is it destructive?"}}}


def line(name, values, unit="µs", scale=1e6):
    v = [x * scale for x in values]
    print(f"{name:<46} p50 {pct(v, .5):9.1f}  p95 {pct(v, .95):9.1f}  p99 {pct(v, .99):9.1f} {unit}  (n={len(v)})")


def gateway(chain, providers, **gw):
    return Gateway(Config(gateway=GatewaySettings(provider=chain[0], fallback=chain[1:], **gw), providers=providers))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--http", type=int, default=300)
    ap.add_argument("--hangs", type=int, default=200)
    args = ap.parse_args()

    mock = gateway(["mock"], {})
    for _ in range(200):
        mock.judge(REQUEST)
    times = []
    for _ in range(args.calls):
        t0 = time.perf_counter()
        mock.judge(REQUEST)
        times.append(time.perf_counter() - t0)
    line("in-process judge, mock (gateway overhead)", times)

    engine = FaultEngine("ok")
    try:
        http = gateway(["fault"], {"fault": {"kind": "systemone", "endpoint": engine.url, "model": "fault-1"}})
        body = json.dumps({"model": "fault-1", "state": REQUEST["state"],
                           "questions": {"d": {"type": "noul", "instructions": "Is it destructive?"}}}).encode()
        raw_client = httpx.Client(trust_env=False)
        g_times, r_times = [], []
        for i in range(args.http + 30):
            t0 = time.perf_counter()
            raw_client.post(engine.url + "/v1/systemone", content=body,
                            headers={"content-type": "application/json"}).json()
            t1 = time.perf_counter()
            result = http.judge(REQUEST)
            t2 = time.perf_counter()
            assert result["provider"] == "fault", result
            if i >= 30:
                r_times.append(t1 - t0)
                g_times.append(t2 - t1)
        line("raw httpx POST (same body)", r_times, "ms", 1e3)
        line("gateway judge over HTTP", g_times, "ms", 1e3)
        print(f"{'ratio of medians, gateway / raw':<46} {statistics.median(g_times) / statistics.median(r_times):.3f}")

        engine.mode = "hang"
        deadline = 0.3
        hang = gateway(["fault"], {"fault": {"kind": "systemone", "endpoint": engine.url, "model": "fault-1"}},
                       timeout_s=0.2, deadline_s=deadline)
        over = []
        for _ in range(args.hangs):
            t0 = time.perf_counter()
            result = hang.judge(REQUEST)
            over.append(time.perf_counter() - t0 - deadline)
            assert result["error"]["code"] == "provider_timeout", result
        line(f"overshoot past deadline_s={deadline} on hangs", over, "ms", 1e3)
        print(f"{'max overshoot':<46} {max(over) * 1e3:.1f} ms")
    finally:
        engine.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
