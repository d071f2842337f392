"""`system1 serve` under load, against the mock rung, measured from stdlib HTTP clients.

    python benchmarks/http_load.py [--clients 200] [--requests 20] [--single 500] [--slowloris 0] [--fuzz 0]

1. One client, sequential `POST /v1/decide`: HTTP round trip vs the same decide in-process
   (`Gateway.decide`), p50 / p95 / p99 side by side; the difference is what the HTTP face adds.
2. CLIENTS threads × REQUESTS each, every thread on its own keep-alive connection: errors,
   throughput, p50 / p95 / p99 round trip.
3. `--slowloris N`: step 2 again with N slow-loris connections held open alongside (each sends
   a request head one header line every half second, and reconnects when the server cuts it):
   errors and p50 / p95 / p99 quiet vs under attack side by side, and how often the attackers
   were cut (the server's request read timeout).
4. `--fuzz N`: N schemathesis cases per mode and body operation (tests/test_http_fuzz.py's
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

from bench_stats import pct

ROOT = Path(__file__).resolve().parents[1]
DECIDE = json.dumps({"question": "Is `git push --force origin main` destructive?", "options": ["yes", "no"]}).encode()


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
    from system1_gateway.core.gateway import Gateway

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


class Slowloris:
    """N connections that never finish their request head (a header line every 0.5 s), each
    reopened when the server closes it. Loopback only; stops when told."""

    def __init__(self, port: int, n: int):
        self.port, self.stop, self.cuts = port, threading.Event(), 0
        self._lock = threading.Lock()
        self.threads = [threading.Thread(target=self._one, daemon=True) for _ in range(n)]
        for thread in self.threads:
            thread.start()

    def _one(self) -> None:
        import socket

        while not self.stop.is_set():
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=5) as sock:
                    sock.sendall(b"POST /v1/decide HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n" % self.port)
                    while not self.stop.wait(0.5):
                        sock.sendall(b"X-Slow: 1\r\n")
            except OSError:  # cut by the server (or refused at the cap): come back
                with self._lock:
                    self.cuts += 1
                self.stop.wait(0.05)

    def close(self) -> None:
        self.stop.set()
        for thread in self.threads:
            thread.join(5)


def fuzz(port: int, cases: int) -> None:
    sys.path.insert(0, str(ROOT / "tests"))
    from schemathesis import GenerationMode

    import test_http_fuzz

    per_mode = {GenerationMode.POSITIVE: cases, GenerationMode.NEGATIVE: cases}
    counted, timeouts, elapsed = test_http_fuzz.fuzz(f"http://127.0.0.1:{port}", per_mode)
    print(f"fuzz: {sum(counted.values())} cases in {elapsed:.1f} s, no failure; {counted}; "
          f"{len(timeouts)} timeout results for unmeetable deadlines")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=200)
    parser.add_argument("--requests", type=int, default=20)
    parser.add_argument("--single", type=int, default=500, help="sequential calls for the side-by-side")
    parser.add_argument("--slowloris", type=int, default=0, help="slow-loris connections held during a second load run")
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
            if args.clients and args.slowloris:
                attack = Slowloris(port, args.slowloris)
                time.sleep(2)  # the attackers are connected
                try:
                    under = load(port, args.clients, args.requests)
                finally:
                    attack.close()
                print(f"\n3. the same load with {args.slowloris} slow-loris connections open alongside "
                      f"(cut and reopened {attack.cuts} times)")
                print(f"   {'':26}{'errors':>8}{'req/s':>8}{'p50':>8}{'p95':>8}{'p99':>8}")
                for name, s in (("quiet", stats), (f"{args.slowloris} slow-loris", under)):
                    print(f"   {name:26}{len(s['errors']):8d}{s['throughput']:8.0f}{s['p50']:8.1f}{s['p95']:8.1f}"
                          f"{s['p99']:8.1f}")
                print(f"   p99 under attack / quiet: ×{under['p99'] / stats['p99']:.2f}")
                for error in sorted(set(under["errors"]))[:10]:
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
