"""`system1 bench`: which engine? Several rungs over the same frozen labelled sets.

    system1 bench SET.jsonl [SET2.jsonl …] --providers A,B,… --out DIR [--limit N] [--min-confidence X]

Each set is in the dev.jsonl shape (`{"id"?, "task"?, "state", "question", "expected"}`).
Every item is asked of every provider (a rung name as configured, or a provider kind), one
request each, through the gateway as it serves (calibration and thresholds included). Per
provider × task: accuracy with a bootstrap 95 % interval, ECE, the abstention rate at the
threshold, p50 / p95 latency and tokens where the engine reports them; macro accuracy over
tasks. Writes `DIR/results.json`, `DIR/hero.png` (accuracy against median latency, log
axis, one point per engine), `DIR/heatmap.png` (provider × task) and `DIR/reliability.png`.

Resumable: each answer is cached in `DIR/cache.jsonl` under a hash of (provider, its model
settings, request); a second run asks only what is missing. Failed requests are not cached.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

from .. import bounded_json

EXIT_OK, EXIT_INVALID = 0, 2
BOOTSTRAP = 1000


class Refused(ValueError):
    pass


def read_sets(paths: list[str], limit: int | None) -> tuple[list[dict[str, Any]], list[str]]:
    """Items of every set (task defaults to the file's stem), checked as teach checks them."""
    from .labelled import read_labels

    items, rejected = [], []
    for name in paths:
        path = Path(name)
        if not path.exists():
            raise Refused(f"{name}: does not exist")
        groups, bad = read_labels(path)
        rejected += bad
        raw = [bounded_json.loads(line) for line in path.read_text(encoding="utf-8-sig").splitlines() if line.strip()
               and _is_json(line)]
        per_task: dict[str, int] = defaultdict(int)
        for g in groups.values():
            for state, y, number in zip(g.states, g.y, g.lines, strict=True):
                item = raw[number - 1] if number - 1 < len(raw) else {}
                task = str(item.get("task") or path.stem)
                if limit and per_task[task] >= limit:
                    continue
                per_task[task] += 1
                items.append({"set": path.name, "task": task, "id": str(item.get("id") or f"{path.name}:{number}"),
                              "state": state, "question": g.question.model_dump(mode="json", exclude_none=True),
                              "y": y})
    return items, rejected


def _is_json(line: str) -> bool:
    try:
        return isinstance(bounded_json.loads(line), dict)
    except ValueError:
        return False


class Cache:
    """Answers by request hash, appended as they come (a crash loses at most one)."""

    def __init__(self, path: Path):
        self.path = path
        self.rows: dict[str, dict[str, Any]] = {}
        if path.exists():
            for line in path.read_text(encoding="utf-8").splitlines():
                try:
                    row = bounded_json.loads(line)
                except ValueError:
                    continue  # a line cut by a crash
                if isinstance(row, dict) and isinstance(row.get("key"), str):
                    self.rows[row["key"]] = row

    def add(self, row: dict[str, Any]) -> None:
        self.rows[row["key"]] = row
        with open(self.path, "a", encoding="utf-8") as f:
            f.write(json.dumps(row) + "\n")


def request_key(provider: str, settings: dict[str, Any], payload: dict[str, Any]) -> str:
    blob = json.dumps([provider, settings, payload], sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:32]


def ask_all(items: list[dict[str, Any]], providers: list[str], cache: Cache, threshold: float | None,
            console: Any) -> tuple[list[dict[str, Any]], int]:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeRemainingColumn

    from ..config.settings import load_config
    from ..daemon import dispatch
    from ..model.requests import answer_labels, parse_judge

    config = load_config()
    rows, failed = [], 0
    with dispatch.gateway(config, record=False) as gw, Progress("{task.description}", BarColumn(), MofNCompleteColumn(),
                                         TimeRemainingColumn(), console=console, transient=True) as bar:
        for provider in providers:
            gw.override(provider, "--providers")  # an unknown rung fails before any work
        for provider in providers:
            settings = {"kind": config.kind_of(provider), **config.provider_settings(provider)}
            settings = {k: v for k, v in settings.items() if "key" not in k.lower()}  # never a secret in a hash
            payloads = [{"state": it["state"], "questions": {"q": it["question"]}} for it in items]
            if threshold is not None:
                for p in payloads:
                    p["min_confidence"] = threshold
            keys = [request_key(provider, settings, p) for p in payloads]
            todo = [i for i, k in enumerate(keys) if k not in cache.rows]
            task = bar.add_task(f"{provider}", total=len(todo))
            if todo:
                distinct = {json.dumps(items[i]["question"], sort_keys=True): items[i]["question"] for i in todo}
                gw.settle(list(distinct.values()), provider)  # load and prepare outside the timings
            for i in todo:
                t0 = time.perf_counter()
                result = gw.judge(payloads[i], provider=provider)
                ms = (time.perf_counter() - t0) * 1000
                bar.advance(task)
                if result["status"] != "answered":
                    failed += 1
                    continue
                answer = result["answers"]["q"]
                if answer.get("type") == "refusal":
                    failed += 1
                    continue
                labels = answer_labels(parse_judge({"state": "x", "questions": {"q": items[i]["question"]}})
                                       .questions["q"])
                cache.add({"key": keys[i], "provider": provider, "model": answer.get("model") or result["model"],
                           "probs": [answer["probabilities"][lab] for lab in labels], "abstained": answer["abstained"],
                           "ms": round(ms, 2), "tokens": result["usage"]})
            for i, k in enumerate(keys):
                if k in cache.rows:
                    rows.append({**cache.rows[k], "task": items[i]["task"], "id": items[i]["id"], "y": items[i]["y"]})
    return rows, failed


def _bootstrap(right: np.ndarray, seed: int = 0) -> tuple[float, float]:
    if not len(right):
        return float("nan"), float("nan")
    rng = np.random.default_rng(seed)
    means = rng.choice(right, size=(BOOTSTRAP, len(right)), replace=True).mean(axis=1)
    return float(np.quantile(means, 0.025)), float(np.quantile(means, 0.975))


def score(rows: list[dict[str, Any]]) -> dict[str, Any]:
    from . import metrics

    out: dict[str, Any] = {}
    by: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        by[(r["provider"], r["task"])].append(r)
    for provider in dict.fromkeys(r["provider"] for r in rows):
        tasks = {}
        for (p, task), rs in sorted(by.items()):
            if p != provider:
                continue
            width = max(len(r["probs"]) for r in rs)
            probs = np.array([r["probs"] + [0.0] * (width - len(r["probs"])) for r in rs])
            y = np.array([r["y"] for r in rs])
            right = (probs.argmax(axis=1) == y).astype(float)
            lo, hi = _bootstrap(right)
            ms = [r["ms"] for r in rs]
            tokens = [sum(v for v in (r.get("tokens") or {}).values() if isinstance(v, int)) for r in rs]
            tasks[task] = {"n": len(rs), "accuracy": round(float(right.mean()), 4), "ci95": [round(lo, 4), round(hi, 4)],
                           "ece": round(metrics.ece(probs, y), 4),
                           "abstained": round(sum(r["abstained"] for r in rs) / len(rs), 4),
                           "p50_ms": round(statistics.median(ms), 2),
                           "p95_ms": round(sorted(ms)[min(len(ms) - 1, int(0.95 * len(ms)))], 2),
                           "tokens": sum(tokens) if any(tokens) else None}
        accs = [t["accuracy"] for t in tasks.values()]
        all_ms = [r["ms"] for r in rows if r["provider"] == provider]
        models = sorted({r["model"] for r in rows if r["provider"] == provider})
        out[provider] = {"models": models, "macro": round(sum(accs) / len(accs), 4) if accs else None,
                         "p50_ms": round(statistics.median(all_ms), 2) if all_ms else None, "tasks": tasks}
    return out


def plots(results: dict[str, Any], rows: list[dict[str, Any]], out: Path) -> list[str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from . import calibration_fit as cf

    written = []
    fig, ax = plt.subplots(figsize=(7, 4.5))
    placed: list[tuple[float, float]] = []  # (log10 x, y) of labels drawn so far
    points = [(p, max(r["p50_ms"], 0.01), r["macro"]) for p, r in results.items()
              if r["p50_ms"] is not None and r["macro"] is not None]
    for provider, x, y in sorted(points, key=lambda point: -point[2]):
        ax.scatter([x], [y], s=60)
        # engines of similar speed and accuracy sit on top of each other: a label that would
        # overlap one already drawn goes below its point instead
        crowded = any(abs(math.log10(x) - lx) < 0.25 and abs(y - ly) < 0.05 for lx, ly in placed)
        ax.annotate(provider, (x, y), textcoords="offset points", xytext=(6, -12 if crowded else 4), fontsize=9)
        placed.append((math.log10(x), y))
    ax.set_xscale("log")
    ax.set(title="Accuracy against median latency", xlabel="median latency per decision (ms, log scale)",
           ylabel="macro accuracy over tasks", ylim=(0, 1.02))
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(out / "hero.png", dpi=120)
    plt.close(fig)
    written.append(str(out / "hero.png"))
    providers = list(results)
    tasks = sorted({t for r in results.values() for t in r["tasks"]})
    grid = np.array([[results[p]["tasks"].get(t, {}).get("accuracy", np.nan) for t in tasks] for p in providers])
    fig, ax = plt.subplots(figsize=(1.0 + 0.9 * len(tasks), 1.2 + 0.5 * len(providers)))
    im = ax.imshow(grid, vmin=0, vmax=1, cmap="RdYlGn", aspect="auto")
    ax.set_xticks(range(len(tasks)), tasks, rotation=45, ha="right", fontsize=8)
    ax.set_yticks(range(len(providers)), providers, fontsize=8)
    for i in range(len(providers)):
        for j in range(len(tasks)):
            if not np.isnan(grid[i, j]):
                ax.text(j, i, f"{grid[i, j]:.2f}", ha="center", va="center", fontsize=7)
    ax.set_title("Accuracy per task")
    fig.colorbar(im, ax=ax, fraction=0.03)
    fig.tight_layout()
    fig.savefig(out / "heatmap.png", dpi=120)
    plt.close(fig)
    written.append(str(out / "heatmap.png"))
    panels = []
    for provider in providers:
        rs = [r for r in rows if r["provider"] == provider]
        width = max(len(r["probs"]) for r in rs)
        probs = np.array([r["probs"] + [0.0] * (width - len(r["probs"])) for r in rs])
        y = np.array([r["y"] for r in rs])
        panels.append((provider, probs, probs, y))
    if panels and cf.reliability_png(panels, str(out / "reliability.png")):
        written.append(str(out / "reliability.png"))
    return written


def table(results: dict[str, Any]) -> Any:
    from rich.table import Table

    tasks = sorted({t for r in results.values() for t in r["tasks"]})
    t = Table(title="bench: accuracy per task [95 % interval]; macro; median latency")
    t.add_column("provider")
    for task in tasks:
        t.add_column(task, justify="right")
    t.add_column("macro", justify="right")
    t.add_column("p50 ms", justify="right")
    for provider, r in results.items():
        cells = []
        for task in tasks:
            s = r["tasks"].get(task)
            cells.append(f"{s['accuracy']:.2f} [{s['ci95'][0]:.2f}–{s['ci95'][1]:.2f}]" if s else "–")
        t.add_row(provider, *cells, f"{r['macro']:.3f}" if r["macro"] is not None else "–",
                  f"{r['p50_ms']:.1f}" if r["p50_ms"] is not None else "–")
    return t


def run(args: argparse.Namespace) -> int:
    from rich.console import Console

    console = Console(stderr=True, width=None if sys.stderr.isatty() else 160)
    try:
        if args.limit is not None and args.limit < 1:
            raise Refused(f"--limit: expected a count ≥ 1, got {args.limit}")
        if args.min_confidence is not None and not 0 <= args.min_confidence <= 1:
            raise Refused(f"--min-confidence: expected a share in [0, 1], got {args.min_confidence}")
        providers = [p.strip() for p in args.providers.split(",") if p.strip()]
        if not providers or len(set(providers)) != len(providers):
            raise Refused(f"--providers: expected distinct rung names, comma-separated, got {args.providers!r}")
        items, rejected = read_sets(args.sets, args.limit)
        for message in rejected[:10]:
            console.print(f"[yellow]skipped[/yellow] {message}")
        if not items:
            raise Refused("no labelled item in the sets")
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        rows, failed = ask_all(items, providers, Cache(out / "cache.jsonl"), args.min_confidence, console)
    except Refused as exc:
        console.print(f"[red]bench:[/red] {exc}")
        return EXIT_INVALID
    except Exception as exc:  # a config or --providers error: say it, no trace
        from ..model.errors import GatewayError

        if not isinstance(exc, GatewayError):
            raise
        console.print(f"[red]bench:[/red] {exc.message}")
        return EXIT_INVALID
    results = score(rows)
    written = plots(results, rows, out) if rows else []
    (out / "results.json").write_text(json.dumps({"sets": args.sets, "providers": providers, "items": len(items),
                                                  "failed_requests": failed, "results": results}, indent=1))
    console.print(table(results))
    console.print(f"results: {out / 'results.json'}; plots: {', '.join(written)}"
                  + (f"; {failed} requests failed (not cached: a rerun asks them again)" if failed else ""))
    return EXIT_OK if not rejected else EXIT_INVALID
