"""A stronger reader for the routing heads: what a words block, structure features and
an n-gram model stacked with or beside the embedding head change, measured as
scripts/routing_study.py measures (docs/studies/routing-reader.md).

    python scripts/reader_study.py [--tasks read_only ...] [--variants base +words ...]
                                   [--out docs/studies/routing-reader.json] [--cache /tmp/reader-cache]

Every variant is trained on the project's own data plus the real prompts of the training
repositories, reads the "mix" embedding, and has its temperature fitted on the real training
prompts' out-of-fold answers (the shipped recipe, `+real/mix/T`). Hyper-parameters, the words
block's weight and the ensemble's blend are chosen by cross-validation on the training data
only; the real held-out repositories (train_builtin_heads.real_held_out) are scored once.
Dev CV is the 5-fold nested cross-validation over the dev items that train_builtin_heads reports.

  base      the shipped recipe: [embedding, char 3-5-grams x w, option similarities]
  +words    the same plus the words block (heads.word_features: word 1-2-grams, opening words,
            structure features) x w', w' in fit.WORDS_WEIGHTS (0 = without it) chosen by CV
  +struct   the same with only the structure features of the words block
  ngrams    no embedding: chars and the words block alone (a reference)
  ensemble  the base head's and the ngrams model's logits averaged, the blend chosen on the
            training rows' out-of-fold logits

Embeddings are computed once per text and kept in --cache (an npz of first-window and whole-text
MiniLM embeddings keyed by the text's sha256): rerunning reads them back.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
from scipy import sparse

sys.path.insert(0, str(Path(__file__).resolve().parent))

import train_builtin_heads as tbh
from system1_gateway.learn import fit, metrics
from system1_gateway.learn.metrics import fit_temperature
from system1_gateway.model import builtins
from system1_gateway.model.requests import parse_judge
from system1_gateway.providers.embedded.heads import STRUCT, WORD_DIM, option_texts, softmax

TASKS = ["read_only", "design", "review", "specified"]
VARIANTS = ("base", "+words", "+struct", "ngrams", "ensemble")


def struct_only(X: fit.Features) -> fit.Features:
    """The words block with only its structure columns."""
    assert X.words is not None
    keep = np.zeros(WORD_DIM, np.float32)
    keep[WORD_DIM - len(STRUCT):] = 1
    return fit.Features(X.emb, X.chars, X.sims, X.weight, (X.words @ sparse.diags(keep)).tocsr())


def no_embedding(X: fit.Features) -> fit.Features:
    return fit.Features(np.zeros_like(X.emb), X.chars, np.zeros_like(X.sims), X.weight, X.words)


def scores(probs: np.ndarray, y: np.ndarray) -> dict:
    return {**metrics.summary(probs, y), "at_bar": {"coverage": round(float((probs.max(1) >= 0.8).mean()), 4)}}


def by_source(probs: np.ndarray, y: np.ndarray, sources: list[str]) -> dict:
    """Held-out accuracy per source folder (a folder added later is told apart from the others)."""
    out = {}
    for source in sorted(set(sources)):
        rows = np.array([s == source for s in sources])
        out[source] = {"n": int(rows.sum()), "accuracy": round(metrics.accuracy(probs[rows], y[rows]), 4)}
    return out


def probs_of(logits: np.ndarray, T: float) -> np.ndarray:
    return np.apply_along_axis(softmax, 1, logits / T)


def ensemble_fit(X: fit.Features, y: np.ndarray, t_rows: np.ndarray | None, words: tuple[float, ...]):
    """(predict(X) -> probabilities, chosen blend): the base head and the n-gram model, their
    logits blended with weight a on the base, a and the temperature chosen on out-of-fold logits."""
    cb = fit.select(X, y, 2)
    Xn = no_embedding(X)
    cn = fit.select(Xn, y, 2, words=words)
    best = (np.inf, 1.0)
    for a in np.linspace(0, 1, 11):
        z = a * cb.oof_logits / cb.temperature + (1 - a) * cn.oof_logits / cn.temperature
        T = fit_temperature(z, y)
        loss = metrics.nll(probs_of(z, T), y)
        if loss < best[0] - 1e-9:
            best = (loss, float(a))
    a = best[1]
    z = a * cb.oof_logits / cb.temperature + (1 - a) * cn.oof_logits / cn.temperature
    rows = t_rows if t_rows is not None and len(t_rows) else np.arange(len(y))
    T = fit_temperature(z[rows], y[rows])
    lb = fit._fit(X, y, 2, cb.chars_weight, cb.C)
    ln = fit._fit(Xn, y, 2, cn.chars_weight, cn.C, cn.words_weight)

    def predict(Z: fit.Features) -> np.ndarray:
        zz = a * lb.logits(Z) / cb.temperature + (1 - a) * ln.logits(no_embedding(Z)) / cn.temperature
        return probs_of(zz, T)
    return predict, {"a": a, "T": round(T, 4), "base": [cb.chars_weight, cb.C], "ngrams": [cn.chars_weight, cn.C,
                                                                                           cn.words_weight]}


def ensemble_cv(X_dev: fit.Features, y_dev: np.ndarray, extra: fit.Features, extra_y: np.ndarray,
                words: tuple[float, ...]) -> np.ndarray:
    out = np.zeros((len(y_dev), 2))
    for train, test in fit._folds(y_dev, 5, 0):
        Xt = fit.Features.join(X_dev.take(train), extra)
        yt = np.concatenate([y_dev[train], extra_y])
        predict, _ = ensemble_fit(Xt, yt, None, words)
        out[test] = predict(X_dev.take(test))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tasks", nargs="+", default=TASKS, choices=TASKS)
    ap.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=list(VARIANTS))
    ap.add_argument("--no-dev-cv", action="store_true", help="skip the (slow) nested dev CV")
    ap.add_argument("--out", type=Path, default=tbh.ROOT / "docs" / "studies" / "routing-reader.json")
    ap.add_argument("--cache", type=Path, default=Path("/tmp/reader-cache"))
    ap.add_argument("--embed-only", action="store_true", help="fill the embedding cache and exit")
    args = ap.parse_args()
    cache = tbh.EmbeddingCache(args.cache)
    words_grid = fit.WORDS_WEIGHTS
    report: dict = json.loads(args.out.read_text()) if args.out.exists() else {}
    report.setdefault("tasks", {})
    report["sources"] = tbh.real_sources()
    for task in args.tasks:
        b = builtins.BUILTINS[task]
        options = option_texts(parse_judge({"state": "", "questions": {"q": b.question()}}).questions["q"])
        dev, own, _ = tbh.load(task, real=False)
        _, real, _ = tbh.load(task, own_sources=False)
        test = tbh.real_test(task)
        if args.embed_only:
            cache.fill([d["state"] for d in dev + own + real + test] + options)
            continue
        ys = {k: np.array([0 if d["expected"] else 1 for d in rows]) for k, rows in
              (("dev", dev), ("own", own), ("real", real), ("test", test))}

        def feats(rows: list[dict]) -> fit.Features:
            return fit.featurize([d["state"] for d in rows], cache.mix, options, words=True)

        X_dev, X_own, X_real, X_test = feats(dev), feats(own), feats(real), feats(test)
        X_train = fit.Features.join(fit.Features.join(X_dev, X_own), X_real)
        y_train = np.concatenate([ys["dev"], ys["own"], ys["real"]])
        t_rows = np.arange(len(y_train) - len(real), len(y_train))
        extra = fit.Features.join(X_own, X_real)
        extra_y = np.concatenate([ys["own"], ys["real"]])
        entry = report["tasks"].setdefault(task, {})
        entry["n"] = {k: int(len(v)) for k, v in ys.items()}
        for name in args.variants:
            t0 = time.perf_counter()
            out: dict = {}
            if name == "ensemble":
                predict, out["chosen"] = ensemble_fit(X_train, y_train, t_rows, words_grid)
                out["_probs"] = predict(X_test)
                out["test"] = scores(out["_probs"], ys["test"])
                if not args.no_dev_cv:
                    out["dev_cv"] = metrics.summary(ensemble_cv(X_dev, ys["dev"], extra, extra_y, words_grid), ys["dev"])
            else:
                tf = {"base": lambda X: X, "+words": lambda X: X, "+struct": struct_only, "ngrams": no_embedding}[name]
                words = (0.0,) if name == "base" else words_grid
                grid = (fit.CHARS_WEIGHTS, fit.CS) if name == "base" else fit.WORDS_GRID
                head = fit.fit_head(tf(X_train), y_train, ["true", "false"], {"name": b.name},
                                    temperature_rows=t_rows, words=words, grid=grid)
                out["_probs"] = fit.head_probs(tf(X_test), head)
                out["test"] = scores(out["_probs"], ys["test"])
                out["chosen"] = {"chars_weight": head.meta["chars_weight"], "C": head.meta["C"],
                                 "words_weight": head.words_weight, "T": head.temperature}
                if not args.no_dev_cv:
                    _, cal = fit.cross_validate(tf(X_dev), ys["dev"], 2, extra=tf(extra), extra_y=extra_y,
                                                words=words, grid=grid)
                    out["dev_cv"] = metrics.summary(cal, ys["dev"])
            out["test_by_source"] = by_source(out.pop("_probs"), ys["test"], [d["source"] for d in test])
            out["seconds"] = round(time.perf_counter() - t0, 1)
            entry[name] = out
            print(f"{task:<10} {name:<9} held-out acc {out['test']['accuracy']:.3f} ECE {out['test']['ece']:.3f}"
                  + (f"  dev cv {out['dev_cv']['accuracy']:.3f}" if "dev_cv" in out else "")
                  + f"  {out['chosen']}  ({out['seconds']} s)", flush=True)
            args.out.write_text(json.dumps(report, indent=1) + "\n")
    if args.embed_only:
        print("cache", cache.path, len(cache.first), "texts")
    return 0


if __name__ == "__main__":
    sys.exit(main())
