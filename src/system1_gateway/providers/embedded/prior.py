"""Label-free bias correction: divide by the running mean of a question's past answers.

A small LM prefers some options whatever the evidence (Qwen-1.5B says "yes" to most
read-only prompts). For a recurring question, the mean of its raw probability vectors
estimates that preference; dividing by it (batch calibration, Zhou et al. 2023) removes it.
The mean is shrunk toward uniform with `k` pseudo-counts and only used after `min_count`
decisions, so long runs of one class do not swing it. It never looks at labels.

Means are kept per question signature (prompt prefix + options) and persisted as a small
JSON file in the state directory, so one-shot processes accumulate them too. A lost or
corrupt file only resets the correction.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading

from ...paths import state_dir

MAX_SIGNATURES = 512


class RunningPrior:
    def __init__(self, k: float = 8.0, min_count: int = 8, path=None):
        self.k = k
        self.min_count = min_count
        self.path = path or state_dir() / "embedded" / "priors.json"
        self._sums: dict[str, list[float]] = {}
        self._counts: dict[str, int] = {}
        self._loaded = False
        self._dirty = False
        self._lock = threading.Lock()

    def _load(self) -> None:
        self._loaded = True
        try:
            data = json.loads(self.path.read_text())
            for key, entry in data.items():
                self._sums[key] = [float(x) for x in entry["sum"]]
                self._counts[key] = int(entry["count"])
        except (OSError, ValueError, KeyError, TypeError):
            self._sums.clear()
            self._counts.clear()

    def correct(self, signature: str, probs):
        import numpy as np  # only engines that already loaded numpy call this

        key = hashlib.sha256(signature.encode()).hexdigest()[:24]
        with self._lock:
            if not self._loaded:
                self._load()
            total = self._sums.get(key)
            count = self._counts.get(key, 0)
            out = probs
            if total is not None and len(total) == len(probs) and count >= self.min_count:
                uniform = np.full(len(probs), 1.0 / len(probs))
                mean = (np.asarray(total) + self.k * uniform) / (count + self.k)
                out = probs / np.maximum(mean, 1e-9)
                out = out / out.sum()
            if total is None or len(total) != len(probs):
                total, count = [0.0] * len(probs), 0
            self._sums[key] = [a + float(b) for a, b in zip(total, probs)]
            self._counts[key] = count + 1
            if len(self._sums) > MAX_SIGNATURES:  # forget the oldest question
                oldest = next(iter(self._sums))
                self._sums.pop(oldest)
                self._counts.pop(oldest, None)
            self._dirty = True
        return out

    def save(self) -> None:
        with self._lock:
            if not self._dirty:
                return
            data = {k: {"sum": self._sums[k], "count": self._counts[k]} for k in self._sums}
            self._dirty = False
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
            tmp.write_text(json.dumps(data))
            os.replace(tmp, self.path)
        except OSError:
            pass  # the correction is an optimisation; never fail a request over it
