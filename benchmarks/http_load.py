"""`system1 serve` under load, against the mock rung, measured from stdlib HTTP clients.

    python benchmarks/http_load.py [--clients 200] [--requests 20] [--single 500] [--fuzz 0]

1. One client, sequential `POST /v1/decide`: HTTP round trip vs the same decide in-process
   (`Gateway.decide`), p50 / p95 / p99 side by side; the difference is what the HTTP face adds.
2. CLIENTS threads × REQUESTS each, every thread on its own keep-alive connection: errors,
   throughput, p50 / p95 / p99 round trip.
3. `--fuzz N`: N schemathesis cases per mode and body operation (tests/test_http_fuzz.py's
   loop), against the same server; prints the case count and any failure.

The server is a `system1 serve --port 0` subprocess (its own interpreter: the clients' GIL
does not slow it), in a throwaway state directory.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DECIDE = json.dumps({"question": "Is `git push --force origin main` destructive?", "options": ["yes", "no"]}).encode()


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def start_server(env: dict[str, str]) -> tuple[subprocess.Popen, int]:
    proc = subprocess.Popen([sys.executable, "-m", "system1_gateway.cli", "serve", "--port", "0"],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True, env=env)
    while True:
        line = proc.stderr.readline()
        if not line:
            raise SystemExit("system1 serve exited before listening")
        match = re.search(r"listening on http://127\.0\.0\.1:(\d+)", line)
        if match:
            threading.Thread(target=proc.stderr.read, daemon=True).start()
            return proc, int(match.group(1))


def stop_server(proc: subprocess.Popen) -> int:
    proc.send_signal(signal.SIGTERM)
    return proc.wait(timeout=60)


class Connection:
    def __init__(self, port: int, timeout: float = 60):
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)

    def post(self, path: str, body: bytes) -> tuple[int, dict]:
        self.conn.request("POST", path, body=body, headers={"Content-Type": "application/json"})
        response = self.conn.getresponse()
        return response.status, json.loads(response.read())

    def get(self, path: str) -> tuple[int, dict]:
        self.conn.request("GET", path)
        response = self.conn.getresponse()
        return response.status, json.loads(response.read())

    def close(self) -> None:
        self.conn.close()


def wait_ready(port: int) -> None:
    conn = Connection(port)
    for _ in range(600):
        if conn.get("/healthz")[1].get("status") == "ok":
            conn.close()
            return
        time.sleep(0.05)
    raise SystemExit("never ready")


def single(port: int, calls: int) -> tuple[list[float], list[float]]:
    """Sequential round trips over HTTP, and the same calls in-process."""
    from system1_gateway.core import Gateway

    conn, http_ms = Connection(port), []
    for _ in range(20):
        conn.post("/v1/decide", DECIDE)
    for _ in range(calls):
        t0 = time.perf_counter()
        status, body = conn.post("/v1/decide", DECIDE)
        http_ms.append((time.perf_counter() - t0) * 1000)
        assert status == 200 and body["status"] == "decided", body
    conn.close()
    payload, inproc_ms = json.loads(DECIDE), []
    with Gateway.from_environment() as gateway:
        for _ in range(20):
            gateway.decide(payload)
        for _ in range(calls):
            t0 = time.perf_counter()
            assert gateway.decide(payload)["status"] == "decided"
            inproc_ms.append((time.perf_counter() - t0) * 1000)
    return http_ms, inproc_ms


def load(port: int, clients: int, per_client: int) -> dict:
    """`clients` threads × `per_client` decides, each thread on its own connection."""
    latencies: list[float] = []
    errors: list[str] = []
    lock = threading.Lock()
    go = threading.Barrier(clients + 1)

    def client() -> None:
        conn, mine, bad = Connection(port), [], []
        go.wait()
        for _ in range(per_client):
            t0 = time.perf_counter()
            try:
                status, body = conn.post("/v1/decide", DECIDE)
                if status != 200 or body.get("status") != "decided":
                    bad.append(f"HTTP {status}: {body.get('error')}")
            except (OSError, http.client.HTTPException, ValueError) as exc:
                bad.append(f"{type(exc).__name__}: {exc}")
                conn.close()
                conn = Connection(port)
            mine.append((time.perf_counter() - t0) * 1000)
        conn.close()
        with lock:
            latencies.extend(mine)
            errors.extend(bad)

    threads = [threading.Thread(target=client) for _ in range(clients)]
    for t in threads:
        t.start()
    go.wait()
    started = time.perf_counter()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - started
    return {"requests": len(latencies), "errors": errors, "elapsed_s": elapsed,
            "throughput": len(latencies) / elapsed, "p50": pct(latencies, 0.5), "p95": pct(latencies, 0.95),
            "p99": pct(latencies, 0.99), "max": max(latencies)}


def fuzz(port: int, cases: int) -> None:
    sys.path.insert(0, str(ROOT / "tests"))
    import test_http_fuzz
    from schemathesis import GenerationMode

    per_mode = {GenerationMode.POSITIVE: cases, GenerationMode.NEGATIVE: cases}
    counted, timeouts, elapsed = test_http_fuzz.fuzz(f"http://127.0.0.1:{port}", per_mode)
    print(f"fuzz: {sum(counted.values())} cases in {elapsed:.1f} s, no failure; {counted}; "
          f"{len(timeouts)} timeout results for unmeetable deadlines")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=200)
    parser.add_argument("--requests", type=int, default=20)
    parser.add_argument("--single", type=int, default=500, help="sequential calls for the side-by-side")
    parser.add_argument("--fuzz", type=int, default=0, help="schemathesis cases per mode and body operation")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as home:
        env = {k: v for k, v in os.environ.items() if not k.startswith("SYSTEM1_")}
        env.update(SYSTEM1_PROVIDER="mock", SYSTEM1_STATE_DIR=f"{home}/state", XDG_CONFIG_HOME=f"{home}/xdg",
                   SYSTEM1_SERVE_AUTOSTART="0")
        os.environ.update(env)  # the in-process side of the comparison uses the same settings
        proc, port = start_server(env)
        try:
            wait_ready(port)
            print(f"system1 serve (mock rung) on 127.0.0.1:{port}; {os.cpu_count()} CPUs; "
                  f"load average {os.getloadavg()[0]:.2f}")
            if args.single:
                http_ms, inproc_ms = single(port, args.single)
                print(f"\n1. sequential decide, {args.single} calls (ms)")
                print(f"   {'':22}{'p50':>8}{'p95':>8}{'p99':>8}")
                for name, values in (("in-process decide", inproc_ms), ("HTTP POST /v1/decide", http_ms)):
                    print(f"   {name:22}{statistics.median(values):8.2f}{pct(values, .95):8.2f}{pct(values, .99):8.2f}")
                print(f"   HTTP face adds {statistics.median(http_ms) - statistics.median(inproc_ms):.2f} ms at p50")
            if args.clients:
                stats = load(port, args.clients, args.requests)
                print(f"\n2. {args.clients} concurrent clients × {args.requests} decides = {stats['requests']} requests")
                print(f"   errors {len(stats['errors'])}; throughput {stats['throughput']:.0f} req/s over "
                      f"{stats['elapsed_s']:.1f} s; round trip p50 {stats['p50']:.1f} ms, p95 {stats['p95']:.1f} ms, "
                      f"p99 {stats['p99']:.1f} ms, max {stats['max']:.1f} ms")
                for error in sorted(set(stats["errors"]))[:10]:
                    print(f"   error: {error}")
            if args.fuzz:
                print()
                fuzz(port, args.fuzz)
        finally:
            code = stop_server(proc)
        print(f"\nserver exit code after SIGTERM: {code}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
