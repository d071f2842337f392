"""Prompts of the accurate tier: question block first (cached), evidence last.

A question becomes (prefix, options): the prefix is the system prompt plus the question with
its options, the part every decision on the same question shares and that stays in the KV
cache; the per-decision suffix is only the evidence and the chat tags (prompt processing is
compute-bound on CPU, so every suffix token costs latency).

Options are what the model is asked to say, position for position with the question's
answers (true/false, labels, levels). When every description starts with a short head
("Destructive: it deletes…", "Blocking: an outage…"), the heads are the options: the model
names a category it has just read defined, which measured better than bare yes/no or level
numbers on the dev set (docs/studies/embedded-engine.md).
"""

from __future__ import annotations

from typing import Any

from ...model import Question
from ...render import render

# Two frames, each measured best for its kind of question on the dev set (see the study):
# described options → a strict classifier frame; bare yes/no → a plain "Question/Input" frame
# with capitalised Yes/No, where the classifier frame leans hard toward "no".
CLASSIFIER = (
    "You are a precise classifier for a coding agent. Read the question and the text, "
    "apply the definitions literally, and answer with exactly one of the allowed options.",
    "Text",
)
PLAIN = ("You are a helpful assistant.", "Input")


def _heads(descriptions: list[Any]) -> list[str] | None:
    """Short distinct heads before ':' of every description, else None."""
    heads = []
    for desc in descriptions:
        if not isinstance(desc, str) or ":" not in desc:
            return None
        head = desc.split(":", 1)[0].strip()
        if not head or len(head.split()) > 4:
            return None
        heads.append(head)
    return heads if len({h.lower() for h in heads}) == len(heads) else None


def _chat_prefix(user_block: str, frame: tuple[str, str]) -> str:
    system, label = frame
    return f"<|im_start|>system\n{system}<|im_end|>\n<|im_start|>user\n{user_block}\n\n{label}:\n"


def _is_bare_yes_no(labels: list[str], descriptions: list[Any]) -> bool:
    return [label.lower() for label in labels] == ["yes", "no"] and all(d in (None, "") for d in descriptions)


def _yes_no(instr: str, yes: Any, no: Any) -> tuple[str, list[str]]:
    """Capitalised Yes/No in the plain frame: the least biased spelling measured for this
    model (lower-case yes/no in the classifier frame leans hard toward "no")."""
    lines = [f"Question: {instr}"] if instr else []
    if yes not in (None, ""):
        lines.append(f"Yes means: {render(yes)}")
    if no not in (None, ""):
        lines.append(f"No means: {render(no)}")
    lines.append("Answer Yes or No.")
    return _chat_prefix("\n".join(lines), PLAIN), ["Yes", "No"]


def build(question: Question) -> tuple[str, list[str]]:
    """(prefix, options) for one canonical question; options align with its answers."""
    instr = render(question.instructions) if question.instructions is not None else ""
    lines = [instr] if instr else []
    if question.type == "noul":
        crit = question.criteria or {}
        descs = [crit.get("true"), crit.get("false")]
        heads = _heads(descs)
        if heads:
            options = heads
            lines += ["Options:", *(f"- {render(d)}" for d in descs)]
        else:
            return _yes_no(instr, *descs)
    elif question.type == "choice":
        pairs = question.label_descriptions()
        if _is_bare_yes_no([p[0] for p in pairs], [p[1] for p in pairs]):
            return _yes_no(instr, None, None)
        options = list(question.labels)
        lines += ["Options:", *(
            f"- {label}: {render(desc)}" if desc is not None else f"- {label}"
            for label, desc in question.label_descriptions()
        )]
    else:  # score
        heads = _heads(question.criteria)
        if heads:
            options = heads
            lines += ["Levels, lowest first:", *(f"- {render(d)}" for d in question.criteria)]
        else:
            options = [str(i) for i in range(len(question.criteria))]
            lines += ["Levels, lowest first:", *(f"{i}: {render(d)}" for i, d in enumerate(question.criteria))]
    lines.append("Answer with exactly one of: " + ", ".join(options) + ".")
    return _chat_prefix("\n".join(lines), CLASSIFIER), options


def suffix(state_text: str) -> str:
    return f"{state_text}<|im_end|>\n<|im_start|>assistant\n"


def stateless_yes_no(question: Question) -> tuple[str, str] | None:
    """For a bare yes/no question asked without any evidence (decide without context), the
    subject is in the question itself. The usual frame then reads an empty input and leans
    toward "No"; asking the bare question leans toward "Yes" (on 10 probes: p(yes) 0.19–0.72
    vs 0.54–1.0, both ranking all 10 correctly). The engine averages the two frames' logits,
    which cancels most of either bias. Returns the second frame as (prefix, suffix)."""
    prefix, options = build(question)
    if options != ["Yes", "No"] or question.instructions is None:
        return None
    plain_prefix = _chat_prefix_open(PLAIN[0])
    return plain_prefix, f"{render(question.instructions)}\nAnswer Yes or No.<|im_end|>\n<|im_start|>assistant\n"


def _chat_prefix_open(system: str) -> str:
    return f"<|im_start|>system\n{system}<|im_end|>\n<|im_start|>user\n"
