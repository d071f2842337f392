"""Scores of probabilistic answers (numpy only): accuracy, ECE, Brier, NLL.

`probs` is (n, classes), `y` the index of the right class per row. ECE uses 10 equal-width
bins on the top-class probability.
"""

from __future__ import annotations

import numpy as np


def accuracy(probs: np.ndarray, y: np.ndarray) -> float:
    return float((probs.argmax(axis=1) == y).mean()) if len(y) else float("nan")


def ece(probs: np.ndarray, y: np.ndarray, bins: int = 10) -> float:
    if not len(y):
        return float("nan")
    conf = probs.max(axis=1)
    right = probs.argmax(axis=1) == y
    which = np.minimum((conf * bins).astype(int), bins - 1)
    total = 0.0
    for b in range(bins):
        sel = which == b
        if sel.any():
            total += abs(conf[sel].sum() - right[sel].sum())
    return float(total / len(y))


def brier(probs: np.ndarray, y: np.ndarray) -> float:
    onehot = np.eye(probs.shape[1])[y]
    return float(((probs - onehot) ** 2).sum(axis=1).mean())


def nll(probs: np.ndarray, y: np.ndarray) -> float:
    return float(-np.log(np.maximum(probs[np.arange(len(y)), y], 1e-12)).mean())


def reliability(probs: np.ndarray, y: np.ndarray, bins: int = 10) -> list[tuple[float, float, int]]:
    """(mean confidence, accuracy, count) per non-empty bin: a reliability diagram's points."""
    conf = probs.max(axis=1)
    right = probs.argmax(axis=1) == y
    which = np.minimum((conf * bins).astype(int), bins - 1)
    return [(float(conf[which == b].mean()), float(right[which == b].mean()), int((which == b).sum()))
            for b in range(bins) if (which == b).any()]


def summary(probs: np.ndarray, y: np.ndarray) -> dict[str, float]:
    return {"n": int(len(y)), "accuracy": round(accuracy(probs, y), 4), "ece": round(ece(probs, y), 4),
            "brier": round(brier(probs, y), 4), "nll": round(nll(probs, y), 4)}


def fit_temperature(logits: np.ndarray, y: np.ndarray) -> float:
    """The T minimising the NLL of softmax(logits / T): golden-section search on log T."""
    def loss(log_t: float) -> float:
        z = logits / np.exp(log_t)
        z = z - z.max(axis=1, keepdims=True)
        logp = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
        return float(-logp[np.arange(len(y)), y].mean())

    lo, hi = np.log(0.05), np.log(20.0)
    g = (np.sqrt(5) - 1) / 2
    a, b = hi - g * (hi - lo), lo + g * (hi - lo)
    fa, fb = loss(a), loss(b)
    for _ in range(60):
        if fa < fb:
            hi, b, fb = b, a, fa
            a = hi - g * (hi - lo)
            fa = loss(a)
        else:
            lo, a, fa = a, b, fb
            b = lo + g * (hi - lo)
            fb = loss(b)
    return float(np.exp((lo + hi) / 2))
