"""Wall time of the Claude Code hooks as Claude Code runs them: a new process per prompt or
tool call (`python -I -m system1_gateway.hooks.<name>`, interpreter start included), the
hook input on stdin, the answer on stdout.

    python benchmarks/hooks_latency.py [--n 60]

In a temporary state dir and config: routing on with hints, the log off (what a user has
after turning hints on), the guard on, a warm daemon with the embedded engine (fast tier;
the four routing features and `destructive` are answered by heads). Cases, side by side:
  * python -I -c pass: the floor (interpreter start);
  * route, warm daemon: four features in one request, the rule, the hint line;
  * guard, warm daemon: `destructive` of one command;
  * route and guard with the engine down: no daemon (connection refused);
  * route and guard with a hung daemon: a port file naming a listener that never answers
    (the hook's 1.5 s cap is what bounds it).
Prompts and commands are the dev items of data/heads/dev/ (the routing ones and the
destructive ones). Prints median, p95 and max per case.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_stats import pct

ROOT = Path(__file__).resolve().parents[1]
DEV = ROOT / "data" / "heads" / "dev" / "dev_builtins.jsonl"
ROUTING = ("read_only", "design", "review", "specified")


def run_hook(name: str, payload: dict, env: dict[str, str]) -> tuple[float, str]:
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-I", "-m", f"system1_gateway.hooks.{name}"], input=json.dumps(payload).encode(),
                          capture_output=True, env=env, timeout=30)
    return (time.perf_counter() - t0) * 1000, proc.stdout.decode()


def series(name: str, payloads: list[dict], env: dict[str, str], expect: str | None) -> list[float]:
    times = []
    for payload in payloads:
        ms, out = run_hook(name, payload, env)
        if expect is not None:
            assert expect in out, f"{name}: expected {expect!r} in {out!r}"
        times.append(ms)
    return times


def floor(n: int, env: dict[str, str]) -> list[float]:
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-I", "-c", "pass"], env=env, check=True)
        times.append((time.perf_counter() - t0) * 1000)
    return times


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--n", type=int, default=60, help="hook runs per case (warm cases)")
    args = ap.parse_args()
    items = [json.loads(line) for line in DEV.read_text().splitlines() if line.strip()]
    prompts = list(dict.fromkeys(i["state"] for i in items if i["task"] in ROUTING and len(i["state"].split()) >= 10))
    commands = [i["state"] for i in items if i["task"] == "destructive"]
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        config = base / "config.toml"
        config.write_text('[providers.embedded]\ntier = "fast"\n[routing]\nenabled = true\nhint = true\n'
                          'min_confidence = 0.0\n[skills]\nenabled = false\n[guard]\nenabled = true\nmin_confidence = 0.0\n')
        env = {**{k: v for k, v in os.environ.items() if not k.startswith("SYSTEM1_")},
               "SYSTEM1_CONFIG": str(config), "SYSTEM1_STATE_DIR": str(base / "state"),
               "SYSTEM1_SERVE_PORT": "0", "SYSTEM1_SERVE_AUTOSTART": "0"}
        route = [{"prompt": p, "cwd": tmp} for p in prompts][: args.n]
        guard = [{"tool_name": "Bash", "tool_input": {"command": c}, "cwd": tmp} for c in commands][: args.n]
        rows = [("python -I -c pass (floor)", floor(args.n, env))]

        cli = [sys.executable, "-m", "system1_gateway.cli", "daemon"]
        subprocess.run([*cli, "start"], env=env, check=True, capture_output=True, timeout=120)
        try:
            for _ in range(200):
                status = json.loads(subprocess.run([*cli, "status"], env=env, capture_output=True, text=True).stdout)
                if status.get("health") == "ok":
                    break
                time.sleep(0.2)
            series("route", route[:3], env, "routing hint")  # first requests warm the heads' caches
            rows.append(("route, warm daemon (4 features, heads)", series("route", route, env, "System-1 routing hint")))
            rows.append(("guard, warm daemon (destructive, head)",
                         series("guard", guard, env, None)))
        finally:
            subprocess.run([*cli, "stop"], env=env, capture_output=True, timeout=60)

        down = min(10, args.n)
        rows.append(("route, engine down (no daemon)", series("route", route[:down], env, "")))
        rows.append(("guard, engine down (no daemon): asks", series("guard", guard[:down], env, '"ask"')))

        # A hung daemon: a listener that accepts and never answers, named by a port file.
        hung = socket.socket()
        hung.bind(("127.0.0.1", 0))
        hung.listen(64)
        port = hung.getsockname()[1]
        os.environ.update({"SYSTEM1_CONFIG": env["SYSTEM1_CONFIG"], "SYSTEM1_STATE_DIR": env["SYSTEM1_STATE_DIR"]})
        from system1_gateway.daemon import files as daemon_files

        record = {"pid": os.getpid(), "host": "127.0.0.1", "port": port, "url": f"http://127.0.0.1:{port}",
                  "fingerprint": daemon_files.fingerprint(env), "version": "0", "started": time.time() - 3600}
        daemon_files.daemon_dir().mkdir(parents=True, exist_ok=True)
        daemon_files.write_private(daemon_files.port_path(), json.dumps(record))
        hung_n = min(5, args.n)
        rows.append(("route, hung daemon (1.5 s cap)", series("route", route[:hung_n], env, "")))
        rows.append(("guard, hung daemon: asks", series("guard", guard[:hung_n], env, '"ask"')))
        hung.close()

    print(f"{'case':42s} {'n':>4s} {'p50 ms':>8s} {'p95 ms':>8s} {'max ms':>8s}")
    for name, values in rows:
        print(f"{name:42s} {len(values):4d} {statistics.median(values):8.1f} {pct(values, 0.95):8.1f} {max(values):8.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
