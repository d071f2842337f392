"""Memory with one daemon: two stdio MCP clients + CLI calls + client calls at once (accurate tier).

    python benchmarks/daemon_memory.py [--calls 3]

Starts a daemon on the default config (embedded accurate tier) in a fresh state dir, then
runs together: two stdio MCP servers (`python -I -m system1_gateway`, driven by the mcp SDK
client), `system1 decide` processes, and stdlib client calls from this process. A sampler
reads VmRSS of every one of these processes from /proc every 50 ms; printed: the peak RSS per
process (median and max over processes of a kind) and the total at the busiest sample.
The accurate tier is held once (≈ 2.2 GB in total), not once per client. Linux only.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path


def rss_mb(pid: int) -> float | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def children(pid: int) -> list[int]:
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
                if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                    out.append(int(entry))
            except (OSError, IndexError, ValueError):
                pass
    return out


class Sampler:
    def __init__(self) -> None:
        self.kinds: dict[int, str] = {}
        self.peak: dict[int, float] = {}
        self.total_peak = 0.0
        self.stop = threading.Event()

    def watch(self, pid: int, kind: str) -> None:
        self.kinds.setdefault(pid, kind)

    def run(self) -> None:
        while not self.stop.is_set():
            for child in children(os.getpid()):
                self.watch(child, "mcp server" if child not in self.kinds else self.kinds[child])
            total = 0.0
            for pid in list(self.kinds):
                value = rss_mb(pid)
                if value:
                    self.peak[pid] = max(self.peak.get(pid, 0), value)
                    total += value
            self.total_peak = max(self.total_peak, total)
            time.sleep(0.05)


async def mcp_session(env: dict[str, str], calls: int, results: list) -> None:
    from mcp import Client, StdioServerParameters

    params = StdioServerParameters(command=sys.executable, args=["-I", "-m", "system1_gateway"], env=env)
    async with Client(params) as session:
        await session.list_tools()
        for i in range(calls):
            out = await session.call_tool("system1_decide", {"question": f"Is `rm -rf build{i}/` destructive?"})
            results.append(out.structured_content["attempts"][0]["provider"])


def _direct(daemon, i: int) -> str:
    """A stdlib client call straight to the daemon (what a hook does): answered there by construction."""
    result = daemon.post("/v1/decide", {"question": f"client {i}?"}, 300)
    return "daemon" if result["status"] in ("decided", "abstained") else f"daemon error {result['error']}"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=3)
    args = ap.parse_args()
    import anyio

    root = Path(tempfile.mkdtemp(prefix="system1-memory-"))
    (root / "config.toml").write_text('[gateway]\ndeadline_s = 120\ntimeout_s = 120\n')
    for key in [k for k in os.environ if k.startswith("SYSTEM1_")]:
        del os.environ[key]
    os.environ.update(SYSTEM1_CONFIG=str(root / "config.toml"), SYSTEM1_STATE_DIR=str(root / "state"),
                      SYSTEM1_SERVE_AUTOSTART="0", SYSTEM1_SERVE_PORT="0")
    env = dict(os.environ)
    system1 = str(Path(sys.executable).parent / "system1")
    start = subprocess.run([system1, "daemon", "start"], capture_output=True, text=True)
    if start.returncode != 0:
        raise SystemExit(f"daemon start failed: {start.stdout}{start.stderr}")
    from system1_gateway.daemon import client

    sampler = Sampler()
    routes: list[str] = []
    try:
        daemon = client.wait_ready(300)[0]
        daemon.post("/v1/decide", {"question": "warm?"}, 300)
        sampler.watch(daemon.pid, "daemon")
        sampler.watch(os.getpid(), "this client process")
        clis = [subprocess.Popen([system1, "decide", f"cli {i}: is `rm -rf /tmp/x{i}` destructive?"], env=env,
                                 stdout=subprocess.PIPE, stderr=subprocess.DEVNULL) for i in range(args.calls)]
        for proc in clis:
            sampler.watch(proc.pid, "system1 decide")
        thread = threading.Thread(target=sampler.run, daemon=True)  # after the CLI pids are labelled
        thread.start()

        async def everything() -> None:
            async with anyio.create_task_group() as tg:
                tg.start_soon(mcp_session, env, args.calls, routes)
                tg.start_soon(mcp_session, env, args.calls, routes)
                for i in range(args.calls):
                    tg.start_soon(anyio.to_thread.run_sync,
                                  lambda i=i: routes.append(_direct(daemon, i)))

        anyio.run(everything)
        for proc in clis:
            out = json.loads(proc.communicate(timeout=600)[0])
            first = out["attempts"][0] if out["attempts"] else {}
            routes.append(first.get("provider") if first.get("provider") == "daemon" else
                          f"in-process ({out['status']}, {(out.get('error') or {}).get('code')})")
        sampler.stop.set()
        thread.join()
    finally:
        subprocess.run([system1, "daemon", "stop"], capture_output=True)
    print(f"answered through the daemon: {routes.count('daemon')} of {len(routes)} calls"
          + "".join(f"; {r}" for r in routes if r != "daemon"))
    print(f"{'process kind':<22} {'count':>5} {'median peak RSS MB':>19} {'max peak RSS MB':>16}")
    kinds = sorted(set(sampler.kinds.values()))
    for kind in kinds:
        values = [sampler.peak[p] for p, k in sampler.kinds.items() if k == kind and p in sampler.peak]
        if values:
            print(f"{kind:<22} {len(values):>5} {statistics.median(values):>19.0f} {max(values):>16.0f}")
    print(f"total RSS at the busiest sample: {sampler.total_peak:.0f} MB "
          f"(sum of peaks {sum(sampler.peak.values()):.0f} MB); the accurate tier alone ≈ 2.2 GB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
