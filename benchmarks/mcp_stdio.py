"""MCP stdio round trips, measured from the official SDK client.

    python benchmarks/mcp_stdio.py [--calls 500] [--embedded 40]

1. `system1_decide` with the mock provider: p50 / p95 / p99 over N calls.
2. With the embedded engine (warm): round trip vs the gateway's own `latency_ms` for the same
   calls, side by side; the difference is what the MCP layer adds.
3. Spawn to first `tools/list` answer (process start, imports, handshake), median of 5.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

import anyio
from mcp import Client, StdioServerParameters

from bench_stats import pct


def params(env):
    return StdioServerParameters(command=sys.executable, args=["-I", "-m", "system1_gateway"], env=env)


async def round_trips(env, calls, question):
    total, inner = [], []
    async with Client(params(env), mode="legacy") as client:
        await client.list_tools()
        await client.call_tool("system1_decide", {"question": question(-1)})  # warm (loads engines)
        for i in range(calls):
            t0 = time.perf_counter()
            result = await client.call_tool("system1_decide", {"question": question(i)})
            total.append((time.perf_counter() - t0) * 1000)
            inner.append(result.structured_content["latency_ms"])
    return total, inner


def raw_round_trips(env, calls, question=lambda i: "Is `rm -rf build/` destructive?", warmup=20):
    """The same calls over the pipe with no SDK on the client side (json + readline)."""
    import json
    import subprocess

    proc = subprocess.Popen([sys.executable, "-I", "-m", "system1_gateway"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, text=True, bufsize=1)

    def rpc(id_, method, params):
        proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": id_, "method": method, "params": params}) + "\n")
        proc.stdin.flush()
        return json.loads(proc.stdout.readline())

    rpc(0, "initialize", {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}})
    proc.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n")
    out, inner = [], []
    for i in range(calls + warmup):
        args = {"name": "system1_decide", "arguments": {"question": question(i)}}
        t0 = time.perf_counter()
        reply = rpc(i + 1, "tools/call", args)
        if i >= warmup:
            out.append((time.perf_counter() - t0) * 1000)
            inner.append(reply["result"]["structuredContent"]["latency_ms"])
    proc.stdin.close()
    proc.wait(timeout=10)
    return out, inner


async def spawn_to_list(env):
    t0 = time.perf_counter()
    async with Client(params(env), mode="legacy") as client:
        await client.list_tools()
        return (time.perf_counter() - t0) * 1000


def report(name, values):
    print(f"{name:<44} p50 {pct(values, .5):8.2f}  p95 {pct(values, .95):8.2f}  p99 {pct(values, .99):8.2f} ms  (n={len(values)})")


async def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=500)
    ap.add_argument("--embedded", type=int, default=40, help="calls on the embedded engine (0: skip)")
    args = ap.parse_args()
    state = tempfile.mkdtemp()
    mock = {**os.environ, "SYSTEM1_PROVIDER": "mock", "SYSTEM1_STATE_DIR": state}

    total, inner = await round_trips(mock, args.calls, lambda i: "Is `rm -rf build/` destructive?")
    report("decide round trip, mock", total)
    report("  of which gateway (latency_ms)", inner)
    raw, raw_inner = raw_round_trips(mock, args.calls)
    report("decide round trip, mock, raw pipe client", raw)
    report("  added by the MCP layer (raw client)", [t - g for t, g in zip(raw, raw_inner, strict=False)])

    if args.embedded:
        embedded = {**os.environ, "SYSTEM1_PROVIDER": "embedded"}
        commands = ["ls -la", "rm -rf build/", "git push --force", "cat README.md", "git status"]
        total, inner = await round_trips(
            embedded, args.embedded, lambda i: f"Is `{commands[i % len(commands)]}` destructive?")
        report("decide round trip, embedded (warm)", total)
        report("  engine + gateway (latency_ms)", inner)
        report("  added by MCP layer + SDK client", [t - g for t, g in zip(total, inner, strict=False)])
        raw, raw_inner = raw_round_trips(embedded, args.embedded,
                                         lambda i: f"Is `{commands[i % len(commands)]}` destructive?", warmup=5)
        report("decide round trip, embedded, raw pipe client", raw)
        report("  engine + gateway (latency_ms)", raw_inner)
        report("  added by the MCP layer (raw client)", [t - g for t, g in zip(raw, raw_inner, strict=False)])

    spawns = [await spawn_to_list(mock) for _ in range(5)]
    print(f"{'spawn to first tools/list':<44} median {statistics.median(spawns):8.1f} ms  (min {min(spawns):.1f}, max {max(spawns):.1f}, n=5)")


if __name__ == "__main__":
    anyio.run(main)
