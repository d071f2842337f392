"""Bias corrections of the embedded engine compared on the dev set, from one pass of raw scores.

    python benchmarks/embedded_correction.py [--raw raw.json] [--recompute]

Pass 1 (skipped when `--raw` exists, unless `--recompute`) asks both tiers every dev item
with no correction and records the raw probability vectors, plus each question's raw answers
to the reference texts of each candidate correction: content-free inputs, the question's own
option descriptions (the chosen correction, prior.py), and a fixed generic batch of agent
texts (POOL below, written without looking at dev). Pass 2 replays the `auto` routing of the provider
(fast first; fast alone at max p ≥ fast_accept, else the llm+fast geometric blend) on those
vectors under each correction and prints per-task accuracy, macro accuracy, pooled ECE, and
the macro accuracy on two halves of the set (CRC32 of the id), so a choice made on the whole
set can be checked on each half.

Corrections: none; the former running prior (mean of earlier answers, K = 8, after 8; it
depends on the stream, so the shuffled seed-0 order of embedded_dev.py, the grouped order
and a shuffled stream after a 40-item one-class flood per question are replayed);
contextual calibration with several content-free sets; the definitions reference; the
generic batch. Latency is not replayed: embedded_dev.py measures it end to end.

All figures are in-sample: dev is the set the prompts and constants were developed on.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
import zlib
from collections import defaultdict
from pathlib import Path

import numpy as np

from embedded_dev import DEV, ece
from system1_gateway.model.render import render
from system1_gateway.model.requests import parse_judge
from system1_gateway.providers.embedded import NO_STATE, EmbeddedProvider, describable, fast_texts, prompts
from system1_gateway.providers.embedded.prior import definitions

CONTENT_FREE = ["N/A", "", "[MASK]", NO_STATE]
POOL = [  # a fixed batch of typical coding-agent texts, mixed kinds, none from dev
    "ls -la src/", "git status", "rm -rf dist/", "git push --force origin feature/login",
    "cat config/settings.yaml", "npm install", "DELETE FROM sessions WHERE expires_at < now();", "docker ps -a",
    "Explain what the retry decorator in utils/net.py does.",
    "Add a unit test for the date parser and fix the failing case.",
    "Refactor the payment service to use async I/O.",
    "Why does the CI build fail on Windows?",
    "The checkout page is broken on mobile and customers are complaining.",
    "Could you update the README when you get a chance?",
    "Production is down: every API call returns 502!",
    "Thanks, the fix works great now.",
    "def add(a, b):\n    return a + b",
    "ERROR 2024-05-01 12:00:03 worker-3: timeout contacting redis at 10.0.0.5:6379",
    "read_file(path='src/app/main.py')",
    "Build a small REST endpoint that lists orders, with pagination.",
    "This is the third time the export has lost my data. I am furious.",
    "Meeting notes: we agreed to ship the beta next Tuesday.",
    "SELECT count(*) FROM users;",
    "Search the codebase for every call to legacy_auth().",
]
RAW = Path(tempfile.gettempdir()) / "system1-embedded-correction-raw.json"


def collect(items: list[dict]) -> dict:
    provider = EmbeddedProvider("embedded", {"tier": "auto", "prior": False, "heads": False})
    provider.warm()
    llm, fast = provider._llm_engine(), provider._fast_engine()
    questions: dict[str, dict] = {}
    rows = []
    t0 = time.perf_counter()
    for n, item in enumerate(items, 1):
        q = parse_judge({"state": item["state"], "questions": {"q": item["question"]}}).questions["q"]
        state_text = render(item["state"]) or NO_STATE
        prefix, options = prompts.build(q)
        task = item["task"]
        if task not in questions:
            entry: dict = {"describable": describable(q)}
            for name, texts in (("content_free", CONTENT_FREE), ("definitions", definitions(q) or []), ("pool", POOL)):
                entry[name] = {"llm": [llm.option_probs(prefix, prompts.suffix(t), options, 300).tolist() for t in texts],
                               "fast": [fast.option_probs(t, fast_texts(q)[1]).tolist() for t in texts] if describable(q) else []}
            questions[task] = entry
        row = {"id": item["id"], "task": task, "type": q.type, "expected": item["expected"],
               "labels": ["true", "false"] if q.type == "noul" else list(q.labels),
               "llm": llm.option_probs(prefix, prompts.suffix(state_text), options, 300).tolist()}
        if describable(q):
            row["fast"] = fast.option_probs(state_text, fast_texts(q)[1]).tolist()
        rows.append(row)
        if n % 50 == 0:
            print(f"  {n}/{len(items)} items, {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    return {"questions": questions, "rows": rows}


def blend(a: np.ndarray, b: np.ndarray, w: float) -> np.ndarray:
    logp = (1 - w) * np.log(np.maximum(a, 1e-12)) + w * np.log(np.maximum(b, 1e-12))
    p = np.exp(logp - logp.max())
    return p / p.sum()


def divide(p: np.ndarray, ref: np.ndarray) -> np.ndarray:
    out = p / np.maximum(ref, 1e-9)
    return out / out.sum()


class Running:
    """The former RunningPrior (K pseudo-counts toward uniform, applied after min_count)."""

    def __init__(self, k: float = 8.0, min_count: int = 8):
        self.k, self.min_count = k, min_count
        self.sums: dict[str, np.ndarray] = {}
        self.counts: dict[str, int] = defaultdict(int)

    def __call__(self, key: str, p: np.ndarray) -> np.ndarray:
        out, count = p, self.counts[key]
        if count >= self.min_count:
            mean = (self.sums[key] + self.k / len(p)) / (count + self.k)
            out = divide(p, mean)
        self.sums[key] = self.sums.get(key, 0) + p
        self.counts[key] = count + 1
        return out


def replay(data: dict, order: list[int], llm_fix, fast_fix, accept: float = 0.9, weight: float = 0.3) -> list[dict]:
    """Final probabilities per item under the provider's auto routing."""
    out = []
    for i in order:
        row = data["rows"][i]
        task = row["task"]
        if "fast" in row:
            fast = fast_fix(task, np.array(row["fast"]))
            if fast.max() >= accept:
                probs, route = fast, "fast"
            else:
                probs, route = blend(llm_fix(task, np.array(row["llm"])), fast, weight), "llm+fast"
        else:
            probs, route = llm_fix(task, np.array(row["llm"])), "llm"
        out.append({**row, "probs": probs, "route": route})
    return out


