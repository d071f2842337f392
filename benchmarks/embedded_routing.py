"""The routing hook's request on the embedded engine: one `judge` with the four routing
questions (`read_only`, `design`, `review`, `specified` of dev.jsonl, their exact texts) over
one user prompt, through the real gateway at its default budgets (timeout_s 5, deadline_s 8).

    python benchmarks/embedded_routing.py [--limit N] [--phases warm,fresh] [--json out.json]

Phases, each in a new interpreter (what a daemon or a one-shot process starts from):
  * `warm`  — a state directory whose prefix KV files and bias references exist (a priming
              pass with generous budgets makes them), a new provider warmed with `warm()`,
              then per prompt: the four-question judge, and each question alone (the
              "one question on the same prompt" the target compares with);
  * `fresh` — a new, empty state directory (the assembled model file linked in, so the
              phase measures the questions' first use, not the 1.1 GB join), `warm()`, then
              the four-question judge per prompt: the first requests ever made with these
              questions.
Prints median / p95 / max latency, errors by code, the tiers that answered (from the
rationale), accuracy against the dev labels, side by side. Prompts: the dev prompts labelled
for all four routing questions (20, 3–28 words), in file order.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from bench_stats import pct

DEV = Path(__file__).resolve().parents[2] / "shared" / "data" / "dev.jsonl"
TASKS = ("read_only", "design", "review", "specified")


def load_prompts(path: Path) -> tuple[dict, list[tuple[str, dict]]]:
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    questions = {t: next(r["question"] for r in rows if r["task"] == t) for t in TASKS}
    labels: dict[str, dict] = {}
    for r in rows:
        if r["task"] in TASKS:
            labels.setdefault(r["state"], {})[r["task"]] = r["expected"]
    prompts = [(state, lab) for state, lab in labels.items() if len(lab) == len(TASKS)]
    return questions, prompts


def tier_of(answer: dict) -> str:
    head = (answer.get("rationale") or "").split(":", 1)[0]
    return head.removeprefix("embedded ") or "?"


def run_phase(phase: str, limit: int) -> dict:
    """In the child: the measurements of one phase, as JSON-able figures."""
    from system1_gateway.config.settings import Config, GatewaySettings
    from system1_gateway.core.gateway import Gateway
    from system1_gateway.providers.embedded import EmbeddedProvider

    questions, prompts = load_prompts(DEV)
    prompts = prompts[:limit] if limit else prompts
    if phase == "prime":  # generous budgets: computes prefixes and references once
        provider = EmbeddedProvider("embedded", {"heads": False})
        gateway = Gateway(Config(gateway=GatewaySettings(timeout_s=600, deadline_s=1200)), providers={"embedded": provider})
        provider.warm()
        for qid, q in questions.items():
            gateway.judge({"state": prompts[0][0], "questions": {qid: q}, "min_confidence": 0})
        gateway.judge({"state": prompts[0][0], "questions": questions, "min_confidence": 0})
        _settle(provider)
        return {}
    provider = EmbeddedProvider("embedded", {"heads": False})
    gateway = Gateway(Config(gateway=GatewaySettings()), providers={"embedded": provider})  # defaults: 5 s / 8 s
    if phase == "concurrent":
        provider.warm()
        return concurrent(provider, gateway, questions, [p for p, _ in prompts])
    t0 = time.perf_counter()
    provider.warm()
    out: dict = {"warm_s": time.perf_counter() - t0, "four": [], "single": []}
    for state, lab in prompts:
        t = time.perf_counter()
        result = gateway.judge({"state": state, "questions": questions, "min_confidence": 0})
        out["four"].append(_row(result, time.perf_counter() - t, lab))
        if phase == "warm":
            for qid, q in questions.items():
                t = time.perf_counter()
                result = gateway.judge({"state": state, "questions": {qid: q}, "min_confidence": 0})
                out["single"].append(_row(result, time.perf_counter() - t, {qid: lab[qid]}))
    return out


def concurrent(provider, gateway, questions: dict, states: list[str]) -> dict:
    """N clients at once, each one single-question judge (`specified`, tier llm so every
    request decodes) on its own prompt, served FIFO by the provider (one decode each); and,
    at engine level, the same N evidences decoded one after another against all N in one
    llama.cpp batch (LlmEngine.batch_probs): what batching concurrent requests would gain."""
    import threading

    from system1_gateway.model.requests import parse_judge
    from system1_gateway.providers.embedded import EmbeddedProvider
    from system1_gateway.providers.embedded import prompts as P

    question = {"specified": questions["specified"]}
    llm_only = EmbeddedProvider("embedded", {"tier": "llm", "heads": False})
    llm_only._llm = engine = provider._llm_engine()
    prefix, options = P.build(parse_judge({"state": "s", "questions": question}).questions["specified"])
    out: dict = {}
    for n in (2, 4):
        fifo_lat, fifo_wall, seq_wall, batch_wall = [], [], [], []
        for r in range(0, len(states) - n + 1, n):
            group = states[r:r + n]
            lat = [0.0] * n

            def client(i: int) -> None:
                t = time.perf_counter()
                llm_only.judge(parse_judge({"state": group[i], "questions": question}), 60)
                lat[i] = time.perf_counter() - t
            threads = [threading.Thread(target=client, args=(i,)) for i in range(n)]
            t = time.perf_counter()
            for th in threads:
                th.start()
            for th in threads:
                th.join()
            fifo_wall.append(time.perf_counter() - t)
            fifo_lat += lat
            t = time.perf_counter()
            for s in group:
                engine.option_probs(prefix, P.suffix(s), options, 60)
            seq_wall.append(time.perf_counter() - t)
            t = time.perf_counter()
            engine.batch_probs([(prefix, P.suffix(s), options) for s in group], 60)
            batch_wall.append(time.perf_counter() - t)
        out[n] = {"fifo_lat": fifo_lat, "fifo_wall": fifo_wall, "seq_wall": seq_wall, "batch_wall": batch_wall}
    return out


def _settle(provider) -> None:
    """Waits for background preparation (if the provider does any) to finish."""
    wait = getattr(provider, "wait_prepared", None)
    if wait is not None:
        wait(600)


def _row(result: dict, seconds: float, labels: dict) -> dict:
    row = {"s": seconds, "error": (result.get("error") or {}).get("code"), "tiers": [], "hits": {}}
    if result["status"] == "answered":
        for qid, answer in result["answers"].items():
            row["tiers"].append(tier_of(answer))
            if qid in labels:
                row["hits"][qid] = (answer["p_true"] >= 0.5) == bool(labels[qid])
    return row


def summarize(name: str, rows: list[dict]) -> None:
    secs = [r["s"] for r in rows]
    errors = Counter(r["error"] for r in rows if r["error"])
    tiers = Counter(t for r in rows for t in r["tiers"])
    hits: dict[str, list[bool]] = {}
    for r in rows:
        for qid, ok in r["hits"].items():
            hits.setdefault(qid, []).append(ok)
    acc = " ".join(f"{q}={sum(v) / len(v):.2f}" for q, v in sorted(hits.items()))
    print(f"{name:<28} n={len(rows):<3} p50 {statistics.median(secs) * 1000:7.0f} ms  p95 {pct(secs, 0.95) * 1000:7.0f} ms  "
          f"max {max(secs) * 1000:7.0f} ms  errors {sum(errors.values())}/{len(rows)} {dict(errors) or ''}")
    print(f"{'':<28} tiers {dict(tiers)}  accuracy {acc}")


def child(args: argparse.Namespace) -> int:
    print(json.dumps(run_phase(args.phase, args.limit)))
    return 0


def spawn(phase: str, state: Path, limit: int) -> dict:
    env = {**os.environ, "SYSTEM1_STATE_DIR": str(state)}
    proc = subprocess.run([sys.executable, __file__, "--phase", phase, "--limit", str(limit)],
                          env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.stderr.write(proc.stderr)
        raise SystemExit(f"phase {phase} failed")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def new_state(models: Path) -> Path:
    state = Path(tempfile.mkdtemp(prefix="system1-routing-"))
    (state / "models").symlink_to(models, target_is_directory=True)
    return state


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--limit", type=int, default=0, help="first N prompts only")
    ap.add_argument("--phases", default="warm,fresh", help="warm, fresh, concurrent (comma-separated)")
    ap.add_argument("--phase", help=argparse.SUPPRESS)
    ap.add_argument("--json", type=Path, help="also write the raw rows here")
    args = ap.parse_args()
    if args.phase:
        return child(args)

    from system1_gateway.providers.embedded import assets

    models = assets.gguf_path().parent  # joins and verifies once, outside every measurement
    load_before = os.getloadavg()[0]
    phases = args.phases.split(",")
    results: dict[str, dict] = {}
    states = []
    try:
        if "warm" in phases:
            state = new_state(models)
            states.append(state)
            spawn("prime", state, args.limit)
            results["warm"] = spawn("warm", state, args.limit)
        if "concurrent" in phases:
            if not states:
                states.append(new_state(models))
                spawn("prime", states[0], args.limit)
            results["concurrent"] = spawn("concurrent", states[0], args.limit)
        if "fresh" in phases:
            state = new_state(models)
            states.append(state)
            results["fresh"] = spawn("fresh", state, args.limit)
    finally:
        for state in states:
            shutil.rmtree(state, ignore_errors=True)

    print(f"load average (1 min) before / after: {load_before:.2f} / {os.getloadavg()[0]:.2f}; {os.cpu_count()} CPUs; "
          f"defaults timeout_s 5, deadline_s 8; tier auto")
    if "warm" in results:
        w = results["warm"]
        print(f"warm phase: warm() {w['warm_s']:.2f} s")
        summarize("warm, four questions", w["four"])
        summarize("warm, one question alone", w["single"])
        n = len(TASKS)
        ratios = [r["s"] / statistics.mean(s["s"] for s in w["single"][i * n:(i + 1) * n]) for i, r in enumerate(w["four"])]
        print(f"{'':<28} four / mean of one alone, same prompt: median {statistics.median(ratios):.2f}, "
              f"p95 {pct(ratios, 0.95):.2f} (target <= 1.5)")
    if "fresh" in results:
        f = results["fresh"]
        print(f"fresh phase: warm() {f['warm_s']:.2f} s")
        summarize("fresh state, four questions", f["four"])
    if "concurrent" in results:
        for n, c in results["concurrent"].items():
            print(f"{n} clients at once, one llm question each, served FIFO: per request p50 "
                  f"{statistics.median(c['fifo_lat']) * 1000:.0f} ms p95 {pct(c['fifo_lat'], 0.95) * 1000:.0f} ms, "
                  f"all {n} done p50 {statistics.median(c['fifo_wall']) * 1000:.0f} ms")
            print(f"{'':<4}engine only, the {n} evidences one after another p50 {statistics.median(c['seq_wall']) * 1000:.0f} ms "
                  f"p95 {pct(c['seq_wall'], 0.95) * 1000:.0f} ms | in one batch p50 {statistics.median(c['batch_wall']) * 1000:.0f} ms "
                  f"p95 {pct(c['batch_wall'], 0.95) * 1000:.0f} ms")
    if args.json:
        args.json.write_text(json.dumps(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
