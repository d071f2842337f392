"""Learned heads: small linear models that answer recurring questions in milliseconds.

A head answers one question (identified by the hash of its wording, builtins.question_hash)
from features of the evidence that cost almost nothing next to the accurate tier:

  * the fast tier's sentence embedding (all-MiniLM-L6-v2, mean-pooled, normalised: 384 d);
  * hashed character n-grams (3 to 5 characters, lowercased, word-edge padded, log counts,
    normalised, times a per-head weight): shell commands are decided by `-rf`, `--force`,
    `DROP`, `--dry-run`, which an embedding of a short command barely sees;
  * the evidence's similarity to each option's description (what the fast tier answers
    zero-shot, one feature per label): with few labels the head starts from the question's
    own meaning instead of from nothing.

  * optionally (the routing heads since 0.4.0), the words block: hashed word 1-2-grams, the
    opening words and a few structure features (word_features); a head file without `W_words`
    has no such block and is computed without it.

Logits are `W @ [embedding, chars, similarities] + b` (`+ words_weight * W_words @ words` for a head
with the words block), divided by the head's temperature (fitted by
cross-validation, so the probabilities are honest) and soft-maxed. Training is in
`learn/` (scikit-learn, never imported here); a head file is plain arrays in an `.npz`
(`W`, `b`, and `meta`: JSON text) read without pickle, so loading one cannot run code.

Heads ship in the package (`heads_shipped/*.npz`, the built-in questions) and are written by
`system1 teach` to `<state>/heads/`; a user head replaces a shipped one for the same
question. A head whose file is corrupt, truncated, made for another feature version or
inconsistent is refused with one warning, and its question is answered zero-shot.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import re
import threading
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ... import bounded_json
from ...logs import LOGGER

log = logging.getLogger(LOGGER)

FORMAT = 1
EMBED_DIM = 384
CHAR_DIM = 1 << 13
CHAR_NGRAMS = (3, 4, 5)
# Changes whenever features are computed differently: heads made for another version are refused.
SIM_SCALE = 20.0  # similarities / 0.05: the fast tier's own softmax temperature
_FEATURES = f"chars{CHAR_NGRAMS[0]}-{CHAR_NGRAMS[-1]}x{CHAR_DIM}+optsims"
# How a head's embedding reads the evidence (FastEngine): "first" = its first 256 tokens (heads
# made before 0.3.0, still accepted); "whole" = in windows over up to 8 x 256 tokens
# (embed_whole); "mix" = the first window's and the whole text's, averaged (embed_mix). All three
# are the same vector for a text of one window. New heads read "mix" (docs/studies/routing-real.md).
READINGS = {f"minilm-l6-int8-mean+{_FEATURES}@2": "first", f"minilm-l6-int8-whole8+{_FEATURES}@3": "whole",
            f"minilm-l6-int8-mix8+{_FEATURES}@3": "mix"}
FEATURE_VERSION = f"minilm-l6-int8-mix8+{_FEATURES}@3"
SHIPPED_DIR = Path(__file__).resolve().parent / "heads_shipped"
MAX_TEXT = 20_000  # characters read for n-grams

_SPACE = re.compile(r"\s+")


def char_features(text: str) -> tuple[np.ndarray, np.ndarray]:
    """Hashed character n-grams of `text`: (bucket indices, weights), L2-normalised."""
    padded = " " + _SPACE.sub(" ", text[:MAX_TEXT].lower()).strip() + " "
    counts: dict[int, int] = {}
    data = padded.encode("utf-8", "replace")
    for n in CHAR_NGRAMS:
        for i in range(len(data) - n + 1):
            h = zlib.crc32(data[i:i + n]) & (CHAR_DIM - 1)
            counts[h] = counts.get(h, 0) + 1
    if not counts:
        return np.zeros(0, np.int64), np.zeros(0, np.float32)
    idx = np.fromiter(counts.keys(), np.int64, len(counts))
    val = 1.0 + np.log(np.fromiter(counts.values(), np.float32, len(counts)))
    return idx, (val / np.linalg.norm(val)).astype(np.float32)


# The optional words block (the routing heads since 0.4.0; older head files lack it): hashed
# word unigrams and bigrams of the whole text, the words that open it (its first line, up to
# OPENING_WORDS: where a prompt's verb and request sit), and a few structure features (length,
# code fences and diffs, a question, an interrogative or imperative start, headings, unfilled
# placeholders). Numpy and the standard library only, like char_features.
WORD_DIM = 1 << 12
OPENING_WORDS = 12
STRUCT = ("length", "lines", "fence", "diff", "question", "ends_question", "asks", "edit_verb", "read_verb",
          "headings", "bullets", "placeholder", "path", "numbered", "bias")
WORD_FEATURES = f"words1-2+open{OPENING_WORDS}x{WORD_DIM}+struct{len(STRUCT)}@1"
_WORD = re.compile(r"[a-z0-9_$]+(?:['.-][a-z0-9_]+)*")
_ASKS = frozenset("what why how where when which who whom whose is are was were does do did can could should would "
                  "will shall may might has have explain".split())
_EDIT = frozenset("fix add implement create update refactor write build make change remove delete rename move migrate "
                  "convert generate install replace set setup introduce extract rewrite modify edit apply commit push "
                  "deploy publish bump upgrade port integrate wire hook enable disable support use insert append "
                  "split merge scaffold init initialize release optimize optimise clean format lint".split())
_READ = frozenset("explain review check find analyze analyse describe summarize summarise list show look investigate "
                  "audit evaluate compare read tell inspect assess identify locate search trace understand walk "
                  "outline estimate propose suggest recommend critique verify examine diagnose plan".split())
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s", re.M)
_BULLET = re.compile(r"^\s*[-*+]\s", re.M)
_NUMBERED = re.compile(r"^\s*\d+[.)]\s", re.M)
_PLACEHOLDER = re.compile(r"\$ARGUMENTS|\$\d\b|\{\{[^}]*\}\}|\[(?:describe|insert|your|add|enter)[^\]]*\]|<[a-z_ -]{2,30}>",
                          re.I)
_PATH = re.compile(r"\b[\w./-]+\.(?:py|ts|tsx|js|jsx|go|rs|java|kt|rb|php|c|h|cc|cpp|cs|swift|md|json|ya?ml|toml|sql|sh|css|html)\b")
_DIFF = re.compile(r"^(?:diff --git|@@ |\+\+\+ |--- a/)", re.M)


def _bucket(token: str) -> int:
    return zlib.crc32(token.encode("utf-8", "replace")) % (WORD_DIM - len(STRUCT))


def structure(text: str) -> np.ndarray:
    """The structure features of `text`, each in about [0, 1]."""
    t = text[:MAX_TEXT]
    words = _WORD.findall(t[:400].lower())
    first = words[0] if words else ""
    stripped = t.rstrip()
    return np.array([
        math.log1p(len(t)) / 10, math.log1p(t.count("\n")) / 6, float("```" in t), float(bool(_DIFF.search(t))),
        float("?" in t), float(stripped.endswith("?")), float(first in _ASKS), float(first in _EDIT),
        float(first in _READ), math.log1p(len(_HEADING.findall(t))) / 3, math.log1p(len(_BULLET.findall(t))) / 3,
        float(bool(_PLACEHOLDER.search(t))), float(bool(_PATH.search(t))), math.log1p(len(_NUMBERED.findall(t))) / 3,
        1.0], np.float32)


def word_features(text: str) -> tuple[np.ndarray, np.ndarray]:
    """The words block of `text`: (bucket indices, values). Hashed word unigrams and bigrams and
    the opening words (log counts, the n-grams L2-normalised together) in the first
    WORD_DIM - len(STRUCT) buckets, the structure features in the last len(STRUCT)."""
    t = text[:MAX_TEXT].lower()
    words = _WORD.findall(t)
    counts: dict[int, int] = {}
    for i, w in enumerate(words):
        h = _bucket(w)
        counts[h] = counts.get(h, 0) + 1
        if i:
            h = _bucket(words[i - 1] + " " + w)
            counts[h] = counts.get(h, 0) + 1
    line = t.lstrip().split("\n", 1)[0]
    for i, w in enumerate(_WORD.findall(line)[:OPENING_WORDS]):
        h = _bucket(f"^{i}:{w}" if i < 2 else f"^:{w}")
        counts[h] = counts.get(h, 0) + 1
    base = WORD_DIM - len(STRUCT)
    struct_idx = np.arange(base, WORD_DIM, dtype=np.int64)
    if not counts:
        return struct_idx, structure(text)
    idx = np.fromiter(counts.keys(), np.int64, len(counts))
    val = 1.0 + np.log(np.fromiter(counts.values(), np.float32, len(counts)))
    val = (val / np.linalg.norm(val)).astype(np.float32)
    return np.concatenate([idx, struct_idx]), np.concatenate([val, structure(text)])


def option_texts(question: Any) -> list[str]:
    """What each label means, in label order, for the similarity features: the option's
    description, else its label (a bare yes/no question: "yes" / "no")."""
    from ...model.render import render

    if question.type == "noul":
        crit = question.criteria or {}
        return [render(crit["true"]) if crit.get("true") else "yes", render(crit["false"]) if crit.get("false") else "no"]
    if question.type == "choice":
        return [f"{label}: {render(desc)}" if desc not in (None, "") else label for label, desc in question.label_descriptions()]
    return [render(level) for level in question.criteria]


def similarities(embedding: np.ndarray, options: np.ndarray) -> np.ndarray:
    """The similarity features of one text: (labels,), or (n, labels) for a batch."""
    return (embedding @ options.T) * SIM_SCALE


class HeadError(ValueError):
    """A head file that cannot be used (says why)."""


@dataclass
class Head:
    meta: dict[str, Any]
    W: np.ndarray  # (classes, EMBED_DIM + CHAR_DIM + classes)
    b: np.ndarray  # (classes,)
    path: Path | None = None
    W_words: np.ndarray | None = None  # (classes, WORD_DIM): the optional words block (word_features)

    @property
    def name(self) -> str:
        return self.meta["name"]

    @property
    def labels(self) -> list[str]:
        return list(self.meta["labels"])

    @property
    def question_hash(self) -> str:
        return self.meta["question_hash"]

    @property
    def reading(self) -> str:
        """"first", "whole" or "mix": which embedding of the evidence this head was trained on."""
        return READINGS[self.meta["feature_version"]]

    @property
    def temperature(self) -> float:
        return float(self.meta["temperature"])

    @property
    def escalate_below(self) -> float:
        """Below this confidence the accurate tier is asked too (0: never)."""
        return float(self.meta.get("cascade", {}).get("below", 0.0))

    @property
    def head_weight(self) -> float:
        """The head's weight in the llm+head blend (0: the llm decides alone)."""
        return float(self.meta.get("cascade", {}).get("head_weight", 0.5))

    @property
    def words_weight(self) -> float:
        """The words block's weight (0: a head without it)."""
        return float(self.meta.get("words_weight", 0.0)) if self.W_words is not None else 0.0

    def logits(self, embedding: np.ndarray, chars: tuple[np.ndarray, np.ndarray], sims: np.ndarray,
               words: tuple[np.ndarray, np.ndarray] | None = None) -> np.ndarray:
        """`words` (word_features of the same text) is read only by a head with the words block,
        and computed from nothing else: such a head refuses to answer without it."""
        idx, val = chars
        weight = float(self.meta.get("chars_weight", 1.0))
        z = self.W[:, :EMBED_DIM] @ embedding + self.W[:, EMBED_DIM + CHAR_DIM:] @ sims + self.b
        if weight and len(idx):
            z = z + weight * (self.W[:, EMBED_DIM + idx] @ val)
        if self.W_words is not None:
            if words is None:
                raise ValueError(f"head {self.name} reads the words block: pass word_features(text)")
            widx, wval = words
            if len(widx):
                z = z + self.words_weight * (self.W_words[:, widx] @ wval)
        return z

    def probs(self, embedding: np.ndarray, chars: tuple[np.ndarray, np.ndarray], sims: np.ndarray,
              words: tuple[np.ndarray, np.ndarray] | None = None) -> np.ndarray:
        return softmax(self.logits(embedding, chars, sims, words) / self.temperature)

    # -- files ---------------------------------------------------------------------------------
    def save(self, path: Path, mode: int = 0o600) -> None:
        """Atomic write (temp file + rename): a reader never sees half a head."""
        meta = {**self.meta, "checksum": checksum(self.W, self.b, self.W_words)}
        import io

        from ...paths import write_atomic

        buffer = io.BytesIO()
        arrays: dict[str, Any] = {"W": self.W.astype(np.float32), "b": self.b.astype(np.float32)}
        if self.W_words is not None:
            arrays["W_words"] = self.W_words.astype(np.float32)
        np.savez_compressed(buffer, **arrays, meta=np.array(json.dumps(meta, ensure_ascii=False)))
        write_atomic(path, buffer.getvalue(), mode)

    @classmethod
    def load(cls, path: Path) -> "Head":
        """Reads and checks a head file; HeadError says what is wrong with it."""
        try:
            with np.load(path, allow_pickle=False) as data:
                W, b, meta_text = data["W"], data["b"], str(data["meta"])
                W_words = data["W_words"] if "W_words" in data.files else None
        except Exception as exc:  # noqa: BLE001 - truncated zip, bad member, missing key...
            raise HeadError(f"unreadable ({type(exc).__name__}: {str(exc)[:120]})") from None
        try:
            meta = bounded_json.file_loads(meta_text)
        except ValueError:
            raise HeadError("its metadata is not JSON") from None
        _check(meta, W, b, W_words)
        return cls(meta, W.astype(np.float32), b.astype(np.float32), path,
                   None if W_words is None else W_words.astype(np.float32))


