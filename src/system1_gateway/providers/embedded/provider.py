"""The `embedded` provider: the tier cascade (heads first, then the fast tier and the llm, blended,
with the bias correction), lazy loading of each tier, and background preparation of new
questions. The package's docstring (`providers/embedded/__init__.py`) says how it decides."""


import json
import logging
import threading
import time
from typing import Any, ClassVar

from ...logs import LOGGER
from ...model.errors import ConfigError, ProviderFailure, ProviderTimeout
from ...model.render import render
from ...model.requests import JudgeRequest, answer_labels
from ...paths import state_dir
from ..base import BaseProvider, Health, Limits, Reply, parse_settings
from . import assets, prompts
from .prepare import Preparer
from .prior import QuestionPrior, correct, definitions
from .questions import describable, fast_texts
from .replies import ONLY_NOTE, PENDING_NOTE, UNPREPARED_NOTE, abstain_on_markers, answer_of, blend, model_of
from .settings import FAST_MODEL, LLM_MODEL, EmbeddedSettings, usable_cpus

log = logging.getLogger(LOGGER)

NO_STATE = "(no text)"  # what the engines read when a request carries no evidence


class EmbeddedProvider(BaseProvider):
    kind: ClassVar[str] = "embedded"

    def __init__(self, name: str, settings: dict[str, Any]):
        self.name = name
        self.settings: EmbeddedSettings = parse_settings(EmbeddedSettings, name, settings)
        if self.settings.tier == "llm" and not assets.llm_available():
            raise ConfigError(f"[providers.{name}] tier = \"llm\" but the accurate tier is missing; {assets.LOCAL_EXTRA_HINT}")
        self.limits = Limits(max_options=256, max_questions=1000)
        self.threads = self.settings.threads or usable_cpus()
        self._llm: Any = None
        self._fast: Any = None
        self._load_lock = threading.Lock()
        self._local = threading.local()
        self.prior = QuestionPrior(state_dir() / "embedded" / "reference") if self.settings.prior else None
        self._preparer: Preparer | None = None
        self._heads: Any = None  # HeadStore, built on first use (it imports numpy)
        self._llm_installed: bool | None = None

    # -- loading ---------------------------------------------------------------------------
    def _llm_engine(self) -> Any:
        with self._load_lock:
            if self._llm is None:
                from .llm import LlmEngine  # heavy: cyllama + numpy

                try:
                    path = assets.gguf_path()
                except assets.AssetError as exc:
                    raise ProviderFailure(str(exc), kind="model") from None
                engine = LlmEngine(str(path), self.threads, n_ctx=self.settings.n_ctx,
                                   n_slots=self.settings.kv_slots, kv_dir=state_dir() / "embedded" / "kv")
                from .prompts import IM_START, Prompt

                # a few tokens: allocates compute buffers, decodes little
                engine.option_probs(Prompt(IM_START, "user\n"), "ok", ["yes", "no"])
                # known questions' prefixes back from disk: no first request pays for them
                engine.preload()
                self._llm = engine
            return self._llm

    def _fast_engine(self) -> Any:
        with self._load_lock:
            if self._fast is None:
                from .fast import FastEngine  # heavy: onnxruntime + tokenizers + numpy

                try:
                    engine = FastEngine(self.threads)
                except assets.AssetError as exc:
                    raise ProviderFailure(str(exc), kind="model") from None
                engine.option_probs("warm up", ["a", "b"])
                self._fast = engine
            return self._fast

    def _use_llm(self) -> bool:
        tier = self.settings.tier
        if tier != "auto":
            return tier == "llm"
        if self._llm_installed is None:  # looked up once: it finds 22 packages' files (≈ 13 ms)
            self._llm_installed = assets.llm_available()
        return self._llm_installed

    def warm(self) -> None:
        """Loads what every request needs: the fast tier and the learned heads (`tier =
        "llm"`: the accurate tier, which is then all there is; the fast tier loads on first
        need). The accurate tier otherwise loads in `warm_full` — up front in a daemon, or when
        a request first asks a question no head answers, so a process that asks only built-in
        questions never loads its 1 GB."""
        if self.settings.tier == "llm":
            self._llm_engine()
            return
        self._fast_engine()
        store = self.head_store()
        if store is not None:
            self._warm_heads(store)

    def warm_full(self) -> None:
        """The accurate tier's model, compute buffers and the KV files of the questions this
        machine has already prepared."""
        if self._use_llm():
            self._llm_engine()

    def needs_full(self, request: Any) -> bool:
        """A question without a learned head (or with one that may escalate) needs the
        accurate tier, when it is installed and not loaded yet."""
        if self._llm is not None or not self._use_llm():
            return False
        store = self.head_store()
        for question in request.questions.values():
            head = store.find(question) if store is not None else None
            if head is None or head.escalate_below > 0:
                return True
        return False

    def _warm_heads(self, store: Any) -> None:
        """Head files read and checked, the built-ins' option embeddings cached and the
        encoder run once: the first built-in request costs what every later one does."""
        from ...model import builtins as registry
        from ...model.requests import parse_judge
        from .heads import option_texts

        engine = self._fast_engine()
        for _, head in store.all().values():
            found = registry.get(head.meta.get("builtin") or "")
            if found is not None:
                question = parse_judge({"state": "", "questions": {"q": found.question()}}).questions["q"]
                engine.options(option_texts(question))
        engine.embed(["git status"])

    def wait_prepared(self, timeout_s: float) -> bool:
        """Blocks until background preparation of new questions is done (tests, benchmarks,
        a daemon about to report ready); False when `timeout_s` passes first."""
        return self._preparer is None or self._preparer.wait(timeout_s)

    def close(self) -> None:
        if self._preparer is not None:
            self._preparer.close()
            # A background decode still running when the process exits crashed the
            # interpreter's teardown (exit 139 after every answer was printed): cancel it and
            # wait for the thread to leave llama.cpp.
            if self._llm is not None:
                self._llm.cancel_background()
            self._preparer.join(CLOSE_JOIN_S)

    def _prepare_later(self, key: str, job: Any) -> None:
        if self._preparer is None:
            from .llm import Preempted

            self._preparer = Preparer(Preempted)
        self._preparer.submit(key, job)

    # -- answering -------------------------------------------------------------------------
    def _route(self, question: Any) -> str:
        """`llm`, `fast` or `blend` (fast first; llm+fast when fast is not sure)."""
        tier = self.settings.tier
        if self._use_llm():
            return "blend" if tier == "auto" and describable(question) else "llm"
        if describable(question):
            return "fast"
        what = "a yes/no question without both outcomes described" if question.type == "noul" else "options without descriptions"
        hint = assets.LOCAL_EXTRA_HINT if tier == "auto" else "set tier = \"auto\" or \"llm\""
        raise ProviderFailure(f"the fast tier cannot answer {what}; {hint}", kind="unsupported")

    def _corrected(self, probs: Any, texts: list[str] | None, key_parts: tuple[str, ...], ask: Any,
                   later: Any = None) -> Any:
        """`probs` divided by the tier's mean answer to the question's definitions `texts`
        (when `prior` is on and the question has them).

        `later` (the llm tier, where a new question's reference costs seconds): a reference
        not computed yet is not waited for — this answer stays uncorrected (its rationale
        says so) and `later(key, n, texts)` queues its computation in the background, so a
        new question never makes a request time out."""
        if self.prior is None or texts is None:
            return probs
        key = QuestionPrior.key(*key_parts, *texts)
        if later:
            ref = self.prior.cached(key, len(probs))
            if ref is None:
                self._pending().append(key)
                later(key, len(probs), texts)
                return probs
            return correct(probs, ref)
        return correct(probs, self.prior.reference(key, len(probs), texts, ask))

    def _pending(self) -> list[Any]:
        """References this request still has to compute (per thread: requests may overlap)."""
        if not hasattr(self._local, "pending"):
            self._local.pending = []
        return self._local.pending

    def _llm_asks(self, questions: list[Any], state_text: str, deadline: float, optional: list[bool],
                  timeout_s: float) -> list[Any]:
        """The llm's answers to `questions` on one evidence, position for position; None for
        a question whose prompt prefix is not prepared and would not be within this request's
        budget (its preparation is queued), or an `optional` one (the fast tier has an
        answer) when the estimated decode no longer fits the time left.

        Questions with ready prefixes have their evidence decoded in one llama.cpp batch
        (LlmEngine.batch_probs): the per-question prompts, one decode."""
        from .llm import MAX_BRANCHES, EngineTimeout

        engine = self._llm_engine()
        asks = [_Ask(q, *prompts.build(q)) for q in questions]
        suffix = prompts.suffix(state_text)
        evidence = len(engine.encode(suffix))
        ready = []
        for i, ask in enumerate(asks):
            missing = engine.missing_tokens(ask.prefix)
            if missing and (missing + evidence) / engine.tokens_per_s > INLINE_SHARE * (deadline - time.monotonic()):
                self._prepare(engine, ask)
            else:
                ready.append(i)
        together = state_text != NO_STATE and len(ready) > 1 and all(engine.scorable_at_once(asks[i].options) for i in ready)
        groups = [ready[k:k + MAX_BRANCHES] for k in range(0, len(ready), MAX_BRANCHES)] if together else [[i] for i in ready]
        try:
            for group in groups:
                # A group the fast tier has answers for stops short of the attempt's end (the
                # core's clock started before ours): its answers then stand, not a timeout.
                spare = all(optional[i] for i in group)
                until = deadline - (max(SPARE_MARGIN_S, SPARE_MARGIN_SHARE * timeout_s) if spare else 0.0)
                try:
                    if together:
                        probs = engine.batch_probs([(asks[i].prefix, suffix, asks[i].options) for i in group],
                                                   until - time.monotonic())
                    else:
                        probs = [self._ask_one(engine, asks[i], state_text, until) for i in group]
                except EngineTimeout:
                    if not spare:
                        raise
                    continue
                for i, p in zip(group, probs, strict=False):
                    asks[i].probs = p
        except EngineTimeout as exc:
            raise ProviderTimeout(f"{self.name}: {exc}") from None
        except ValueError as exc:  # prompt longer than the context window
            raise ProviderFailure(str(exc), kind="engine") from None
        if state_text != NO_STATE:
            for ask in asks:
                if ask.probs is not None:
                    ask.probs = self._corrected(ask.probs, definitions(ask.question), ask.key, None,
                                                later=lambda *_, ask=ask: self._prepare(engine, ask))
        return [ask.probs for ask in asks]

    def _ask_one(self, engine: Any, ask: Any, state_text: str, deadline: float) -> Any:
        probs = engine.option_probs(ask.prefix, prompts.suffix(state_text), ask.options, deadline - time.monotonic())
        if state_text == NO_STATE:
            # The subject is in the question, which content-free evidence shares: a
            # correction would divide the answer by itself. Two frames instead.
            second = prompts.stateless_yes_no(ask.question)
            if second is not None:
                other = engine.option_probs(*second, ask.options, deadline - time.monotonic())
                probs = blend(probs, other, 0.5)
        return probs

    def _prepare(self, engine: Any, ask: Any) -> None:
        """Queues a question's prefix and its reference (when it has one) for the background."""
        texts = definitions(ask.question)
        ref_key = None if texts is None or self.prior is None else QuestionPrior.key(*ask.key, *texts)
        n = len(ask.options)

        def job() -> None:
            engine.prepare(ask.prefix)
            if ref_key is not None and texts is not None and self.prior is not None:
                self.prior.reference(ref_key, n, texts, lambda text: engine.option_probs(
                    ask.prefix, prompts.suffix(text), ask.options, PREPARE_TIMEOUT_S, urgent=False))
        self._prepare_later(ask.prefix.signature() + (ref_key or ""), job)

    def _ask_fast(self, question: Any, state_text: str) -> Any:
        _, descriptions = fast_texts(question)
        engine = self._fast_engine()
        probs = engine.option_probs(state_text, descriptions)
        key = ("fast", FAST_MODEL, assets.MINILM_ONNX_SHA256, json.dumps(descriptions))
        return self._corrected(probs, definitions(question), key, lambda text: engine.option_probs(text, descriptions))

    def head_store(self) -> Any:
        """The learned heads this engine uses (None when `heads = false`)."""
        if self._heads is None and self.settings.heads:
            from .heads import HeadStore

            self._heads = HeadStore(state_dir() / "heads")
        return self._heads

    def _head_answers(self, questions: list[Any], state_text: str) -> list[Any]:
        """(head, probabilities) for each question a learned head answers, else None. The
        evidence's features are computed once for all of them."""
        store = self.head_store()
        heads = [store.find(q) if store is not None else None for q in questions]
        if not any(heads):
            return [None] * len(questions)
        from .heads import char_features, option_texts, similarities, word_features

        engine = self._fast_engine()
        embeddings = {r: engine.read(r, [state_text])[0] for r in {h.reading for h in heads if h is not None}}
        chars = char_features(state_text)
        words = word_features(state_text) if any(h is not None and h.W_words is not None for h in heads) else None
        return [None if h is None else
                (h, h.probs(embeddings[h.reading], chars,
                            similarities(embeddings[h.reading], engine.options(option_texts(q))), words))
                for q, h in zip(questions, heads, strict=False)]

    def prefetch(self, requests: list[Any]) -> int:
        """The batch path (`judge --jsonl`, `bulk`): computes ahead, in a few batched runs of
        the fast tier's encoder, the embeddings that answering `requests` (JudgeRequests,
        shell parts included) will read: each learned head's reading of its evidence, and
        the first window for a question the fast tier answers zero-shot. `judge` then finds
        them instead of running the encoder once per request; its answers are the same.
        Kept until `forget` (or the next prefetch). Returns how many vectors it keeps."""
        if self.settings.tier == "llm":
            return 0
        store = self.head_store()
        readings: dict[str, str | None] = {}  # per question wording: the reading it needs
        wanted: dict[str, set[str]] = {}
        for request in requests:
            text = render(request.state) or NO_STATE
            for question in request.questions.values():
                key = question.wording_hash()
                if key not in readings:
                    head = store.find(question) if store is not None else None
                    readings[key] = head.reading if head is not None else (
                        "first" if describable(question) else None)
                if readings[key] is not None:
                    wanted.setdefault(readings[key], set()).add(text)  # type: ignore[arg-type]
        if not wanted:
            return 0
        return self._fast_engine().prefetch(wanted)

    def forget(self) -> None:
        """Drops what `prefetch` kept."""
        if self._fast is not None:
            self._fast.forget()

    def _decide_all(self, questions: list[Any], state_text: str, deadline: float,
                    timeout_s: float) -> list[tuple[str, Any]]:
        """(tier, probabilities) per question. A question with a learned head is answered by
        it (`head:<name>`) unless the head is unsure (below its `cascade.below`) and the llm
        is installed: then the zero-shot engine answers it too, exactly as without the head,
        and the two are blended (e.g. `llm+fast+head:<name>`: the blend its fit measured); if
        the llm is not ready in time the head's answer stands (`head:<name>-only`)."""
        headed = self._head_answers(questions, state_text)
        llm_ok = self._use_llm()
        escalate = [h is not None and llm_ok and h[1].max() < h[0].escalate_below for h in headed]
        asked = [i for i, h in enumerate(headed) if h is None or escalate[i]]
        zero_shot = self._zero_shot([questions[i] for i in asked], state_text, deadline, timeout_s,
                                    [escalate[i] for i in asked]) if asked else []
        out: list[Any] = [None if h is None else (f"head:{h[0].name}", h[1]) for h in headed]
        for i, (tier, probs) in zip(asked, zero_shot, strict=False):
            if not escalate[i]:
                out[i] = (tier, probs)
            elif probs is None or tier.endswith("-only"):
                # the llm was wanted and did not answer in time: the head's answer stands
                out[i] = (f"head:{headed[i][0].name}-only", headed[i][1])
            else:
                head, head_probs = headed[i]
                out[i] = (f"{tier}+head:{head.name}", blend(probs, head_probs, head.head_weight))
        return out

    def _zero_shot(self, questions: list[Any], state_text: str, deadline: float, timeout_s: float,
                   spare: list[bool]) -> list[tuple[str, Any]]:
        """The tiers' own answers. Tiers: `llm`, `fast`, `llm+fast`; `fast-only` (the llm was
        wanted but is not prepared or out of time); `unprepared` (no tier can answer now:
        probabilities None). `spare[i]`: the question has an answer already (a head's), so
        the llm answers it only while time allows."""
        routes = [self._route(q) for q in questions]
        fast = [None if r == "llm" else self._ask_fast(q, state_text) for q, r in zip(questions, routes, strict=False)]
        want = [i for i, (r, f) in enumerate(zip(routes, fast, strict=False))
                if r == "llm" or (r == "blend" and f is not None and f.max() < self.settings.fast_accept)]
        llm = self._llm_asks([questions[i] for i in want], state_text, deadline,
                             [fast[i] is not None or spare[i] for i in want], timeout_s) if want else []
        out: list[Any] = [("fast", f) for f in fast]
        for i, p in zip(want, llm, strict=False):
            if p is None:
                out[i] = ("unprepared", None) if fast[i] is None else ("fast-only", fast[i])
            else:
                out[i] = ("llm", p) if fast[i] is None else ("llm+fast", blend(p, fast[i], self.settings.fast_weight))
        return out

    def judge(self, request: JudgeRequest, timeout_s: float) -> Reply:
        deadline = time.monotonic() + timeout_s
        state_text = render(request.state) or NO_STATE
        answers: dict[str, dict[str, Any]] = {}
        used: set[str] = set()
        self._local.pending = []
        qids = list(request.questions)
        decided = self._decide_all([request.questions[q] for q in qids], state_text, deadline, timeout_s)
        pending = set(self._pending())
        for qid, (tier, probs) in zip(qids, decided, strict=False):
            question = request.questions[qid]
            labels = answer_labels(question)
            if tier == "unprepared":
                answers[qid] = answer_of(question.type, labels, [1 / len(labels)] * len(labels), "(no tier ready)")
                answers[qid]["abstained"] = True
                answers[qid]["rationale"] += UNPREPARED_NOTE
                continue
            note = ONLY_NOTE.format("the learned head" if tier.startswith("head") else "the fast tier") \
                if tier.endswith("-only") else ""
            tier = tier.removesuffix("-only")
            answers[qid] = answer_of(question.type, labels, probs, tier)
            answers[qid]["rationale"] += note
            # The key its calibration is fitted under: a head names itself (a new checkpoint
            # invalidates its fits); a zero-shot answer names the configured tiers, whichever
            # path answered this one, so one question's labels are not split between paths.
            answers[qid]["model"] = model_of(tier) if tier.startswith("head:") else self._zero_shot_model()
            if tier.startswith("head:"):
                answers[qid]["calibrated"] = True  # its temperature was fitted on held-out folds
            used.update(tier.split("+"))
            if "llm" in tier and pending and self._reference_key(question) in pending:
                answers[qid]["rationale"] += PENDING_NOTE
        if prompts.holds_turn_markers(state_text):
            abstain_on_markers(answers)
        model = model_of("+".join(sorted(used)))
        return Reply(answers=answers, model=model or (LLM_MODEL if self._use_llm() else FAST_MODEL))

    def _zero_shot_model(self) -> str:
        if not self._use_llm():
            return model_of("fast")
        return model_of("llm" if self.settings.tier == "llm" else "fast+llm")

    def _reference_key(self, question: Any) -> str | None:
        texts = definitions(question)
        if texts is None:
            return None
        ask = _Ask(question, *prompts.build(question))
        return QuestionPrior.key(*ask.key, *texts)

    def health(self, timeout_s: float) -> Health:
        if self._use_llm():
            return Health(True, "accurate tier (llm) installed" + ("" if self._llm is None else ", loaded"), LLM_MODEL)
        if self.settings.tier == "llm":
            return Health(False, f"accurate tier missing; {assets.LOCAL_EXTRA_HINT}", None)
        try:
            assets.minilm_onnx_path()
        except assets.AssetError as exc:
            return Health(False, str(exc), None)
        return Health(True, f"fast tier only (described options); {assets.LOCAL_EXTRA_HINT}", FAST_MODEL)


class _Ask:
    """One question's llm work in a request: its prompt, options and reference key parts."""

    def __init__(self, question: Any, prefix: Any, options: list[str]):
        self.question, self.prefix, self.options = question, prefix, options
        self.key = ("llm", LLM_MODEL, assets.GGUF_SHA256, prefix.signature(), json.dumps(options))
        self.probs: Any = None


# A new question's prefix is decoded inline only when, at the measured decode rate, it and the
# evidence take at most this share of what is left of the attempt; else it is prepared in
# the background and this request answered without it.
INLINE_SHARE = 0.5
SPARE_MARGIN_S, SPARE_MARGIN_SHARE = 0.1, 0.05  # before the attempt's end, for answers the fast tier has
PREPARE_TIMEOUT_S = 600.0  # one background decode (a definition); requests pre-empt it anyway
CLOSE_JOIN_S = 10.0  # how long close() waits for a background decode to stop
