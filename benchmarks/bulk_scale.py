"""How `system1 bulk` scales on this machine, and where it beats `judge --jsonl`.

    python benchmarks/bulk_scale.py [--sizes 10000,100000,1000000] [--heads 2000] [--out FILE.json]

Every run is a fresh `system1 bulk` (or `system1 judge --jsonl`) process, timed from start to
exit, so Ray's start-up is in the figure; the summary's own `seconds` (judging only) and its
peak resident memory of the driver and of the largest worker are printed beside it.
  * mock rung: rows × {Ray with 1 and 2 actors, the local pool with 2 processes, judge --jsonl};
  * embedded engine (the shipped heads answer the built-in `destructive` question): --heads
    rows, same runners.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

VERBS = ["rm -rf", "ls -la", "git push --force", "cat", "kubectl delete pod", "cp -r", "terraform destroy",
         "grep -rn TODO", "docker system prune -af", "du -sh", "git status", "find . -name '*.pyc' -delete"]
TARGETS = ["build/", "src/", "node_modules", "/var/log/app", "~/.cache", "dist", "web-7f", "data/raw", "."]


def write_rows(path: Path, n: int, builtin: bool) -> None:
    rng = random.Random(7)
    question = {"builtin": "destructive"} if builtin else {"type": "noul", "instructions": "Is it destructive?"}
    with path.open("w") as fh:
        for i in range(n):
            state = f"{rng.choice(VERBS)} {rng.choice(TARGETS)}{rng.randrange(1000)}"
            fh.write(json.dumps({"request_id": f"r{i}", "state": state, "questions": {"d": question}}) + "\n")


def timed(argv: list[str], env: dict, stdout=subprocess.PIPE) -> tuple[float, str]:
    t0 = time.perf_counter()
    done = subprocess.run(argv, env=env, stdout=stdout, stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - t0
    if done.returncode not in (0, 1):
        raise SystemExit(f"{argv} failed ({done.returncode}): {done.stderr[-2000:]}")
    return wall, done.stdout if stdout is subprocess.PIPE else ""


def run_one(kind: str, source: Path, workdir: Path, env: dict, n: int) -> dict:
    out = workdir / f"out-{kind}-{n}.jsonl"
    out.unlink(missing_ok=True)
    cli = [sys.executable, "-m", "system1_gateway.cli"]
    if kind == "judge --jsonl":
        with out.open("w") as fh:
            wall, _ = timed([*cli, "judge", "--jsonl", str(source)], env, stdout=fh)
        return {"runner": kind, "rows": n, "wall_s": round(wall, 2), "rows_per_s": round(n / wall, 1)}
    flags = {"ray 1 actor": ["--workers", "1"], "ray 2 actors": ["--workers", "2"],
             "pool 2 processes": ["--pool", "--workers", "2"]}[kind]
    wall, text = timed([*cli, "bulk", str(source), str(out), *flags], env)
    summary = json.loads(text)
    assert summary["rows"] == n, summary
    return {"runner": kind, "rows": n, "wall_s": round(wall, 2), "rows_per_s": round(n / wall, 1),
            "judging_s": summary["seconds"], "judging_rows_per_s": summary["rows_per_s"],
            "batch_size": summary["batch_size"], "rss_driver_mb": summary["peak_rss_mb"]["driver"],
            "rss_worker_mb": summary["peak_rss_mb"]["worker"]}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="10000,100000,1000000")
    ap.add_argument("--jsonl-sizes", default="1000,10000,100000", help="sizes also run through judge --jsonl")
    ap.add_argument("--heads", type=int, default=2000)
    ap.add_argument("--runners", help="only these runners (comma list, e.g. 'pool 2 processes')")
    ap.add_argument("--out", help="write the rows as JSON here (with --runners: replace only those rows)")
    args = ap.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="bulk-bench-"))
    base = {**os.environ, "SYSTEM1_STATE_DIR": str(workdir / "state"), "XDG_CONFIG_HOME": str(workdir / "xdg"),
            "SYSTEM1_SERVE_AUTOSTART": "0", "RAY_USAGE_STATS_ENABLED": "0"}
    rows: list[dict] = []
    plans = [("mock", int(n)) for n in sorted({*args.sizes.split(","), *args.jsonl_sizes.split(",")}, key=int)]
    if args.heads:
        plans.append(("embedded heads", args.heads))
    jsonl_sizes = {int(n) for n in args.jsonl_sizes.split(",")}
    print(f"{'engine':<15} {'rows':>8} {'runner':<17} {'wall s':>8} {'rows/s':>8} {'judging s':>10} "
          f"{'rows/s':>8} {'batch':>6} {'RSS drv':>8} {'RSS wkr':>8}", flush=True)
    for engine, n in plans:
        source = workdir / f"in-{engine.split()[0]}-{n}.jsonl"
        write_rows(source, n, builtin=engine != "mock")
        env = {**base, "SYSTEM1_PROVIDER": "mock" if engine == "mock" else "embedded"}
        kinds = ["ray 1 actor", "ray 2 actors", "pool 2 processes"]
        if engine != "mock" or n in jsonl_sizes:
            kinds.append("judge --jsonl")
        if engine == "mock" and str(n) not in args.sizes.split(","):
            kinds = ["ray 2 actors", "judge --jsonl"]  # only for the crossover
        if args.runners:
            kinds = [k for k in kinds if k in args.runners.split(",")]
        for kind in kinds:
            row = {"engine": engine, **run_one(kind, source, workdir, env, n)}
            rows.append(row)
            print(f"{engine:<15} {n:>8} {kind:<17} {row['wall_s']:>8.2f} {row['rows_per_s']:>8.1f} "
                  f"{row.get('judging_s', float('nan')):>10.2f} {row.get('judging_rows_per_s', float('nan')):>8.1f} "
                  f"{row.get('batch_size', ''):>6} {row.get('rss_driver_mb', float('nan')):>8.1f} "
                  f"{row.get('rss_worker_mb', float('nan')):>8.1f}", flush=True)
        source.unlink()
    if args.out:
        if args.runners and Path(args.out).exists():  # a partial re-run keeps the other rows, in order
            fresh = {(r["engine"], r["rows"], r["runner"]): r for r in rows}
            old = json.loads(Path(args.out).read_text())["rows"]
            rows = [fresh.pop((r["engine"], r["rows"], r["runner"]), r) for r in old] + list(fresh.values())
        Path(args.out).write_text(json.dumps({"cpus": os.cpu_count(), "rows": rows}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
