"""What the fast tier reads of a question: whether every option carries a description (all it
can answer), and the option texts it compares the evidence with."""

from __future__ import annotations

from typing import Any

from ...model.render import render


def describable(question: Any) -> bool:
    """True when every option carries a description (what the fast tier needs)."""
    if question.type == "noul":
        crit = question.criteria or {}
        return all(crit.get(k) not in (None, "") for k in ("true", "false"))
    if question.type == "choice":
        return all(desc not in (None, "") for _, desc in question.label_descriptions())
    return True  # score levels are descriptions


def fast_texts(question: Any) -> tuple[list[str], list[str]]:
    """(labels, option descriptions) for the fast tier."""
    if question.type == "noul":
        return ["true", "false"], [render(question.criteria["true"]), render(question.criteria["false"])]
    if question.type == "choice":
        return question.labels, [f"{label}: {render(desc)}" for label, desc in question.label_descriptions()]
    return question.labels, [render(desc) for desc in question.criteria]