def checksum(W: np.ndarray, b: np.ndarray, W_words: np.ndarray | None = None) -> str:
    """Of the weights; a head without the words block has the checksum it always had."""
    data = W.astype(np.float32).tobytes() + b.astype(np.float32).tobytes()
    if W_words is not None:
        data += W_words.astype(np.float32).tobytes()
    return hashlib.sha256(data).hexdigest()


def _check(meta: Any, W: np.ndarray, b: np.ndarray, W_words: np.ndarray | None = None) -> None:
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise HeadError(f"format {meta.get('format') if isinstance(meta, dict) else '?'}, expected {FORMAT}")
    if meta.get("feature_version") not in READINGS:
        raise HeadError(f"made for features {meta.get('feature_version')!r}, this engine computes "
                        + " or ".join(repr(v) for v in READINGS))
    for key in ("name", "question_hash", "type", "labels", "temperature"):
        if key not in meta:
            raise HeadError(f"metadata lacks {key!r}")
    labels = meta["labels"]
    if not isinstance(labels, list) or len(labels) < 2:
        raise HeadError("needs at least two labels")
    if W.shape != (len(labels), EMBED_DIM + CHAR_DIM + len(labels)) or b.shape != (len(labels),):
        raise HeadError(f"weights of shape {W.shape}/{b.shape} do not fit {len(labels)} labels")
    if not (np.isfinite(W).all() and np.isfinite(b).all()):
        raise HeadError("weights are not finite")
    if W_words is not None or "words_features" in meta:
        if meta.get("words_features") != WORD_FEATURES:
            raise HeadError(f"made for a words block {meta.get('words_features')!r}, this engine computes "
                            f"{WORD_FEATURES!r}")
        if W_words is None:
            raise HeadError("its metadata names a words block its file lacks")
        if W_words.shape != (len(labels), WORD_DIM):
            raise HeadError(f"words weights of shape {W_words.shape} do not fit {len(labels)} labels")
        if not np.isfinite(W_words).all():
            raise HeadError("words weights are not finite")
        ww = meta.get("words_weight")
        if not isinstance(ww, (int, float)) or not (math.isfinite(ww) and ww > 0):
            raise HeadError(f"words weight {ww!r} is not a positive number")
    t = meta["temperature"]
    if not isinstance(t, (int, float)) or not (math.isfinite(t) and t > 0):
        raise HeadError(f"temperature {t!r} is not a positive number")
    if meta.get("checksum") != checksum(W, b, W_words):
        raise HeadError("weights do not match their checksum (corrupt file)")


