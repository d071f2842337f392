"""Prompts of the accurate tier: question block first (cached), evidence last.

A question becomes (prefix, options, reminder): the prefix is the system prompt plus the
question with its options, the part every decision on the same question shares; the evidence
and a one-line reminder of the expected answer form the per-decision suffix.
"""

from __future__ import annotations

from ...model import Question
from ...render import render

SYSTEM = (
    "You are a precise classifier for a coding agent. Read the question and the text, "
    "apply the definitions literally, and answer with exactly one of the allowed options."
)


def _chat_prefix(user_block: str) -> str:
    return (
        f"<|im_start|>system\n{SYSTEM}<|im_end|>\n"
        f"<|im_start|>user\n{user_block}\n\nText:\n"
    )


def build(question: Question) -> tuple[str, list[str], str]:
    """(prefix, options, reminder) for one canonical question."""
    instr = render(question.instructions) if question.instructions is not None else ""
    if question.type == "noul":
        options = ["yes", "no"]
        crit = question.criteria or {}
        lines = [instr]
        if crit.get("true") is not None:
            lines.append(f"Answer yes if: {render(crit['true'])}")
        if crit.get("false") is not None:
            lines.append(f"Answer no if: {render(crit['false'])}")
        lines.append("Answer with one word: yes or no.")
        reminder = f"{instr}\nAnswer yes or no."
    elif question.type == "choice":
        options = list(question.labels)
        described = [
            f"- {label}: {render(desc)}" if desc is not None else f"- {label}"
            for label, desc in question.label_descriptions()
        ]
        lines = [instr, "Options:", *described,
                 "Answer with the option name only: " + ", ".join(options) + "."]
        reminder = f"{instr}\nAnswer with one of: " + ", ".join(options) + "."
    else:  # score
        options = [str(i) for i in range(len(question.criteria))]
        levels = [f"{i}: {render(desc)}" for i, desc in enumerate(question.criteria)]
        lines = [instr, "Levels:", *levels,
                 f"Answer with the level number only (0 to {len(options) - 1})."]
        reminder = f"{instr}\nAnswer with the level number (0 to {len(options) - 1})."
    return _chat_prefix("\n".join(line for line in lines if line)), options, reminder


def suffix(state_text: str, reminder: str | None) -> str:
    tail = f"\n\n{reminder}" if reminder else ""
    return f"{state_text}{tail}<|im_end|>\n<|im_start|>assistant\n"
