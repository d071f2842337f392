"""Label-free bias correction computed from the question alone.

A small LM prefers some options whatever the evidence (Qwen-1.5B says "not read-only" to
most prompts). The correction estimates that preference from the question's own definitions:
each option's description is read as the evidence, once, and the mean of the tier's answers
to those texts is the question's reference. An unbiased model answers each definition with
its own option, so the mean is near uniform; a standing preference shows as a lean of the
mean, and every answer is divided by it (then renormalised). The set of texts is balanced by
construction (one per option) and uses no labels.

Why not the alternatives (docs/studies/embedded-engine.md, `benchmarks/embedded_correction.py`):
  * a running mean of earlier answers (batch calibration, the previous design) made each
    answer depend on what other requests asked: 40 destructive commands moved the next
    answer, so hostile traffic could steer a guard into abstention;
  * content-free evidence ("N/A", "", "[MASK]"; contextual calibration, Zhao et al. 2021) is
    not neutral for these questions: an empty text *is* "not destructive" and "not urgent",
    so dividing by it pushed answers the wrong way (below the uncorrected accuracy on dev).

The reference depends only on the question (prompt + options), the tier and the model: it is
computed once, kept in memory and cached on disk under a hash of exactly those inputs, so no
request, from this process or another, can move it. Questions without a description for
every option have no such balanced set and are answered uncorrected. A lost, corrupt or
mismatched cache file only costs recomputing it.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ... import bounded_json
from ...model.render import render
from ...paths import write_atomic

# Bump when the reference texts or the scoring that produces the reference change.
VERSION = "definitions-1"
FILES_KEPT = 512
# A definition is read up to this many characters for the reference (≈ 130 tokens, ≈ 3 s of
# llm decoding on 2 cores): one text must fit in one attempt under the default timeout.
MAX_CHARS = 600


def definitions(question: Any) -> list[str] | None:
    """One text per option, position for position: the option's description; None unless
    every option has one (then no balanced reference exists)."""
    if question.type == "noul":
        crit = question.criteria or {}
        descs = [crit.get("true"), crit.get("false")]
    elif question.type == "choice":
        descs = [desc for _, desc in question.label_descriptions()]
    else:
        descs = list(question.criteria)
    if any(d in (None, "") for d in descs):
        return None
    return [render(d)[:MAX_CHARS] for d in descs]


def correct(probs: Any, reference: Any) -> Any:
    """`probs` divided by the question's reference, renormalised."""
    import numpy as np  # only engines that already loaded numpy call this

    out = np.asarray(probs, dtype=np.float64) / np.maximum(np.asarray(reference, dtype=np.float64), 1e-9)
    return out / out.sum()


class QuestionPrior:
    """Per-question references, in memory and (optionally) on disk."""

    def __init__(self, directory: Path | None = None):
        self.dir = directory
        self._mem: dict[str, list[float]] = {}
        self._partial: dict[tuple[str, str], list[float]] = {}  # answers per text, until complete
        self._lock = threading.Lock()

    @staticmethod
    def key(*parts: str) -> str:
        """Cache key of a reference: the model, tier and question, nothing else."""
        return hashlib.sha256(json.dumps([VERSION, *parts]).encode()).hexdigest()[:32]

    def cached(self, key: str, n: int) -> list[float] | None:
        """The finished reference for `key`, from memory or disk, else None (never computes)."""
        with self._lock:
            ref = self._mem.get(key)
        if ref is not None and len(ref) == n:
            return ref
        ref = self._read(key, n)
        if ref is not None:
            self._remember(key, ref)
        return ref

    def reference(self, key: str, n: int, texts: list[str], ask: Callable[[str], Any]) -> list[float]:
        """The reference for `key` (n options): the mean of `ask(text)` over `texts`,
        computed on first use and cached. Each text's answer is kept — in memory and on
        disk — as soon as it is known, so a computation cut short by a deadline resumes where
        it stopped, in this process or the next one-shot process."""
        ref = self.cached(key, n)
        if ref is not None:
            return ref
        done = self._read_partial(key, n)
        answers = []
        for i, text in enumerate(texts):
            with self._lock:
                known = self._partial.get((key, str(i))) or done.get(str(i))
            if known is None:
                known = [float(x) for x in ask(text)]
                if len(known) != n:
                    raise ValueError(f"an answer of {len(known)} options for a {n}-option question")
                with self._lock:
                    self._partial[(key, str(i))] = known
                done[str(i)] = known
                self._write_partial(key, done)
            answers.append(known)
        ref = [sum(col) / len(answers) for col in zip(*answers, strict=False)]
        with self._lock:
            for i in range(len(texts)):
                self._partial.pop((key, str(i)), None)
        self._write(key, ref)
        self._remember(key, ref)
        return ref

    def _remember(self, key: str, ref: list[float]) -> None:
        with self._lock:
            self._mem[key] = ref
            if len(self._mem) > FILES_KEPT:
                self._mem.pop(next(iter(self._mem)))

    def _partial_path(self, key: str) -> Path | None:
        return None if self.dir is None else self.dir / f"{key}.partial"

    def _read_partial(self, key: str, n: int) -> dict[str, list[float]]:
        path = self._partial_path(key)
        try:
            data = bounded_json.file_loads(path.read_text()) if path is not None else {}
            return {str(i): [float(x) for x in v] for i, v in data.items()
                    if isinstance(v, list) and len(v) == n and all(0 <= float(x) <= 1 for x in v)}
        except (OSError, ValueError, TypeError, AttributeError):
            return {}

    def _write_partial(self, key: str, done: dict[str, list[float]]) -> None:
        path = self._partial_path(key)
        if path is None:
            return
        try:
            write_atomic(path, json.dumps(done))
        except OSError:
            pass

    def _path(self, key: str) -> Path | None:
        return None if self.dir is None else self.dir / f"{key}.json"

    def _read(self, key: str, n: int) -> list[float] | None:
        path = self._path(key)
        if path is None:
            return None
        try:
            data = bounded_json.file_loads(path.read_text())
            ref = [float(x) for x in data["reference"]]
            if data.get("key") != key or len(ref) != n or not all(0 <= x <= 1 for x in ref):
                return None
            return ref
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def _write(self, key: str, ref: list[float]) -> None:
        path = self._path(key)
        if path is None:
            return
        try:
            write_atomic(path, json.dumps({"key": key, "reference": ref}))
            partial = self._partial_path(key)
            if partial is not None:
                partial.unlink(missing_ok=True)
            files = sorted(path.parent.glob("*.json"), key=lambda p: p.stat().st_mtime)
            for old in files[:-FILES_KEPT]:
                old.unlink(missing_ok=True)
        except OSError:
            pass  # a cache: never fail a request over it
