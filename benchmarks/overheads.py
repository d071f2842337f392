"""What one in-process request costs, step by step, each step timed alone.

    python benchmarks/overheads.py [--n 5000]

Prints median and p95 side by side (µs) for:
  * a worker-thread hand-off: `ThreadPoolExecutor.submit(noop).result()` (what a rung that is
    not self-timed pays on top of its own work);
  * the mock engine's own `judge` (its hashing), request validation (`parse_judge`), the
    cooldown lookup (SQLite), the audit append, the answer check (`answers.finalize`);
  * the whole `Gateway.judge` with the mock, for reference (benchmarks/waterfall.py has the
    same figure with p99);
  * the MCP `system1_decide` tool handler (`mcp_server.Tools`), i.e. what `tools/call` runs
    once the SDK has parsed the message, without the stdio transport.
The steps overlap with the whole request, so they do not add up to it exactly.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable

os.environ["SYSTEM1_STATE_DIR"] = tempfile.mkdtemp()

from bench_stats import pct
from system1_gateway.config.settings import Config, GatewaySettings
from system1_gateway.core import audit
from system1_gateway.core.answer_check import finalize
from system1_gateway.core.gateway import Gateway
from system1_gateway.model.requests import parse_judge
from system1_gateway.providers import build
from system1_gateway.store import SQLiteStore

REQUEST = {"state": "rm -rf build/", "questions": {"d": {"type": "noul", "instructions": "Is it destructive?"}}}


def timed(name: str, fn: Callable[[], Any], n: int, warmup: int = 200) -> None:
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e6)
    print(f"{name:<52} p50 {pct(times, .5):8.1f}  p95 {pct(times, .95):8.1f} µs  (n={n})")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=5000)
    args = ap.parse_args()
    n = args.n

    pool = ThreadPoolExecutor(max_workers=1)
    timed("thread hand-off: submit(noop).result()", lambda: pool.submit(lambda: None).result(), n)
    pool.shutdown()

    request = parse_judge(REQUEST)
    mock = build("mock", "mock", {})
    timed("mock engine's own judge", lambda: mock.judge(request, 5.0), n)
    timed("request validation (parse_judge)", lambda: parse_judge(REQUEST), n)
    store = SQLiteStore()
    timed("cooldown lookup (SQLite)", lambda: store.check(("rung:mock",)), n)
    entry = {"request_id": "bench", "status": "answered", "order": ["mock"], "provider": "mock", "model": "mock-1",
             "outcomes": [("mock", "ok")], "abstained": 0, "questions": 1, "latency_ms": 0.1,
             "usage": {"input_tokens": None, "output_tokens": None}, "error": None}
    timed("audit append (one JSON line, flushed)", lambda: audit.record(entry), n)
    answers = mock.judge(request, 5.0).answers
    timed("answer check (answers.finalize)", lambda: finalize(request, answers, 0.6), n)

    gateway = Gateway(Config(gateway=GatewaySettings(provider="mock")))
    timed("whole Gateway.judge, mock", lambda: gateway.judge(REQUEST), n)

    from system1_gateway.mcp_server import Tools

    handler = Tools(gateway).table["system1_decide"][-1]
    timed("MCP system1_decide handler (no transport)", lambda: handler({"question": "Is `rm -rf build/` destructive?"}), n)
    return 0


if __name__ == "__main__":
    sys.exit(main())