def softmax(z: np.ndarray) -> np.ndarray:
    z = z - z.max()
    p = np.exp(z)
    return p / p.sum()


def labels_of(question: Any) -> list[str]:
    from ...model.requests import answer_labels

    return answer_labels(question)


class HeadStore:
    """The heads this engine may use: shipped ones, then the user's (which win). The user
    directory is re-read when it changes, so a running daemon picks up `system1 teach`."""

    def __init__(self, user_dir: Path | None, shipped_dir: Path | None = SHIPPED_DIR):
        self.user_dir, self.shipped_dir = user_dir, shipped_dir
        self._lock = threading.Lock()
        self._shipped: dict[str, Head] | None = None
        self._user: dict[str, Head] = {}
        self._user_stamp: Any = None
        self._refused: set[tuple[str, Any]] = set()

    def find(self, question: Any) -> Head | None:
        """The head for this question's exact wording and labels, or None."""
        key = question.wording_hash()
        with self._lock:
            if self._shipped is None:
                self._shipped = self._read(self.shipped_dir)
            self._refresh_user()
            head = self._user.get(key) or self._shipped.get(key)
        if head is not None and head.labels != labels_of(question):
            return None  # same wording hash, other labels: cannot happen short of a hand-made file
        return head

    def all(self) -> dict[str, tuple[str, Head]]:
        """{question hash: (origin, head)}, the user's replacing shipped ones."""
        with self._lock:
            if self._shipped is None:
                self._shipped = self._read(self.shipped_dir)
            self._refresh_user()
            out = {k: ("shipped", h) for k, h in self._shipped.items()}
            out.update({k: ("user", h) for k, h in self._user.items()})
        return out

    def _refresh_user(self) -> None:
        stamp = _stamp(self.user_dir)
        if stamp != self._user_stamp:
            self._user_stamp = stamp
            self._user = self._read(self.user_dir)

    def _read(self, folder: Path | None) -> dict[str, Head]:
        heads: dict[str, Head] = {}
        if folder is None or not folder.is_dir():
            return heads
        for path in sorted(folder.glob("*.npz")):
            try:
                head = Head.load(path)
            except HeadError as exc:
                mark = (str(path), _file_stamp(path))
                if mark not in self._refused:  # one warning per file version, not per request
                    self._refused.add(mark)
                    log.warning("head %s refused: %s; its question is answered zero-shot", path, exc)
                continue
            heads[head.question_hash] = head
        return heads


def _file_stamp(path: Path) -> Any:
    try:
        st = path.stat()
        return (st.st_mtime_ns, st.st_size)
    except OSError:
        return None


def _stamp(folder: Path | None) -> Any:
    """Changes when a head is added, replaced or removed (directory and file times)."""
    if folder is None:
        return None
    try:
        return (folder.stat().st_mtime_ns,
                tuple(sorted((p.name, _file_stamp(p)) for p in folder.glob("*.npz"))))
    except OSError:
        return None


def reader(engine: Any, reading: str) -> Any:
    """The FastEngine method that computes a reading's embeddings."""
    return {"first": engine.embed, "whole": engine.embed_whole, "mix": engine.embed_mix}[reading]
