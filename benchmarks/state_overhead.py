"""What shared state costs per request: SQLite (one machine) vs Redis on loopback (a team).

    python benchmarks/state_overhead.py [--n 5000]

Starts a real `redis-server` on a free loopback port (Debian package redis-server), then for
each backend prints median / p99 (µs), side by side in one run, of:
  * the state operations one answered request makes: the cooldown check of its rung and
    the counters update (`check` + `count`);
  * the whole `Gateway.judge` on the mock rung (whose own work is ~100 µs), and the
    difference to the in-memory store, i.e. the shared state's overhead per request.
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from typing import Any, Callable

os.environ["SYSTEM1_STATE_DIR"] = tempfile.mkdtemp()

from bench_stats import pct
from system1_gateway.config.settings import Config, GatewaySettings
from system1_gateway.core.gateway import Gateway
from system1_gateway.store import MemoryStore, SQLiteStore, StateStore
from system1_gateway.store.redis_store import RedisStore

REQUEST = {"state": "rm -rf build/", "questions": {"d": {"type": "noul", "instructions": "Is it destructive?"}}}
KEYS = ("endpoint:rung:mock",)


def sample(fn: Callable[[], Any], n: int, warmup: int = 300) -> list[float]:
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e6)
    return times


def start_redis() -> tuple[subprocess.Popen, str]:
    binary = shutil.which("redis-server") or "/usr/bin/redis-server"
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return proc, f"redis://127.0.0.1:{port}/0"
        except OSError:
            time.sleep(0.05)
    raise SystemExit("redis-server did not start")


def gateway_with(store: StateStore) -> Gateway:
    gw = Gateway(Config(gateway=GatewaySettings(provider="mock")))
    gw.state.close()
    gw.state = gw._chain.state = store
    return gw


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=5000)
    n = ap.parse_args().n
    proc, url = start_redis()
    try:
        stores = {"memory": MemoryStore(), "sqlite": SQLiteStore(), "redis": RedisStore(url, prefix="bench")}
        rows = {}
        for name, store in stores.items():
            ops = sample(lambda: (store.check(KEYS), store.count({"requests": 1, "answered": 1}, None)), n)
            gw = gateway_with(store)
            whole = sample(lambda: gw.judge(REQUEST), n)
            rows[name] = (ops, whole)
        base = pct(rows["memory"][1], .5), pct(rows["memory"][1], .99)
        print(f"python {sys.version.split()[0]}, n={n} per cell, µs; overhead = whole judge minus the memory store's")
        print(f"{'backend':<8} {'check+count p50':>16} {'p99':>8} {'judge p50':>10} {'p99':>8} "
              f"{'overhead p50':>13} {'p99':>8}")
        for name, (ops, whole) in rows.items():
            p50, p99 = pct(whole, .5), pct(whole, .99)
            print(f"{name:<8} {pct(ops, .5):>16.1f} {pct(ops, .99):>8.1f} {p50:>10.1f} {p99:>8.1f} "
                  f"{p50 - base[0]:>13.1f} {p99 - base[1]:>8.1f}")
        for store in stores.values():
            store.close()
    finally:
        proc.kill()
        proc.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
