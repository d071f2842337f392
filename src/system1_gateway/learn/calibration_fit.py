"""Fitting temperatures and thresholds on labelled answers (numpy only), and scoring them.

Input: per (provider, model, question) group, the engine's *raw* distributions (calibration
off) and the right label's index. Output: FitRecords for calibration.json, and an honest
before/after comparison: the "after" columns are cross-fitted (each fold scored by a
temperature and threshold chosen on the other folds), so a fit is never graded on the labels
it was fitted on.

Threshold: the lowest confidence bar (most coverage) at which the accuracy of the answers
kept is at least the target *at the bootstrap 5th percentile*, not merely on average, so a
bar chosen on 60 labels does not promise what it cannot keep.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..core.calibration import FIRM_LABELS, MIN_LABELS, FitRecord
from . import metrics

BOOTSTRAP = 400
FOLDS = 5
GRID = 60  # candidate thresholds: confidence quantiles


@dataclass
class Group:
    """Labelled raw answers of one engine model on one question (or one option count)."""

    provider: str
    model: str
    question: str | None  # wording hash; None for an option-count fallback
    options: int
    name: str  # readable: the built-in id, the task, the hash
    probs: list[list[float]] = field(default_factory=list)  # raw, label order
    y: list[int] = field(default_factory=list)
    served: list[list[float]] = field(default_factory=list)  # as answered today (current fit applied)
    served_threshold: float = 0.6
    questions: set[str] = field(default_factory=set)  # wording hashes pooled (an option-count group)

    def arrays(self) -> tuple[np.ndarray, np.ndarray]:
        return np.asarray(self.probs, dtype=float), np.asarray(self.y, dtype=int)


def apply_temperature(probs: np.ndarray, temperature: float) -> np.ndarray:
    z = np.log(np.maximum(probs, 1e-12)) / temperature
    z -= z.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)


T_RANGE = (0.1, 10.0)


def fit_temperature(probs: np.ndarray, y: np.ndarray) -> float:
    """The T minimising NLL + (log T)² / n: the penalty (a weak prior at T = 1) keeps a
    small set the engine answered perfectly from sharpening every answer to certainty; it
    fades as labels accumulate. Golden-section search on log T within T_RANGE."""
    logp0 = np.log(np.maximum(probs, 1e-12))
    rows = np.arange(len(y))

    def loss(log_t: float) -> float:
        z = logp0 / np.exp(log_t)
        z = z - z.max(axis=1, keepdims=True)
        logp = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
        return float(-logp[rows, y].mean()) + log_t ** 2 / max(len(y), 1)

    lo, hi = np.log(T_RANGE[0]), np.log(T_RANGE[1])
    g = (np.sqrt(5) - 1) / 2
    for _ in range(60):
        a, b = hi - g * (hi - lo), lo + g * (hi - lo)
        if loss(a) < loss(b):
            hi = b
        else:
            lo = a
    return float(np.exp((lo + hi) / 2))


def threshold_for(conf: np.ndarray, right: np.ndarray, target: float, seed: int = 0) -> dict[str, Any]:
    """The lowest bar whose kept answers are ≥ `target` accurate at the bootstrap 5 % bound.
    {"threshold", "accuracy", "accuracy_lower", "coverage"}; threshold None when no bar can
    promise the target (then nothing should be answered on this engine's word alone)."""
    n = len(conf)
    if n == 0:
        return {"threshold": None, "accuracy": None, "accuracy_lower": None, "coverage": 0.0}
    bars = np.unique(np.quantile(conf, np.linspace(0, 1, GRID)))
    kept = conf[:, None] >= bars[None, :]  # (n, K)
    rng = np.random.default_rng(seed)
    counts = rng.multinomial(n, np.full(n, 1 / n), size=BOOTSTRAP).astype(float)  # (B, n)
    covered = counts @ kept
    correct = counts @ (kept & right[:, None])
    with np.errstate(invalid="ignore", divide="ignore"):
        boot_acc = np.where(covered > 0, correct / covered, 0.0)
    lower = np.quantile(boot_acc, 0.05, axis=0)
    point = (kept & right[:, None]).sum(axis=0) / np.maximum(kept.sum(axis=0), 1)
    coverage = kept.mean(axis=0)
    for k in range(len(bars)):  # ascending bars: the first that keeps the promise covers most
        if kept[:, k].sum() >= 10 and lower[k] >= target:
            return {"threshold": round(float(bars[k]), 4), "accuracy": round(float(point[k]), 4),
                    "accuracy_lower": round(float(lower[k]), 4), "coverage": round(float(coverage[k]), 4)}
    return {"threshold": None, "accuracy": None, "accuracy_lower": None, "coverage": 0.0}


def at_threshold(probs: np.ndarray, y: np.ndarray, bar: float | None) -> tuple[float, float]:
    """(accuracy of kept answers, coverage) at `bar` (None: nothing kept)."""
    if bar is None or not len(y):
        return float("nan"), 0.0
    conf = probs.max(axis=1)
    kept = conf >= bar
    right = probs.argmax(axis=1) == y
    return (float(right[kept].mean()) if kept.any() else float("nan")), float(kept.mean())


def coverage_curve(probs: np.ndarray, y: np.ndarray, points: int = 11) -> list[dict[str, float]]:
    """Accuracy of the most confident answers at coverage 0 %, 10 %, … 100 %."""
    order = np.argsort(-probs.max(axis=1), kind="stable")
    right = (probs.argmax(axis=1) == y)[order]
    out = []
    for c in np.linspace(0.1, 1.0, points - 1):
        k = max(1, int(round(c * len(y))))
        out.append({"coverage": round(float(c), 2), "accuracy": round(float(right[:k].mean()), 4)})
    return out


def _folds(y: np.ndarray, k: int, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    folds: list[list[int]] = [[] for _ in range(k)]
    for label in np.unique(y):  # stratified: each fold gets its share of every label
        rows = rng.permutation(np.flatnonzero(y == label))
        for i, row in enumerate(rows):
            folds[i % k].append(int(row))
    return [np.asarray(sorted(f), dtype=int) for f in folds if f]


def cross_fitted(probs: np.ndarray, y: np.ndarray, target: float, k: int = FOLDS,
                 seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Out-of-fold calibrated probabilities and, per row, the bar chosen without it (nan:
    no bar kept the promise in that fold)."""
    out = np.empty_like(probs)
    bars = np.full(len(y), np.nan)
    for test in _folds(y, k, seed):
        train = np.setdiff1d(np.arange(len(y)), test)
        t = fit_temperature(probs[train], y[train])
        cal_train = apply_temperature(probs[train], t)
        pick = threshold_for(cal_train.max(axis=1), cal_train.argmax(axis=1) == y[train], target, seed)
        out[test] = apply_temperature(probs[test], t)
        bars[test] = np.nan if pick["threshold"] is None else pick["threshold"]
    return out, bars


def _oof_at_bars(probs: np.ndarray, y: np.ndarray, bars: np.ndarray) -> tuple[float, float]:
    kept = ~np.isnan(bars) & (probs.max(axis=1) >= np.nan_to_num(bars, nan=2.0))
    right = probs.argmax(axis=1) == y
    return (float(right[kept].mean()) if kept.any() else float("nan")), float(kept.mean())


def _scores(probs: np.ndarray, y: np.ndarray, acc_cov: tuple[float, float]) -> dict[str, Any]:
    return {**metrics.summary(probs, y), "accuracy_at_threshold": _r(acc_cov[0]), "coverage": _r(acc_cov[1])}


def _r(x: float) -> float | None:
    return None if x != x else round(x, 4)  # nan -> None (JSON)


def fit_group(group: Group, target: float, seed: int = 0) -> dict[str, Any]:
    """Fit one group; the report row and, when it has enough labels, the FitRecord."""
    probs, y = group.arrays()
    served = np.asarray(group.served, dtype=float) if group.served else probs
    row: dict[str, Any] = {"provider": group.provider, "model": group.model, "name": group.name,
                           "question": group.question, "options": group.options, "n": int(len(y)),
                           "before": _scores(served, y, at_threshold(served, y, group.served_threshold)),
                           "before_threshold": group.served_threshold, "record": None}
    if len(y) < MIN_LABELS:
        row["refused"] = f"{len(y)} labels: a fit needs at least {MIN_LABELS} ({MIN_LABELS - len(y)} more)"
        return row
    if len(np.unique(y)) < 2:
        row["refused"] = "every label is the same answer: nothing to calibrate against"
        return row
    oof, bars = cross_fitted(probs, y, target, seed=seed)
    row["after"] = _scores(oof, y, _oof_at_bars(oof, y, bars))
    temperature = fit_temperature(probs, y)
    calibrated = apply_temperature(probs, temperature)
    pick = threshold_for(calibrated.max(axis=1), calibrated.argmax(axis=1) == y, target, seed)
    row.update(temperature=round(temperature, 4), provisional=len(y) < FIRM_LABELS, **{"pick": pick})
    row["curve"] = coverage_curve(calibrated, y)
    row["record"] = FitRecord(
        provider=group.provider, model=group.model, question=group.question,
        options=None if group.question else group.options, temperature=round(temperature, 4), n=int(len(y)),
        threshold=pick["threshold"], target_accuracy=target if pick["threshold"] is not None else None,
        accuracy_lower=pick["accuracy_lower"], coverage=pick["coverage"] if pick["threshold"] is not None else None,
        name=group.name[:200], fitted_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
    return row


def reliability_png(rows: list[tuple[str, np.ndarray, np.ndarray, np.ndarray]], path: str) -> str | None:
    """Per group, side by side: the reliability diagram (engine vs calibrated) and the
    coverage–accuracy curve (accuracy of the most confident answers as the bar drops).
    One PNG; None without matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    fig, axes = plt.subplots(len(rows), 2, figsize=(9, 3.6 * len(rows)), squeeze=False)
    for (rel, cov), (title, raw, cal, y) in zip(axes, rows, strict=True):
        rel.plot([0, 1], [0, 1], color="#999", lw=1, ls="--")
        for probs, label, color in ((raw, "engine", "#d62728"), (cal, "calibrated", "#1f77b4")):
            pts = metrics.reliability(probs, y)
            rel.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", color=color,
                     label=f"{label} (ECE {metrics.ece(probs, y):.3f})")
            curve = coverage_curve(probs, y)
            cov.plot([c["coverage"] for c in curve], [c["accuracy"] for c in curve], marker=".", color=color,
                     label=label)
        rel.set(title=f"{title[:40]}: reliability", xlabel="confidence", ylabel="accuracy",
                xlim=(0, 1.02), ylim=(0, 1.02))
        rel.legend(loc="lower right", fontsize=8)
        cov.set(title="coverage – accuracy", xlabel="share answered (most confident first)",
                ylabel="accuracy of those answered", xlim=(0, 1.02), ylim=(0, 1.02))
        cov.legend(loc="lower left", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
