"""Fitting a head (scikit-learn is imported here and in nothing the engine runs).

A head is a logistic regression (softmax for more than two labels) on the features of
providers/embedded/heads.py. Hyper-parameters — the weight of the character n-grams and
the regularisation C — are chosen by k-fold log-loss, and a temperature is fitted on the
out-of-fold logits so that the head's confidence is honest. `cross_validate` nests all of
that inside each outer fold: the items it scores were never seen by the model, the
hyper-parameter choice or the temperature that scored them.
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
from scipy import sparse
from threadpoolctl import threadpool_limits

from ..providers.embedded.heads import (
    CHAR_DIM,
    EMBED_DIM,
    FEATURE_VERSION,
    FORMAT,
    WORD_DIM,
    WORD_FEATURES,
    Head,
    char_features,
    similarities,
    softmax,
    word_features,
)
from . import metrics
from .metrics import fit_temperature

# The grid for the shipped heads (trained offline: the best measured), and the smaller one
# `teach` searches so that a question's nested fits take seconds, not minutes.
CHARS_WEIGHTS = (0.0, 1.0, 2.0, 4.0)
CS = (4.0, 16.0, 64.0)
TEACH_GRID = ((1.0, 2.0), (4.0, 16.0, 64.0))
# Weights of the optional words block (heads.word_features) searched for the shipped routing heads,
# and the smaller chars x C grid searched with it (48 settings took 4 minutes a question: 18 do);
# (0.0,) — no words block, a head of the earlier shape — everywhere else (teach, destructive).
WORDS_WEIGHTS = (1.0, 2.0, 4.0)
WORDS_GRID = ((1.0, 2.0), (4.0, 16.0, 64.0))
MIN_LABELS = 20
EMBED_BATCH = 32


@dataclass
class Features:
    """Features of n texts: embeddings, sparse character n-grams, similarities to the options."""

    emb: np.ndarray  # (n, EMBED_DIM)
    chars: sparse.csr_matrix  # (n, CHAR_DIM)
    sims: np.ndarray  # (n, labels)
    weight: np.ndarray | None = None  # (n,) each row's weight in the fit (None: all 1)
    words: sparse.csr_matrix | None = None  # (n, WORD_DIM): heads.word_features, when computed

    def take(self, rows: np.ndarray) -> "Features":
        return Features(self.emb[rows], self.chars[rows], self.sims[rows],
                        None if self.weight is None else self.weight[rows],
                        None if self.words is None else self.words[rows])

    def weighted(self, weight: float) -> "Features":
        """The same rows, each weighing `weight` in a fit (e.g. real prompts over written ones)."""
        return Features(self.emb, self.chars, self.sims, np.full(len(self.emb), float(weight)), self.words)

    def matrix(self, chars_weight: float, words_weight: float = 0.0) -> sparse.csr_matrix:
        """The design matrix: [embedding, chars x chars_weight, similarities(, words x words_weight)]."""
        blocks = [sparse.csr_matrix(self.emb), self.chars * chars_weight, sparse.csr_matrix(self.sims)]
        if words_weight:
            if self.words is None:
                raise ValueError("a words weight without the words block (featurize(..., words=True))")
            blocks.append(self.words * words_weight)
        return sparse.hstack(blocks, format="csr")

    @staticmethod
    def join(a: "Features", b: "Features") -> "Features":
        weight = None if a.weight is None and b.weight is None else np.concatenate(
            [np.ones(len(x.emb)) if x.weight is None else x.weight for x in (a, b)])
        words = (None if a.words is None or b.words is None
                 else sparse.vstack([a.words, b.words], format="csr"))
        return Features(np.vstack([a.emb, b.emb]), sparse.vstack([a.chars, b.chars], format="csr"),
                        np.vstack([a.sims, b.sims]), weight, words)

    def __len__(self) -> int:
        return len(self.emb)


def _sparse(texts: list[str], features: Callable[[str], tuple[np.ndarray, np.ndarray]], dim: int) -> sparse.csr_matrix:
    rows: list[int] = []
    cols: list[int] = []
    vals: list[float] = []
    for i, text in enumerate(texts):
        idx, val = features(text)
        rows.extend([i] * len(idx))
        cols.extend(idx.tolist())
        vals.extend(val.tolist())
    return sparse.csr_matrix((vals, (rows, cols)), shape=(len(texts), dim), dtype=np.float32)


def featurize(texts: list[str], embed: Callable[[list[str]], np.ndarray], options: list[str],
              progress: Callable[[int], None] | None = None, words: bool = False) -> Features:
    """`embed` is the fast tier's embedding of the reading the head is made for (heads.reader: the
    exact function the engine runs for it);
    `options` the question's option texts (heads.option_texts), in label order;
    `words`: also the words block (heads.word_features), for a head that may use it."""
    embs = []
    for start in range(0, len(texts), EMBED_BATCH):
        embs.append(embed(texts[start:start + EMBED_BATCH]))
        if progress:
            progress(min(start + EMBED_BATCH, len(texts)))
    chars = _sparse(texts, char_features, CHAR_DIM)
    emb = np.vstack(embs).astype(np.float32) if embs else np.zeros((0, EMBED_DIM), np.float32)
    return Features(emb, chars, similarities(emb, embed(options)).astype(np.float32),
                    words=_sparse(texts, word_features, WORD_DIM) if words else None)


@dataclass
class Linear:
    """Softmax weights over all labels (a label absent from the training rows gets -inf-ish)."""

    W: np.ndarray
    b: np.ndarray
    chars_weight: float
    W_words: np.ndarray | None = None  # (labels, WORD_DIM), with words_weight > 0
    words_weight: float = 0.0

    def logits(self, X: Features) -> np.ndarray:
        z = np.asarray(X.matrix(self.chars_weight) @ self.W.T) + self.b
        if self.W_words is not None and self.words_weight:
            if X.words is None:
                raise ValueError("this head reads the words block: featurize(..., words=True)")
            z = z + self.words_weight * np.asarray(X.words @ self.W_words.T)
        return z


def _fit(X: Features, y: np.ndarray, n_labels: int, chars_weight: float, C: float,
         words_weight: float = 0.0) -> Linear:
    classes = np.unique(y)
    from sklearn.linear_model import LogisticRegression  # ≈ 1.2 s to import: only when a head is fitted

    model = LogisticRegression(C=C, max_iter=2000)
    with threadpool_limits(1):  # tiny problems: BLAS threads cost more than they give
        model.fit(X.matrix(chars_weight, words_weight), y, sample_weight=X.weight)
    d = EMBED_DIM + CHAR_DIM + n_labels + (WORD_DIM if words_weight else 0)
    W = np.zeros((n_labels, d), np.float64)
    b = np.full(n_labels, -30.0)
    if len(classes) == 2:  # one weight vector w: z1 - z0 = w.x + c, split symmetrically
        w, c = model.coef_[0], model.intercept_[0]
        W[classes[1]], b[classes[1]] = w / 2, c / 2
        W[classes[0]], b[classes[0]] = -w / 2, -c / 2
    else:
        for row, cls in enumerate(model.classes_):
            W[cls], b[cls] = model.coef_[row], model.intercept_[row]
    # The char (and words) block was fitted on weighted features; the engine multiplies by the
    # weight at run time, so the stored weights are the fitted ones as they are.
    base = EMBED_DIM + CHAR_DIM + n_labels
    if words_weight:
        return Linear(W[:, :base], b, chars_weight, W[:, base:], words_weight)
    return Linear(W, b, chars_weight)


def _folds(y: np.ndarray, k: int, seed: int) -> list[tuple[np.ndarray, np.ndarray]]:
    k = max(2, min(k, int(np.bincount(y).max()), len(y)))
    smallest = int(np.bincount(y)[np.bincount(y) > 0].min())
    if smallest < k:  # a class rarer than k: plain shuffled folds (stratification impossible)
        rng = np.random.default_rng(seed)
        order = rng.permutation(len(y))
        return [(np.setdiff1d(order, part), part) for part in np.array_split(order, k)]
    from sklearn.model_selection import StratifiedKFold

    return list(StratifiedKFold(k, shuffle=True, random_state=seed).split(np.zeros(len(y)), y))


@dataclass
class Choice:
    chars_weight: float
    C: float
    temperature: float
    oof_logits: np.ndarray = field(repr=False)
    words_weight: float = 0.0


def select(X: Features, y: np.ndarray, n_labels: int, k: int = 5, seed: int = 0,
           weights: tuple[float, ...] = CHARS_WEIGHTS, cs: tuple[float, ...] = CS,
           temperature_rows: np.ndarray | None = None, words: tuple[float, ...] = (0.0,)) -> Choice:
    """Hyper-parameters by k-fold log-loss (each after its own temperature), and the
    temperature fitted on the chosen setting's out-of-fold logits — of `temperature_rows`
    only, when given: the rows most like the text the head will meet (real prompts rather than
    ones written for the criteria), so its confidence is honest where it is used."""
    folds = _folds(y, k, seed)
    best: Choice | None = None
    best_loss = np.inf
    for ww in words if X.words is not None else (0.0,):
        for w in weights:
            for C in cs:
                oof = np.zeros((len(y), n_labels))
                for train, test in folds:
                    oof[test] = _fit(X.take(train), y[train], n_labels, w, C, ww).logits(X.take(test))
                T = fit_temperature(oof, y)
                loss = metrics.nll(np.apply_along_axis(softmax, 1, oof / T), y)
                if loss < best_loss - 1e-9:
                    best, best_loss = Choice(w, C, T, oof, ww), loss
    assert best is not None
    if temperature_rows is not None and len(temperature_rows):
        best.temperature = fit_temperature(best.oof_logits[temperature_rows], y[temperature_rows])
    return best


def fit_head(X: Features, y: np.ndarray, labels: list[str], meta: dict[str, Any], k: int = 5,
             seed: int = 0, grid: tuple[tuple[float, ...], tuple[float, ...]] = (CHARS_WEIGHTS, CS),
             temperature_rows: np.ndarray | None = None, words: tuple[float, ...] = (0.0,)) -> Head:
    """The head trained on every row, with the hyper-parameters and temperature of `select`
    (`words`: the words block's weights to try, when X has it; 0 = a head without it)."""
    choice = select(X, y, len(labels), k, seed, *grid, temperature_rows=temperature_rows, words=words)
    lin = _fit(X, y, len(labels), choice.chars_weight, choice.C, choice.words_weight)
    extra: dict[str, Any] = ({"words_features": WORD_FEATURES, "words_weight": choice.words_weight}
                             if lin.W_words is not None else {})
    return Head({"format": FORMAT, "feature_version": FEATURE_VERSION, "labels": labels,
                 "chars_weight": choice.chars_weight, "C": choice.C, "temperature": round(choice.temperature, 6),
                 **extra, "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), **meta},
                lin.W.astype(np.float32), lin.b.astype(np.float32),
                W_words=None if lin.W_words is None else lin.W_words.astype(np.float32))


def cross_validate(X: Features, y: np.ndarray, n_labels: int, k: int = 5, seed: int = 0,
                   extra: Features | None = None, extra_y: np.ndarray | None = None,
                   inner_k: int = 3, grid: tuple[tuple[float, ...], tuple[float, ...]] = (CHARS_WEIGHTS, CS),
                   words: tuple[float, ...] = (0.0,)) -> tuple[np.ndarray, np.ndarray]:
    """Out-of-fold probabilities for the rows of X, (before, after) the temperature, nested:
    in each outer fold the model, its hyper-parameters and its temperature see only the
    other folds (plus `extra` rows, e.g. a curated training set that is never scored)."""
    out = np.zeros((len(y), n_labels))
    raw = np.zeros((len(y), n_labels))
    for train, test in _folds(y, k, seed):
        Xt, yt = X.take(train), y[train]
        if extra is not None and extra_y is not None and len(extra_y):
            Xt = Features.join(Xt, extra)
            yt = np.concatenate([yt, extra_y])
        choice = select(Xt, yt, n_labels, inner_k, seed, *grid, words=words)
        lin = _fit(Xt, yt, n_labels, choice.chars_weight, choice.C, choice.words_weight)
        logits = lin.logits(X.take(test))
        raw[test] = np.apply_along_axis(softmax, 1, logits)
        out[test] = np.apply_along_axis(softmax, 1, logits / choice.temperature)
    return raw, out


def cross_fitted_temperature(logits: np.ndarray, y: np.ndarray, k: int = 5, seed: int = 0) -> np.ndarray:
    """Probabilities from out-of-fold `logits`, each fold's temperature fitted on the others."""
    out = np.zeros_like(logits, dtype=float)
    for train, test in _folds(y, k, seed):
        T = fit_temperature(logits[train], y[train])
        out[test] = np.apply_along_axis(softmax, 1, logits[test] / T)
    return out


def cascade_probs(head: np.ndarray, llm: np.ndarray, below: float, weight: float) -> np.ndarray:
    """What the engine answers: the head where it is sure (max p ≥ below), else the weighted
    geometric mean of head and llm (weight = the head's), as providers/embedded does."""
    out = head.copy()
    ask = head.max(axis=1) < below
    if ask.any():
        logp = weight * np.log(np.maximum(head[ask], 1e-12)) + (1 - weight) * np.log(np.maximum(llm[ask], 1e-12))
        p = np.exp(logp - logp.max(axis=1, keepdims=True))
        out[ask] = p / p.sum(axis=1, keepdims=True)
    return out


def choose_cascade(head: np.ndarray, llm: np.ndarray, y: np.ndarray) -> dict[str, Any]:
    """The escalation bar and blend weight that score best on these (held-out) answers;
    `below` 0 — never ask the llm — unless escalating wins at least one more item."""
    def blended(below: float, weight: float) -> np.ndarray:
        return cascade_probs(head, llm, below, weight)

    base = int((head.argmax(axis=1) == y).sum())
    best = {"below": 0.0, "head_weight": 0.5, "right": base, "escalated": 0.0}
    for below in (0.6, 0.7, 0.8, 0.9):
        for weight in (0.0, 0.3, 0.5, 0.7):
            right = int((blended(below, weight).argmax(axis=1) == y).sum())
            if right > best["right"]:
                best = {"below": below, "head_weight": weight, "right": right,
                        "escalated": round(float((head.max(axis=1) < below).mean()), 3)}
    return best


# A cascade costs the zero-shot engine's latency (and its susceptibility to the evidence's
# wording) on every escalated item; it is used only when it wins at least this many more
# held-out items than the head alone — one item is within the noise of 40-70 labels.
CASCADE_MIN_GAIN = 2


def cascade_pays(head_acc: float, cascade_acc: float, n: int) -> bool:
    return round((cascade_acc - head_acc) * n) >= CASCADE_MIN_GAIN


def cross_fitted_cascade(head: np.ndarray, llm: np.ndarray, y: np.ndarray, k: int = 5,
                         seed: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """Cascade answers where each fold's bar and weight were chosen on the other folds'
    answers (honest, unlike `choose_cascade` on all of them); also which items escalated."""
    out = head.copy()
    asked = np.zeros(len(y), bool)
    for train, test in _folds(y, k, seed):
        c = choose_cascade(head[train], llm[train], y[train])
        asked[test] = head[test].max(axis=1) < c["below"]
        out[test] = cascade_probs(head[test], llm[test], c["below"], c["head_weight"])
    return out, asked


def data_hash(rows: list[tuple[str, str]]) -> str:
    """sha256 of the (text, label) pairs a head was trained on, order-independent."""
    digest = hashlib.sha256()
    for text, label in sorted(rows):
        digest.update(json.dumps([text, label], ensure_ascii=False).encode())
    return digest.hexdigest()


# -- adapting an existing head (teach on a question that already has one) --------------------------
# A binary head's margin is linear in the features: m0(x) = (W0[1] - W0[0]) . x + (b0[1] - b0[0]).
# The adapted head learns margin(x) = w . x + a * m0(x) + c by logistic regression on the user's
# labels with m0 as one more column; it folds back into one linear head, W = w + a * (W0[1] - W0[0]),
# so it keeps the file format, the run-time cost and the base head's knowledge (a ~ 1, w small)
# while correcting it where the user's labels disagree.

def _base_margin(X: Features, base: Head) -> np.ndarray:
    z = _linear(base).logits(X)
    return z[:, 1] - z[:, 0]


def _linear(head: Head) -> Linear:
    return Linear(head.W.astype(np.float64), head.b.astype(np.float64), float(head.meta.get("chars_weight", 1.0)),
                  None if head.W_words is None else head.W_words.astype(np.float64), head.words_weight)


def _fit_adapted(X: Features, y: np.ndarray, base: Head, C: float, margin: np.ndarray) -> Linear:
    cw = float(base.meta.get("chars_weight", 1.0))
    from sklearn.linear_model import LogisticRegression

    model = LogisticRegression(C=C, max_iter=2000)
    design = sparse.hstack([X.matrix(cw), sparse.csr_matrix(margin[:, None])], format="csr")
    with threadpool_limits(1):
        model.fit(design, y)
    d = EMBED_DIM + CHAR_DIM + 2
    w, a, c = model.coef_[0][:d], model.coef_[0][d], model.intercept_[0]
    delta = base.W[1].astype(np.float64) - base.W[0].astype(np.float64)
    dbias = float(base.b[1]) - float(base.b[0])
    full_w, full_c = w + a * delta, c + a * dbias
    W = np.vstack([-full_w / 2, full_w / 2])
    b = np.array([-full_c / 2, full_c / 2])
    if base.W_words is not None:  # the base head's words block, scaled as its margin is (a)
        dwords = a * (base.W_words[1].astype(np.float64) - base.W_words[0].astype(np.float64))
        return Linear(W, b, cw, np.vstack([-dwords / 2, dwords / 2]), base.words_weight)
    return Linear(W, b, cw)


def adapt_cross_validate(X: Features, y: np.ndarray, base: Head, k: int = 5, seed: int = 0,
                         cs: tuple[float, ...] = (0.25, 1.0, 4.0, 16.0)) -> np.ndarray:
    """Out-of-fold probabilities of the adapted head (C and temperature chosen inside each fold)."""
    margin = _base_margin(X, base)
    out = np.zeros((len(y), 2))
    for train, test in _folds(y, k, seed):
        C, T = _adapt_select(X.take(train), y[train], base, margin[train], seed, cs)
        lin = _fit_adapted(X.take(train), y[train], base, C, margin[train])
        out[test] = np.apply_along_axis(softmax, 1, lin.logits(X.take(test)) / T)
    return out


def _adapt_select(X: Features, y: np.ndarray, base: Head, margin: np.ndarray, seed: int,
                  cs: tuple[float, ...]) -> tuple[float, float]:
    folds = _folds(y, 3, seed)
    best, best_loss = (cs[0], 1.0), np.inf
    for C in cs:
        oof = np.zeros((len(y), 2))
        for train, test in folds:
            oof[test] = _fit_adapted(X.take(train), y[train], base, C, margin[train]).logits(X.take(test))
        T = fit_temperature(oof, y)
        loss = metrics.nll(np.apply_along_axis(softmax, 1, oof / T), y)
        if loss < best_loss - 1e-9:
            best, best_loss = (C, T), loss
    return best


def fit_adapted_head(X: Features, y: np.ndarray, base: Head, meta: dict[str, Any], seed: int = 0,
                     cs: tuple[float, ...] = (0.25, 1.0, 4.0, 16.0)) -> Head:
    margin = _base_margin(X, base)
    C, T = _adapt_select(X, y, base, margin, seed, cs)
    lin = _fit_adapted(X, y, base, C, margin)
    extra: dict[str, Any] = ({"words_features": WORD_FEATURES, "words_weight": lin.words_weight}
                             if lin.W_words is not None else {})
    return Head({"format": FORMAT, "feature_version": base.meta["feature_version"], "labels": list(base.labels),
                 "chars_weight": lin.chars_weight, "C": C, "temperature": round(T, 6), **extra,
                 "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), **meta},
                lin.W.astype(np.float32), lin.b.astype(np.float32),
                W_words=None if lin.W_words is None else lin.W_words.astype(np.float32))


def head_probs(X: Features, head: Head) -> np.ndarray:
    """What `head` answers for the rows of X (as the engine computes it)."""
    lin = _linear(head)
    return np.apply_along_axis(softmax, 1, lin.logits(X) / head.temperature)
