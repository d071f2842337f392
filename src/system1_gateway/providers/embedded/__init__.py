"""`embedded`: the default provider, an in-process engine whose models ship in registry packages.

Two tiers (measured in docs/studies/embedded-engine.md):
  * `llm`  — Qwen2.5-Coder-1.5B-Instruct on llama.cpp (extra `system1-gateway[local]`);
             answers every question type; cost grows with the evidence's length.
  * `fast` — all-MiniLM-L6-v2 int8 on onnxruntime (base install); a few ms, but only for
             questions whose every option carries a description.
Routing in `auto`, per question, as measured best on the dev set:
  * undescribed questions (bare labels, bare yes/no) → llm;
  * described questions → fast first; when fast is sure (max p ≥ `fast_accept`) its answer
    stands, otherwise the llm answers and the two distributions are blended (weighted
    geometric mean, fast weight `fast_weight`), which beat either tier alone;
  * without the llm installed, described questions → fast, the rest → `provider_error`
    naming the extra.

Bias correction without labels (`prior`, on by default; prior.py): each tier's answers are
divided by its mean answer to the question's own option descriptions read as evidence,
computed once per question and model and cached (memory and `<state>/embedded/reference/`).
An answer therefore depends only on the request, the model and the question, never on what
other requests asked before. Not corrected: questions without a description for every
option (no balanced reference exists), and the llm's answer to a question asked without
evidence (its subject is in the question).

Caller text is tokenized as text (prompts.py, llm.py): evidence cannot close the chat turn.
Evidence that spells chat turn markers (`<|im_end|>`, `[INST]`, …) is still answered, and the
answers are abstained: as words, a fake transcript sways the model (measured in
benchmarks/embedded_injection.py).

A question new to the accurate tier never makes its request fail or wait: its prompt
prefix and reference are prepared in the background (prepare.py) while the engine is idle,
and meanwhile the question is answered by the fast tier alone when its options are described,
the llm uncorrected when only the reference is missing, or abstained (uniform) when neither
can answer in time; the rationale says which. A prefix short enough for the request's budget
(at the engine's measured decode rate) is decoded inline, within the request.

Learned heads (heads.py) come first: a question whose wording is a built-in's, or one the
user taught (`system1 teach`), is answered from the fast tier's embedding, character n-grams
and option similarities by a small calibrated linear model, in milliseconds; when the head
is unsure (below its fitted `cascade.below`) and the llm is installed, the zero-shot engine
answers too, exactly as it would without the head, and the two are blended (the head's
answer stands if the llm is not ready in time). Heads need only the fast tier, so they work
without the `local` extra.

Models load lazily, once per process, under a lock, with a warm-up decision; `warm()` also
reads the prefix KV files of known questions back, so the first request pays none of it.

The modules: settings.py (EmbeddedSettings, the models' names, usable CPUs), provider.py
(EmbeddedProvider: loading and the tier cascade), questions.py (what the fast tier reads of a
question), replies.py (answers, blends, notes); the engines fast.py and llm.py, heads.py,
prompts.py, prior.py, prepare.py, fifo.py, assets.py.

Importing this package or one of its modules runs none of the others: the names below are
re-exported on first use.
"""

from __future__ import annotations

import importlib
from typing import Any

# Resolved on first use, not imported here (not even for type checkers: the modules import this
# package, so an import here is a cycle); the project's own code imports the modules directly.

_EXPORTS = {"EmbeddedProvider": "provider", "NO_STATE": "provider", "EmbeddedSettings": "settings",
            "usable_cpus": "settings", "LLM_MODEL": "settings", "FAST_MODEL": "settings",
            "describable": "questions", "fast_texts": "questions"}
__all__ = ["EmbeddedProvider", "EmbeddedSettings", "FAST_MODEL", "LLM_MODEL", "NO_STATE", "describable",
           "fast_texts", "usable_cpus"]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f".{module}", __name__), name)
