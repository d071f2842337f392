"""The routing heads on real prompts: what the shipped heads score, what real training data and
whole-prompt reading change, and a learning curve (docs/studies/routing-real.md).

    python scripts/routing_study.py [--tasks read_only ...] [--out docs/studies/routing-real.json]

Real prompts are the `prompts-real-*` folders of data/heads/. They are split by repository
(train_builtin_heads.real_held_out: a stable hash of owner/name), so no repository's prompts are
on both sides; the held-out repositories are never trained or tuned on, here or in the shipped
heads. For each routing question it measures, on the real held-out split and on the project's
own dev items (5-fold nested CV, as train_builtin_heads does):

  shipped   the heads in the package before this study (first 256 tokens, our own data)
  own       retrained on our own data only (the same recipe; a check on `shipped`)
  +real     our own data plus the real training split, first 256 tokens
  +real/whole  the same, each prompt read whole (fast.embed_whole: up to 8 windows)
  +real/whole/T  the same, its temperature fitted on the real training split's out-of-fold answers
  +real/whole/T/w3  the same, each real prompt weighing three written ones in the fit
  +real/mix/T/w3  the same with the mean of the first-window and whole embeddings

and, for the last, a learning curve over the share of real training data.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import train_builtin_heads as tbh
from system1_gateway.learn import fit, metrics
from system1_gateway.model import builtins
from system1_gateway.model.requests import parse_judge
from system1_gateway.providers.embedded import usable_cpus
from system1_gateway.providers.embedded.fast import FastEngine
from system1_gateway.providers.embedded.heads import Head, option_texts

TASKS = ["read_only", "design", "review", "specified"]
BAR = 0.8  # [routing] min_confidence
# name: (reading, share of the real training split, temperature on real rows, weight of a real row)
SPECS = {"own": ("first", 0.0, False, 1.0), "+real": ("first", 1.0, False, 1.0),
         "+real/whole": ("whole", 1.0, False, 1.0), "+real/whole/T": ("whole", 1.0, True, 1.0),
         "+real/whole/T/w3": ("whole", 1.0, True, 3.0), "+real/mix/T": ("mix", 1.0, True, 1.0),
         "+real/mix/T/w2": ("mix", 1.0, True, 2.0), "+real/mix/T/w3": ("mix", 1.0, True, 3.0)}
VARIANTS = ("own", "+real", "+real/whole", "+real/whole/T", "+real/whole/T/w3", "+real/mix/T/w3")
DEV_CV = {"own", "+real/whole/T", "+real/whole/T/w3", "+real/mix/T", "+real/mix/T/w2", "+real/mix/T/w3"}


class Embeddings:
    """Each distinct text embedded once per reading (first window / whole)."""

    def __init__(self, engine: FastEngine):
        self.engine = engine
        self.cache: dict[tuple[str, str], np.ndarray] = {}

    def fn(self, mode: str):
        def embed(texts: list[str]) -> np.ndarray:
            if mode == "mix":  # the first window and the whole text, averaged
                a, b = self.fn("first")(texts), self.fn("whole")(texts)
                m = a + b
                return m / np.linalg.norm(m, axis=1, keepdims=True)
            todo = [t for t in dict.fromkeys(texts) if (mode, t) not in self.cache]
            run = self.engine.embed_whole if mode == "whole" else self.engine.embed
            for start in range(0, len(todo), 16):
                for t, v in zip(todo[start:start + 16], run(todo[start:start + 16]), strict=False):
                    self.cache[(mode, t)] = v
            return np.vstack([self.cache[(mode, t)] for t in texts])
        return embed


def at_bar(probs: np.ndarray, y: np.ndarray, bar: float = BAR) -> dict:
    sure = probs.max(axis=1) >= bar
    return {"coverage": round(float(sure.mean()), 4),
            "accuracy": round(float((probs[sure].argmax(1) == y[sure]).mean()), 4) if sure.any() else None}


def scores(probs: np.ndarray, y: np.ndarray) -> dict:
    return {**metrics.summary(probs, y), "at_bar": at_bar(probs, y),
            "reliability": [[round(c, 3), round(a, 3), n] for c, a, n in metrics.reliability(probs, y)]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tasks", nargs="+", default=TASKS, choices=TASKS)
    ap.add_argument("--out", type=Path, default=tbh.ROOT / "docs" / "studies" / "routing-real.json")
    ap.add_argument("--curve", nargs="+", type=float, default=[0.0, 0.25, 0.5, 1.0],
                    help="learning curve over the share of real training data, for the last variant")
    ap.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=list(SPECS))
    ap.add_argument("--write-set", type=Path, metavar="FILE",
                    help="only write the real held-out prompts as a `system1 bench` set (the dev.jsonl shape) and exit")
    args = ap.parse_args()
    if args.write_set:
        with open(args.write_set, "w", encoding="utf-8") as out:
            for task in args.tasks:
                question = builtins.BUILTINS[task].question()
                for i, row in enumerate(tbh.real_test(task)):
                    out.write(json.dumps({"id": f"{task}-{i:04d}", "task": task, "state": row["state"],
                                          "question": question, "expected": row["expected"]}) + "\n")
        print("written", args.write_set)
        return 0
    emb = Embeddings(FastEngine(usable_cpus()))
    report: dict = {"bar": BAR, "tasks": {}}
    for task in args.tasks:
        t0 = time.perf_counter()
        b = builtins.BUILTINS[task]
        options = option_texts(parse_judge({"state": "", "questions": {"q": b.question()}}).questions["q"])
        dev, own, dropped = tbh.load(task, real=False)
        _, real, _ = tbh.load(task, own_sources=False)
        real_test = tbh.real_test(task)
        train_real = [r for r in real if not r.get("held_out")]
        ys = {k: np.array([0 if d["expected"] else 1 for d in rows]) for k, rows in
              (("dev", dev), ("own", own), ("real", train_real), ("test", real_test))}
        entry: dict = {"n": {k: int(len(v)) for k, v in ys.items()}, "dropped": dropped,
                       "test_repos": len({r["repo"] for r in real_test})}

        def feats(rows: list[dict], mode: str) -> fit.Features:
            return fit.featurize([d["state"] for d in rows], emb.fn(mode), options)

        shipped = Head.load(tbh.SHIPPED_DIR / f"{b.name}.npz")
        entry["shipped"] = {"test": scores(fit.head_probs(feats(real_test, "first"), shipped), ys["test"])}

        def variant(mode: str, use_real: float, real_temperature: bool, dev_cv: bool = True,
                    real_weight: float = 1.0) -> dict:
            rng = np.random.default_rng(0)
            keep = np.sort(rng.permutation(len(train_real))[:int(round(use_real * len(train_real)))])
            rr = [train_real[i] for i in keep]
            X_dev, X_own, X_real = feats(dev, mode), feats(own, mode), feats(rr, mode)
            if real_weight != 1.0:
                X_real = X_real.weighted(real_weight)
            y_real = ys["real"][keep]
            X_train = fit.Features.join(fit.Features.join(X_dev, X_own), X_real)
            y_train = np.concatenate([ys["dev"], ys["own"], y_real])
            t_rows = np.arange(len(y_train) - len(y_real), len(y_train)) if real_temperature and len(y_real) else None
            head = fit.fit_head(X_train, y_train, ["true", "false"], {"name": b.name}, temperature_rows=t_rows)
            out = {"test": scores(fit.head_probs(feats(real_test, mode), head), ys["test"]),
                   "temperature": head.temperature, "chars_weight": head.meta["chars_weight"], "C": head.meta["C"],
                   "real_train": int(len(y_real))}
            if dev_cv:
                extra = fit.Features.join(X_own, X_real)
                _, cal = fit.cross_validate(X_dev, ys["dev"], 2, k=5, extra=extra,
                                            extra_y=np.concatenate([ys["own"], y_real]))
                out["dev_cv"] = metrics.summary(cal, ys["dev"])
            return out

        for key in args.variants:
            mode, use_real, real_t, weight = SPECS[key]
            entry[key] = variant(mode, use_real, real_t, real_weight=weight, dev_cv=key in DEV_CV)
        mode, _, real_t, weight = SPECS[args.variants[-1]]
        entry["curve"] = {str(f): variant(mode, f, real_t, dev_cv=False, real_weight=weight)["test"]
                          for f in args.curve}
        entry["seconds"] = round(time.perf_counter() - t0, 1)
        report["tasks"][task] = entry
        row = [entry["shipped"]["test"]] + [entry[k]["test"] for k in args.variants]
        print(f"{task:<10} real held-out n={len(real_test)}  acc " + "  ".join(f"{r['accuracy']:.3f}" for r in row)
              + "   ECE " + "  ".join(f"{r['ece']:.3f}" for r in row)
              + "   dev cv " + "  ".join(f"{entry[k]['dev_cv']['accuracy']:.3f}" for k in args.variants
                                         if "dev_cv" in entry[k]), flush=True)
    args.out.write_text(json.dumps(report, indent=1) + "\n")
    print("columns: shipped, " + ", ".join(args.variants) + "; dev cv of "
          + ", ".join(k for k in args.variants if k in DEV_CV) + "; written", args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
