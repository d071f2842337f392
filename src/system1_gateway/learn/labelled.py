"""Labelled decisions in the dev-set shape — `{"state", "question", "expected"}` per line —
read and checked once for `teach` and `calibrate` (no scikit-learn here).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import bounded_json
from ..providers.embedded.heads import labels_of


@dataclass
class Group:
    question: Any  # the validated question model
    key: str
    lines: list[int] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)
    states: list[Any] = field(default_factory=list)
    y: list[int] = field(default_factory=list)
    names: set[str] = field(default_factory=set)


class LabelError(ValueError):
    pass


def read_labels(path: Path) -> tuple[dict[str, Group], list[str]]:
    """Groups of valid lines by question, and one message per rejected line (file:line: why)."""
    from pydantic import ValidationError

    from ..model.render import render
    from ..model.requests import describe_validation_error, parse_judge

    groups: dict[str, Group] = {}
    rejected: list[str] = []
    try:
        raw_lines = path.read_bytes().splitlines()
    except OSError as exc:
        raise LabelError(f"{path}: cannot read: {exc.strerror or exc}") from None
    for number, raw in enumerate(raw_lines, start=1):
        where = f"{path}:{number}"
        if not raw.strip():
            continue
        try:
            item = bounded_json.loads(raw.decode("utf-8-sig"))
        except UnicodeDecodeError:
            rejected.append(f"{where}: not UTF-8 text")
            continue
        except (ValueError, RecursionError) as exc:
            rejected.append(f"{where}: invalid JSON ({exc})")
            continue
        if not isinstance(item, dict):
            rejected.append(f"{where}: expected a JSON object with state, question, expected")
            continue
        missing = [k for k in ("state", "question", "expected") if k not in item]
        if missing:
            rejected.append(f"{where}: missing {', '.join(missing)}")
            continue
        try:
            question = parse_judge({"state": item["state"], "questions": {"q": item["question"]}}).questions["q"]
        except ValidationError as exc:
            rejected.append(f"{where}: {describe_validation_error(exc).replace('questions.q', 'question')}")
            continue
        try:
            label = _label_index(question, item["expected"])
        except LabelError as exc:
            rejected.append(f"{where}: expected: {exc}")
            continue
        key = question.wording_hash()
        group = groups.setdefault(key, Group(question, key))
        group.lines.append(number)
        group.states.append(item["state"])
        group.texts.append(render(item["state"]) or "(no text)")
        group.y.append(label)
        if isinstance(item.get("task"), str):
            group.names.add(item["task"])
    return groups, rejected


def _label_index(question: Any, expected: Any) -> int:
    labels = labels_of(question)
    if question.type == "noul":
        if isinstance(expected, bool):
            return 0 if expected else 1
        if expected in ("true", "false"):
            return labels.index(expected)
        raise LabelError(f"{expected!r} is not true or false")
    if question.type == "score":
        if isinstance(expected, bool) or not isinstance(expected, (int, str)) or str(expected) not in labels:
            raise LabelError(f"{str(expected)[:80]!r} is not a level 0..{len(labels) - 1}")
        return labels.index(str(expected))
    if not isinstance(expected, str) or expected not in labels:
        raise LabelError(f"{str(expected)[:80]!r} is not one of the labels ({', '.join(labels[:10])}"
                         f"{', …' if len(labels) > 10 else ''})")
    return labels.index(expected)


