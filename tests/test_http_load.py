"""200 concurrent clients (threads) × 20 requests against `system1 serve` on the mock rung:
zero errors. Throughput and p99 are printed by `benchmarks/http_load.py` (and by this test
with -s), not asserted: a timed unit test is not a benchmark."""

from __future__ import annotations

import os
import sys

from conftest import ROOT

sys.path.insert(0, str(ROOT / "benchmarks"))
import http_load


def test_200_concurrent_clients_times_20_requests_get_zero_errors(tmp_path):
    env = {**os.environ, "SYSTEM1_PROVIDER": "mock"}
    proc, port = http_load.start_server(env)
    try:
        http_load.wait_ready(port)
        stats = http_load.load(port, clients=200, per_client=20)
    finally:
        code = http_load.stop_server(proc)
    print(f"\n4000 requests: {stats['throughput']:.0f} req/s, p99 {stats['p99']:.1f} ms")
    assert stats["requests"] == 4000
    assert stats["errors"] == [], sorted(set(stats["errors"]))[:5]
    assert code == 0
