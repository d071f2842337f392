"""What the Pi extension costs, measured with the real `pi` (0.73.1, from `.tools/`).

    python benchmarks/pi_latency.py [--runs 8] [--calls 50]

1. Extension load: `pi -p` answering one prompt from a local mock model, with and without
   `-e src/system1_gateway/pi_extension/index.ts`, alternated, `--runs` each (wall time of
   the whole process: Pi's start dominates it).
2. `system1_judge`'s path to the gateway (benchmarks/pi_judge.ts under Node 22): the time the
   extension's core adds to the gateway's own `latency_ms`, through the warm daemon (HTTP)
   and through the `system1` CLI, `--calls` each, on a daemon with the mock engine.
Prints median and p95 side by side.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from bench_stats import pct
from mock_openai_chat import MockOpenAIChat

TOOLS = Path(os.environ.get("SYSTEM1_TOOLS_DIR", ROOT / ".tools"))
PI = TOOLS / "pi" / "node_modules" / ".bin" / "pi"
NODE = TOOLS / "node22" / "node_modules" / ".bin" / "node"
CLI = Path(sys.executable).parent / "system1"


def row(name: str, values: list[float]) -> str:
    return f"{name:52s} {len(values):4d} {statistics.median(values):9.1f} {pct(values, 0.95):9.1f}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--runs", type=int, default=8)
    ap.add_argument("--calls", type=int, default=50)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp, MockOpenAIChat() as api:
        base = Path(tmp)
        agent = base / "agent"
        agent.mkdir()
        (agent / "models.json").write_text(json.dumps(api.models_json()))
        (agent / "system1.json").write_text(json.dumps({"waterfall": ["mock"]}))
        env = {**{k: v for k, v in os.environ.items() if not k.startswith(("SYSTEM1_", "PI_"))},
               "PI_CODING_AGENT_DIR": str(agent), "PI_OFFLINE": "1", "SYSTEM1_STATE_DIR": str(base / "state"),
               "SYSTEM1_CONFIG": str(base / "config.toml"), "SYSTEM1_SERVE_PORT": "0",
               "SYSTEM1_SERVE_AUTOSTART": "0", "SYSTEM1_CLI": str(CLI)}
        (base / "config.toml").write_text('[gateway]\nprovider = "mock"\n')
        base_cmd = [str(PI), "-p", "--no-session", "--model", "mock/mock-model", "--no-extensions"]
        with_ext, without = [], []
        for i in range(args.runs * 2):
            extra = ["-e", str(ROOT / "src" / "system1_gateway" / "pi_extension" / "index.ts")] if i % 2 else []
            t0 = time.perf_counter()
            subprocess.run([*base_cmd, *extra, "hello"], env=env, cwd=tmp, stdin=subprocess.DEVNULL,
                           capture_output=True, check=True, timeout=120)
            (with_ext if extra else without).append((time.perf_counter() - t0) * 1000)

        subprocess.run([str(CLI), "daemon", "start"], env=env, capture_output=True, check=True, timeout=120)
        try:
            proc = subprocess.run([str(NODE), str(ROOT / "benchmarks" / "pi_judge.ts"), str(args.calls)], env=env,
                                  capture_output=True, text=True, timeout=600)
            assert proc.returncode == 0, proc.stderr
            judged = json.loads(proc.stdout.strip().splitlines()[-1])
        finally:
            subprocess.run([str(CLI), "daemon", "stop"], env=env, capture_output=True, timeout=60)

    print(f"{'case':52s} {'n':>4s} {'p50 ms':>9s} {'p95 ms':>9s}")
    print(row("pi -p, one prompt, without the extension", without))
    print(row("pi -p, one prompt, with the extension", with_ext))
    print(f"{'  extension load (difference of medians)':52s} {'':4s} {statistics.median(with_ext) - statistics.median(without):9.1f}")
    for via in ("daemon", "cli"):
        wall, gateway = judged[via]["wall"], judged[via]["gateway"]
        print(row(f"system1_judge via {via}: wall", wall))
        print(row(f"system1_judge via {via}: gateway's own latency_ms", gateway))
        print(row(f"system1_judge via {via}: added by the extension", [w - g for w, g in zip(wall, gateway, strict=False)]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