def score(results: list[dict]) -> dict:
    hits: dict[str, list[bool]] = defaultdict(list)
    pairs, halves = [], {0: defaultdict(list), 1: defaultdict(list)}
    for r in results:
        k = int(np.argmax(r["probs"]))
        if r["type"] == "noul":
            ok = (r["probs"][0] >= 0.5) == bool(r["expected"])
        elif r["type"] == "choice":
            ok = r["labels"][k] == r["expected"]
        else:
            ok = k == int(r["expected"])
        hits[r["task"]].append(ok)
        halves[zlib.crc32(r["id"].encode()) % 2][r["task"]].append(ok)
        pairs.append((float(np.max(r["probs"])), ok))
    per_task = {t: sum(v) / len(v) for t, v in sorted(hits.items())}
    half = [statistics.mean(sum(v) / len(v) for v in h.values()) for h in halves.values()]
    fast_share = sum(r["route"] == "fast" for r in results) / len(results)
    return {"per_task": per_task, "macro": statistics.mean(per_task.values()), "ece": ece(pairs),
            "halves": half, "fast": fast_share}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=DEV)
    ap.add_argument("--raw", type=Path, default=RAW, help="raw scores (written by pass 1, read by pass 2)")
    ap.add_argument("--recompute", action="store_true")
    args = ap.parse_args()

    items = [json.loads(line) for line in args.data.read_text().splitlines() if line.strip()]
    if args.recompute or not args.raw.exists():
        args.raw.write_text(json.dumps(collect(items)))
    data = json.loads(args.raw.read_text())
    qs = data["questions"]

    def ref(kind: str, tier: str, pick: list[int] | None = None, alpha: float = 1.0) -> dict[str, np.ndarray]:
        out = {}
        for t in qs:
            rows = qs[t][kind][tier]
            if rows:
                out[t] = np.mean([rows[i] for i in (pick if pick is not None else range(len(rows)))], axis=0) ** alpha
        return out

    def by(*refs: dict[str, np.ndarray]):
        table = {t: np.mean([r[t] for r in refs], axis=0) for t in refs[0]}
        return lambda task, p: divide(p, table[task]) if task in table else p

    zhao = [0, 1, 2]  # "N/A", "", "[MASK]"

    none = lambda task, p: p  # noqa: E731
    shuffled = list(range(len(items)))
    random.Random(0).shuffle(shuffled)  # the order embedded_dev.py uses (seed 0)
    grouped = list(range(len(items)))   # the file's order: each task in label-sorted runs
    def first_class(r: dict) -> bool:
        if r["type"] == "noul":
            return r["expected"] is True
        return r["expected"] == (r["labels"][0] if r["type"] == "choice" else 0)

    def running(flood: bool = False):
        llm_prior, fast_prior = Running(), Running()
        if flood:  # 40 decisions of one class per question first (true / first label / lowest level)
            for task in qs:
                same = [r for r in data["rows"] if r["task"] == task and first_class(r)]
                for i in range(40):
                    llm_prior("llm" + task, np.array(same[i % len(same)]["llm"]))
                    if "fast" in same[i % len(same)]:
                        fast_prior("fast" + task, np.array(same[i % len(same)]["fast"]))
        return (lambda task, p: llm_prior("llm" + task, p)), (lambda task, p: fast_prior("fast" + task, p))

    variants = [
        ("none (raw)", shuffled, none, none),
        ("running prior, shuffled stream (before)", shuffled, *running()),
        ("running prior, grouped stream", grouped, *running()),
        ("running prior, shuffled, after a flood", shuffled, *running(flood=True)),
        ('content-free ["N/A", "", "[MASK]"]', shuffled, by(ref("content_free", "llm", zhao)), by(ref("content_free", "fast", zhao))),
        ('content-free, llm only', shuffled, by(ref("content_free", "llm", zhao)), none),
        ('content-free ["N/A"]', shuffled, by(ref("content_free", "llm", [0])), by(ref("content_free", "fast", [0]))),
        ('content-free + "(no text)"', shuffled, by(ref("content_free", "llm")), by(ref("content_free", "fast"))),
        ('content-free, exponent 0.5', shuffled, by(ref("content_free", "llm", zhao, 0.5)), by(ref("content_free", "fast", zhao, 0.5))),
        ("generic batch (24 texts)", shuffled, by(ref("pool", "llm")), by(ref("pool", "fast"))),
        ("generic batch + definitions", shuffled, by(ref("pool", "llm"), ref("definitions", "llm")),
         by(ref("pool", "fast"), ref("definitions", "fast"))),
        ("definitions, llm only", shuffled, by(ref("definitions", "llm")), none),
        ("definitions (chosen)", shuffled, by(ref("definitions", "llm")), by(ref("definitions", "fast"))),
    ]
    tasks = sorted({r["task"] for r in data["rows"]})
    print("llm references per question (first option first): mean raw answer over dev | content-free | definitions")
    for t in tasks:
        dev_mean = np.mean([r["llm"] for r in data["rows"] if r["task"] == t], axis=0)
        fmt = lambda v: "[" + " ".join(f"{x:.2f}" for x in v) + "]"  # noqa: E731
        print(f"  {t:<12} {fmt(dev_mean)} | " + " ".join(f"{x!r}: {fmt(v)}" for x, v in
              zip(CONTENT_FREE[:3], qs[t]["content_free"]["llm"], strict=False)) + f" | {fmt(ref('definitions', 'llm')[t])}")
    print()
    print("in-sample: dev is the set the prompts and constants were developed on")
    print(f"{'correction':<46} " + " ".join(f"{t[:8]:>8}" for t in tasks) + "    macro   ECE  half A  half B  fast")
    replays = {}
    for name, order, llm_fix, fast_fix in variants:
        replays[name] = results = replay(data, order, llm_fix, fast_fix)
        s = score(results)
        print(f"{name:<46} " + " ".join(f"{s['per_task'][t]:>8.3f}" for t in tasks)
              + f"  {s['macro']:.3f} {s['ece']:.3f}  {s['halves'][0]:.3f}   {s['halves'][1]:.3f}  {s['fast']:.2f}")
    # What a flood does to individual answers under the running prior (the definitions
    # reference cannot move: it is a function of the question).
    calm = {r["id"]: r["probs"] for r in replays["running prior, shuffled stream (before)"]}
    flooded = {r["id"]: r["probs"] for r in replays["running prior, shuffled, after a flood"]}
    shift = sorted(float(np.abs(calm[i] - flooded[i]).max()) for i in calm)
    flips = sum(int(np.argmax(calm[i]) != np.argmax(flooded[i])) for i in calm)
    print(f"\nrunning prior, 40 one-class decisions per question before the same stream: {flips} of {len(calm)} "
          f"decisions change; probability shift median {statistics.median(shift):.3f}, max {shift[-1]:.3f}")

    # The routing constants under the chosen correction, on the whole set and on each half.
    chosen = (by(ref("definitions", "llm")), by(ref("definitions", "fast")))
    print("\ndefinitions: macro (half A / half B) by fast_weight (rows) and fast_accept (columns)")
    accepts = [0.8, 0.9, 0.95, 1.01]
    print("weight " + "".join(f"{'accept ' + str(a):>24}" for a in accepts))
    for w in (0.0, 0.1, 0.2, 0.3, 0.4, 0.5):
        cells = []
        for a in accepts:
            sc = score(replay(data, shuffled, *chosen, accept=a, weight=w))
            cells.append(f"{sc['macro']:.3f} ({sc['halves'][0]:.3f}/{sc['halves'][1]:.3f})")
        print(f"{w:>6} " + "".join(f"{c:>24}" for c in cells))
    return 0


if __name__ == "__main__":
    sys.exit(main())
