"""Accurate tier: Qwen2.5-Coder-1.5B-Instruct (Q4_K_M GGUF) on llama.cpp through `cyllama`.

Scoring is "question first, first token" (see docs/studies/embedded-engine.md): the chat
prompt puts the question and its options before the evidence, so the whole question block is
a prefix that llama.cpp keeps in its KV cache; only the evidence is decoded per decision, and
each option is scored by the probability of its first token right after the assistant tag
(case and leading-space variants summed). When two options share a first token the engine
falls back to scoring each option's full text.

Prompts arrive as segments (prompts.Prompt): only the template's `Special` markers are
tokenized with special-token parsing; every other segment is caller or template text and is
tokenized as plain text, which can never produce a control or added token (see
`plain_tokens`).

Recurring questions each keep their own KV sequence (`n_seq_max` slots, least recently used
evicted), so a stream that interleaves questions still reuses every cached prefix. Sequence
0 is the scratch sequence a decision is decoded in.

One context serves every caller of the process (a daemon's clients included): callers are
served first come, first served (fifo.FifoLock), and background work (a new question's
prefix, see `prepare`) runs only while no request waits and is aborted the moment one
arrives, keeping the chunks it finished. Batching concurrent requests' evidence into one
decode was measured and does not pay on a compute-bound CPU (docs/studies/embedded-engine.md).

This module imports cyllama and numpy: it is only imported when the tier is first used.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import NoReturn

import numpy as np
from cyllama.llama import llama_cpp as cy

from ...paths import write_atomic
from .fifo import FifoLock
from .prompts import Prompt, Special

PREFIX_CHUNK = 64
KV_FILES_KEPT = 64  # ≈ 5 MB each for a 250-token question
KV_MIN_TOKENS = 32  # shorter prefixes decode faster than a file is worth
MAX_BRANCHES = 8  # questions whose evidence is decoded in one batch (batch_probs)
# llama_token_attr bits: tokens with these are never the tokens of plain text
_ATTR_UNKNOWN, _ATTR_CONTROL, _ATTR_USER_DEFINED = 1, 8, 16


class _Model(cy.LlamaModel):
    # cyllama 0.2.18: LlamaContext.get_logits*() read `model.n_vocab`, which the base class
    # lacks (AttributeError). Supplying it is the whole workaround.
    @property
    def n_vocab(self) -> int:
        return self.get_vocab().n_vocab


@dataclass
class _Slot:
    seq: int
    tokens: list[int] = field(default_factory=list)


class EngineTimeout(Exception):
    """The decision did not finish within its time budget (the decode was aborted)."""


class Preempted(Exception):
    """Background work gave the engine back to a waiting request (progress kept)."""


class LlmEngine:
    """Thread-safe option scorer over one llama.cpp context."""

    def __init__(self, path: str, n_threads: int, n_ctx: int = 8192, n_slots: int = 8,
                 kv_dir: Path | None = None):
        cy.disable_logging()
        cy.ggml_backend_load_all()
        params = cy.LlamaModelParams()
        params.n_gpu_layers = 0
        self.model = _Model(path, params)
        self.vocab = self.model.get_vocab()
        cparams = cy.LlamaContextParams()
        cparams.n_ctx = n_ctx
        cparams.n_batch = 512
        cparams.n_ubatch = 512
        cparams.n_seq_max = n_slots + 1 + MAX_BRANCHES
        cparams.kv_unified = True  # one cache shared by all sequences: copies are free
        cparams.n_threads = n_threads
        cparams.n_threads_batch = n_threads
        cparams.no_perf = True
        self.ctx = cy.LlamaContext(self.model, cparams)
        self.ctx.install_cancel_callback()  # lets a timer abort a decode mid-batch
        self.n_ctx = n_ctx
        self._slots: OrderedDict[int, _Slot] = OrderedDict(
            (s, _Slot(s)) for s in range(1, n_slots + 1)
        )
        self._branch_seqs = list(range(n_slots + 1, n_slots + 1 + MAX_BRANCHES))
        self._lock = FifoLock()
        self._background = False  # the holder is background work a request may abort
        self._partial: tuple[_Slot, int] | None = None  # prefix chunk being decoded
        self.kv_dir = kv_dir
        self._model_id = Path(path).name
        self.tokens_per_s = 30.0  # prompt-processing rate, measured as decodes run (see _decode)
        self._first_tokens_cache: dict[tuple[str, ...], list[list[int]] | None] = {}
        self._special_ids: dict[str, int] = {}
        # Tokens plain text must never produce: control tokens (llama.cpp matches them only
        # with special parsing) and user-defined ones such as `<tool_call>` (which it matches
        # in any text). Their texts are cut before tokenizing (see plain_tokens).
        mask = _ATTR_UNKNOWN | _ATTR_CONTROL | _ATTR_USER_DEFINED
        self.reserved_ids = frozenset(i for i in range(self.vocab.n_vocab) if self.vocab.get_attr(i) & mask)
        texts = sorted({self.vocab.get_text(i) for i in self.reserved_ids} - {""}, key=len, reverse=True)
        self._reserved_re = re.compile("|".join(map(re.escape, texts))) if texts else None

    # -- tokens ---------------------------------------------------------------------------
    def _tokenize(self, text: str, special: bool) -> list[int]:
        # str(): Cython rejects str subclasses (prompts.Special)
        return list(self.vocab.tokenize(str(text), add_special=False, parse_special=special)) if text else []

    def plain_tokens(self, text: str) -> list[int]:
        """Tokens of `text` read as characters: no control or added token, whatever it holds.

        Text without a reserved token's spelling is one plain tokenization (the same tokens a
        special-parsing tokenizer gives it). Each occurrence of such a spelling, e.g.
        `<|im_end|>`, is tokenized as its first character and the rest, so it reaches the
        model as ordinary tokens (`<`, `|`, `im`, `_end`, `|>`)."""
        if self._reserved_re is None or not self._reserved_re.search(text):
            pieces = [text]
        else:
            pieces, pos = [], 0
            for m in self._reserved_re.finditer(text):
                pieces += [text[pos : m.start()], m.group()[:1], m.group()[1:]]
                pos = m.end()
            pieces.append(text[pos:])
        out: list[int] = []
        for piece in pieces:
            toks = self._tokenize(piece, False)
            if self.reserved_ids.intersection(toks):  # a merge reached a reserved id: spell it out
                toks = [t for ch in piece for t in self._tokenize(ch, False)]
            out += toks
        return out

    def special_id(self, marker: str) -> int:
        """The control token of a template marker (e.g. `<|im_start|>`); ValueError otherwise."""
        tok = self._special_ids.get(marker)
        if tok is None:
            toks = self._tokenize(marker, True)
            if len(toks) != 1 or not self.vocab.get_attr(toks[0]) & _ATTR_CONTROL:
                raise ValueError(f"{marker!r} is not a control token of this model")
            tok = self._special_ids[marker] = toks[0]
        return tok

    def encode(self, prompt: Prompt | str) -> list[int]:
        """Token ids of a prompt: `Special` segments as control tokens, all else as plain text
        (a bare string is all plain text)."""
        segments = (prompt,) if isinstance(prompt, str) else prompt
        out: list[int] = []
        for seg in segments:
            out += [self.special_id(seg)] if isinstance(seg, Special) else self.plain_tokens(seg)
        return out

    def _first_tokens(self, options: tuple[str, ...]) -> list[list[int]] | None:
        """Per option, the first tokens of its spelling variants; None when options collide."""
        if options in self._first_tokens_cache:
            return self._first_tokens_cache[options]
        sets: list[set[int]] = []
        for opt in options:
            variants = {opt, opt.lower(), opt[:1].upper() + opt[1:], opt.upper()}
            firsts = set()
            for v in variants:
                for spelled in (v, " " + v):
                    toks = self.plain_tokens(spelled)
                    if toks:
                        firsts.add(toks[0])
            sets.append(firsts)
        collide = any(sets[i] & sets[j] for i in range(len(sets)) for j in range(i + 1, len(sets)))
        result = None if collide else [sorted(s) for s in sets]
        self._first_tokens_cache[options] = result
        return result

    # -- KV cache -------------------------------------------------------------------------
    def _decode(self, tokens: list[int], seq: int, start: int, want_last: bool) -> None:
        for off in range(0, len(tokens), 512):
            chunk = tokens[off : off + 512]
            batch = cy.LlamaBatch(n_tokens=len(chunk), embd=0, n_seq_max=1)
            last_chunk = off + 512 >= len(tokens)
            for i, tok in enumerate(chunk):
                batch.add(tok, start + off + i, [seq], want_last and last_chunk and i == len(chunk) - 1)
            t0 = time.perf_counter()
            self.ctx.decode(batch)
            if len(chunk) >= 16:  # short decodes are dominated by fixed costs, not the rate
                rate = len(chunk) / max(1e-6, time.perf_counter() - t0)
                self.tokens_per_s = 0.7 * self.tokens_per_s + 0.3 * rate

    def _prefix_slot(self, prefix: list[int]) -> _Slot:
        """A sequence holding `prefix`, decoding only what no slot already has.

        A slot whose tokens are a prefix of ours is extended; otherwise the least recently
        used slot is overwritten from the point where it diverges (usually after the shared
        system prompt), so other questions' cached prefixes survive.
        """
        best = max(self._slots.values(), key=lambda s: _common_len(s.tokens, prefix))
        if _common_len(best.tokens, prefix) < len(best.tokens):
            best = next(iter(self._slots.values()))
        keep = _common_len(best.tokens, prefix)
        self.ctx.memory_seq_rm(best.seq, keep, -1)
        best.tokens = prefix[:keep]
        self._slots.move_to_end(best.seq)
        if keep < len(prefix) and self._load_prefix(best, prefix):
            return best
        # Chunk by chunk, recording progress: a decode aborted at its deadline keeps what it
        # finished, so the next call on this question resumes instead of starting over.
        for off in range(keep, len(prefix), PREFIX_CHUNK):
            chunk = prefix[off : off + PREFIX_CHUNK]
            if self._background and self._lock.waiting():
                raise InterruptedError  # a request is waiting: give the engine back now
            self._partial = (best, off)
            self._decode(chunk, best.seq, off, want_last=False)
            best.tokens = prefix[: off + len(chunk)]
        self._partial = None
        self._save_prefix(best, prefix)
        return best

    def missing_tokens(self, prefix: Prompt | str) -> int:
        """Tokens of `prefix` a decision would still have to decode first: 0 when a slot or a
        KV file holds it (a file load costs milliseconds), else what no slot shares."""
        toks = self.encode(prefix)
        have = max((_common_len(s.tokens, toks) for s in self._slots.values()), default=0)
        if have == len(toks):
            return 0
        path = self._kv_file(toks)
        if path is not None and path.is_file():
            return 0
        return len(toks) - have

    def preload(self) -> int:
        """Reads the most recent prefix KV files back into the slots (at warm-up, before any
        request's deadline starts); returns how many were loaded."""
        if self.kv_dir is None or not self.kv_dir.is_dir():
            return 0
        files = sorted(self.kv_dir.glob("*.kv"), key=lambda p: p.stat().st_mtime, reverse=True)
        loaded = 0
        with self._held(urgent=True, timeout_s=None):
            for path in files[: len(self._slots)]:
                try:
                    header = path.open("rb").readline()
                    prefix = [int(t) for t in json.loads(header)]
                except (OSError, ValueError, TypeError):
                    continue
                if any(s.tokens == prefix for s in self._slots.values()):
                    continue
                slot = next(iter(self._slots.values()))  # least recently used
                self.ctx.memory_seq_rm(slot.seq, -1, -1)
                slot.tokens = []
                self._slots.move_to_end(slot.seq)
                loaded += self._load_prefix(slot, prefix)
        return loaded

    def prepare(self, prefix: Prompt | str) -> None:
        """Decodes `prefix` into a slot (and its KV file) as background work: only while no
        request waits; Preempted when one arrives (the finished chunks are kept)."""
        toks = self.encode(prefix)
        if len(toks) + 32 > self.n_ctx:
            return
        with self._held(urgent=False, timeout_s=None):
            try:
                self._prefix_slot(toks)
            except InterruptedError:
                self._forget_partial()
                raise Preempted() from None

    def _held(self, urgent: bool, timeout_s: float | None) -> _Hold:
        return _Hold(self, urgent, timeout_s)

    # -- prefix KV on disk: one-shot processes (CLI, hooks) skip re-decoding long questions --
    def _kv_file(self, prefix: list[int]) -> Path | None:
        if self.kv_dir is None:
            return None
        key = hashlib.sha256((self._model_id + ":" + ",".join(map(str, prefix))).encode()).hexdigest()[:32]
        return self.kv_dir / f"{key}.kv"

    def _load_prefix(self, slot: _Slot, prefix: list[int]) -> bool:
        path = self._kv_file(prefix)
        if path is None or not path.is_file():
            return False
        loaded = False
        try:
            header, _, blob = path.read_bytes().partition(b"\n")
            if json.loads(header) == prefix:
                self.ctx.memory_seq_rm(slot.seq, -1, -1)
                self.ctx.set_state_seq_data(blob, slot.seq)
                loaded = self.ctx.memory_seq_pos_max(slot.seq) == len(prefix) - 1
        except Exception:  # noqa: BLE001 - a corrupt cache file must only cost a decode
            loaded = False
        if not loaded:
            self.ctx.memory_seq_rm(slot.seq, -1, -1)
            slot.tokens = []
            path.unlink(missing_ok=True)
            return False
        slot.tokens = list(prefix)
        os.utime(path)  # recency for pruning
        return True

    def _save_prefix(self, slot: _Slot, prefix: list[int]) -> None:
        path = self._kv_file(prefix)
        if path is None or path.exists() or len(prefix) < KV_MIN_TOKENS:
            return
        try:
            # cyllama 0.2.18's save_state_seq_file overflows on token ids: store them ourselves.
            write_atomic(path, json.dumps(prefix).encode() + b"\n" + bytes(self.ctx.get_state_seq_data(slot.seq)))
            files = sorted(path.parent.glob("*.kv"), key=lambda p: p.stat().st_mtime)
            for old in files[:-KV_FILES_KEPT]:
                old.unlink(missing_ok=True)
        except Exception:  # noqa: BLE001 - a cache; never fail a decision over it
            pass

    def _logprobs_after(self, prefix: list[int], suffix: list[int]) -> np.ndarray:
        slot = self._prefix_slot(prefix)
        self.ctx.memory_seq_rm(0, -1, -1)
        self.ctx.memory_seq_cp(slot.seq, 0, -1, -1)
        self._decode(suffix, 0, len(prefix), want_last=True)
        logits = np.asarray(self.ctx.get_logits_ith(-1), dtype=np.float64)
        logits -= logits.max()
        return logits - np.log(np.exp(logits).sum())

    def _full_option_logprob(self, start: int, option: str) -> float:
        """Mean log-prob of the option's tokens continuing scratch sequence 0."""
        toks = self.plain_tokens(option)
        scratch = 0
        total = 0.0
        prev = None
        for i, tok in enumerate(toks):
            if prev is not None:
                self._decode([prev], scratch, start + i - 1, want_last=True)
                lp = np.asarray(self.ctx.get_logits_ith(-1), dtype=np.float64)
                lp -= lp.max()
                lp = lp - np.log(np.exp(lp).sum())
            else:
                lp = self._base_lp
            total += lp[tok]
            prev = tok
        self.ctx.memory_seq_rm(scratch, start, -1)
        return total / max(1, len(toks))

    # -- public ---------------------------------------------------------------------------
    def option_probs(self, prefix: Prompt | str, suffix: Prompt | str, options: list[str],
                     timeout_s: float = 60.0, urgent: bool = True) -> np.ndarray:
        """P(option) for the chat prompt `prefix + suffix`; prefix is cached across calls.

        Waiting for the engine and decoding both count against `timeout_s`; past it the
        decode is aborted inside llama.cpp (EngineTimeout), so a long input cannot hold the
        engine after its caller has given up. `urgent=False` is background work: it waits
        for every request and raises Preempted when one arrives while it runs.
        """
        deadline = time.monotonic() + timeout_s
        ptoks = self.encode(prefix)
        stoks = self.encode(suffix)
        total = len(ptoks) + len(stoks) + 32
        if total > self.n_ctx:
            raise ValueError(
                f"prompt of {total} tokens exceeds the embedded engine's {self.n_ctx}-token context"
            )
        with self._held(urgent, max(0.0, deadline - time.monotonic())):
            timer = threading.Timer(max(0.0, deadline - time.monotonic()), self._abort)
            timer.daemon = True
            timer.start()
            try:
                lp = self._logprobs_after(ptoks, stoks)
                firsts = self._first_tokens(tuple(options))
                if firsts is not None:
                    scores = np.array([np.logaddexp.reduce(lp[f]) for f in firsts])
                else:
                    self._base_lp = lp
                    start = len(ptoks) + len(stoks)
                    scores = np.array([self._full_option_logprob(start, o) for o in options])
            except InterruptedError:
                self._aborted(urgent, deadline, timeout_s)
            finally:
                timer.cancel()
        scores -= scores.max()
        p = np.exp(scores)
        return p / p.sum()

    def batch_probs(self, items: list[tuple[Prompt | str, Prompt | str, list[str]]],
                    timeout_s: float = 60.0, urgent: bool = True) -> list[np.ndarray]:
        """`option_probs` for several (prefix, suffix, options) at once: each prefix from its
        slot, then every suffix in one llama.cpp batch, each in its own sequence holding a
        free copy of its prefix (unified KV cache). One decode instead of one per question
        halves the wall time of four routing questions on 2 shared cores
        (benchmarks/embedded_routing.py); the prompts, and so the answers, are the
        per-question ones. Options of an item must differ in their first token."""
        if not 1 <= len(items) <= MAX_BRANCHES:
            raise ValueError(f"{len(items)} items; 1..{MAX_BRANCHES} allowed")
        deadline = time.monotonic() + timeout_s
        encoded = [(self.encode(p), self.encode(s)) for p, s, _ in items]
        found = [self._first_tokens(tuple(opts)) for _, _, opts in items]
        firsts = [f for f in found if f is not None]
        if len(firsts) < len(found) or not all(st for _, st in encoded):
            raise ValueError("every item needs a suffix and options with distinct first tokens")
        for ptoks, stoks in encoded:
            if len(ptoks) + len(stoks) + 32 > self.n_ctx:
                raise ValueError(f"prompt of {len(ptoks) + len(stoks) + 32} tokens exceeds the embedded "
                                 f"engine's {self.n_ctx}-token context")
        with self._held(urgent, max(0.0, deadline - time.monotonic())):
            timer = threading.Timer(max(0.0, deadline - time.monotonic()), self._abort)
            timer.daemon = True
            timer.start()
            try:
                slots = [self._prefix_slot(ptoks) for ptoks, _ in encoded]
                batch = cy.LlamaBatch(n_tokens=sum(len(st) for _, st in encoded), embd=0, n_seq_max=1)
                last, k = [], 0
                for seq, slot, (ptoks, stoks) in zip(self._branch_seqs, slots, encoded, strict=False):
                    self.ctx.memory_seq_rm(seq, -1, -1)
                    self.ctx.memory_seq_cp(slot.seq, seq, -1, -1)
                    for j, tok in enumerate(stoks):
                        batch.add(tok, len(ptoks) + j, [seq], j == len(stoks) - 1)
                    k += len(stoks)
                    last.append(k - 1)
                t0 = time.perf_counter()
                self.ctx.decode(batch)
                self.tokens_per_s = 0.7 * self.tokens_per_s + 0.3 * k / max(1e-6, time.perf_counter() - t0)
                out = []
                for idx, first in zip(last, firsts, strict=False):
                    lp = np.asarray(self.ctx.get_logits_ith(idx), dtype=np.float64)
                    lp -= lp.max()
                    lp -= np.log(np.exp(lp).sum())
                    scores = np.array([np.logaddexp.reduce(lp[f]) for f in first])
                    p = np.exp(scores - scores.max())
                    out.append(p / p.sum())
            except InterruptedError:
                self._aborted(urgent, deadline, timeout_s)
            finally:
                timer.cancel()
                for seq in self._branch_seqs:
                    self.ctx.memory_seq_rm(seq, -1, -1)
        return out

    def scorable_at_once(self, options: list[str]) -> bool:
        """True when the options differ in their first token (what batch_probs needs)."""
        return self._first_tokens(tuple(options)) is not None

    def _abort(self) -> None:
        self.ctx.cancel = True

    def cancel_background(self) -> None:
        """Stops a background (non-urgent) decode in flight, at shutdown: it raises Preempted
        and keeps the chunks it finished."""
        self.ctx.cancel = True

    def _aborted(self, urgent: bool, deadline: float, timeout_s: float) -> NoReturn:
        """A decode was interrupted: preempted by a waiting request (background work, time
        left) or out of time."""
        self._forget_partial()
        if not urgent and time.monotonic() < deadline:
            raise Preempted() from None
        raise EngineTimeout(f"decision aborted after {timeout_s:.2f} s") from None

    def _forget_partial(self) -> None:
        """After an abort: drop a half-decoded prefix chunk and the scratch sequence."""
        if self._partial is not None:
            slot, done = self._partial
            self.ctx.memory_seq_rm(slot.seq, done, -1)
            slot.tokens = slot.tokens[:done]
            self._partial = None
        self.ctx.memory_seq_rm(0, -1, -1)


class _Hold:
    """The engine held by one caller: FIFO among requests; background work yields."""

    def __init__(self, engine: LlmEngine, urgent: bool, timeout_s: float | None):
        self.engine, self.urgent, self.timeout_s = engine, urgent, timeout_s

    def __enter__(self) -> None:
        engine = self.engine
        # background work holding the engine is aborted the moment a request queues
        if not engine._lock.acquire(timeout=self.timeout_s, urgent=self.urgent, preempt=engine._abort):
            raise EngineTimeout("engine busy until the deadline")
        engine._background = not self.urgent
        engine.ctx.cancel = False
        if not self.urgent and engine._lock.waiting():
            # a request arrived between our turn and clearing the flag
            engine._background = False
            engine._lock.release()
            raise Preempted()

    def __exit__(self, *exc: object) -> None:
        self.engine._background = False
        self.engine.ctx.cancel = False
        self.engine._lock.release()


def _common_len(a: list[int], b: list[int]) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i
