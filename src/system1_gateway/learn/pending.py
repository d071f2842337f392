"""What needs a label, and the labels given so far.

Items come from the routing log the hooks write (`<state>/logs/routing.jsonl`: a prompt's four
routing features, a guarded command's `destructive`, a spawn's brief and its outcome) and from
`judge --jsonl` requests the user points at. Each item has a stable key, the text that was
judged, the question (a built-in reference or a full question), its answer labels and a
proposed label (the engine's logged answer, or a stronger rung's, or Claude's).

Labels are appended to `<state>/logs/labels.jsonl` as they are given, one line each, so a
session can stop at any key and resume; an undo appends a retraction. The last line for a
key wins. Outcome labels (`outcome:<tool_use_id>`) are read by `evaluate` over the automatic
ones `system1 outcomes --apply` wrote into the routing log.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from ..paths import private_dir, state_file
from ..routing import FEATURES as ROUTING_FEATURES
from ..routing import log as routing_log
from ..routing.log import entries as _lines  # the same tolerant JSON-lines reader, for any file

OUTCOME_LABELS = ["succeeded", "failed"]
MAX_TEXT = 20_000  # a logged prompt longer than this is judged on its head, as the hook did


@dataclass
class Item:
    key: str
    origin: str  # prompt | guard | agent | outcome | jsonl
    text: str  # what was judged (prompt, command, brief); for an outcome, the brief
    question: dict[str, Any]  # {"builtin": name} or a full question; {} for an outcome
    name: str  # a readable name of the question
    labels: list[str]
    proposed: str | None = None
    confidence: float | None = None
    prompt_id: str | None = None
    note: str | None = None  # why it is asked (e.g. the outcome's doubtful reason)


def labels_path() -> Path:
    return Path(state_file("logs", "labels.jsonl"))


def _short_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "replace")).hexdigest()[:12]


def _feature_items(entry: dict[str, Any], origin: str, text: str, ident: str,
                   names: tuple[str, ...]) -> Iterator[Item]:
    features = f if isinstance(f := entry.get("features"), dict) else {}
    for name in names:
        logged = g if isinstance(g := features.get(name), dict) else {}
        answer = logged.get("answer")
        conf = logged.get("confidence")
        yield Item(key=f"{ident}:{name}", origin=origin, text=text, question={"builtin": name}, name=name,
                   labels=["true", "false"], proposed=("true" if answer else "false") if isinstance(answer, bool)
                   else None, confidence=float(conf) if isinstance(conf, (int, float)) else None,
                   prompt_id=entry.get("prompt_id") if isinstance(entry.get("prompt_id"), str) else None)


def from_routing_log(path: Path | None = None) -> Iterator[Item]:
    """Every labellable item the hooks logged, oldest first."""
    for _number, entry in routing_log.entries(path):
        source = entry.get("source")
        if source in ("prompt", "agent"):
            text = entry.get("prompt")
            if not isinstance(text, str) or not text.strip():
                continue
            text = text[:MAX_TEXT]
            if source == "prompt":
                ident = f"prompt:{entry.get('prompt_id') or _short_hash(str(entry.get('ts')) + text)}"
            else:
                ident = f"agent:{entry.get('tool_use_id') or _short_hash(str(entry.get('ts')) + text)}"
            yield from _feature_items(entry, source, text, ident, ROUTING_FEATURES)
            if source == "agent" and isinstance(entry.get("tool_use_id"), str):
                yield _outcome_item(entry, text)
        elif source == "guard" and isinstance(entry.get("command"), str) and entry["command"].strip():
            ident = f"guard:{entry.get('tool_use_id') or _short_hash(str(entry.get('ts')) + entry['command'])}"
            yield from _feature_items(entry, "guard", entry["command"][:MAX_TEXT], ident, ("destructive",))


def _outcome_item(entry: dict[str, Any], brief: str) -> Item:
    auto = entry.get("outcome") if entry.get("outcome") in OUTCOME_LABELS else None
    note = entry.get("outcome_reason") if isinstance(entry.get("outcome_reason"), str) else None
    return Item(key=f"outcome:{entry['tool_use_id']}", origin="outcome", text=brief, question={},
                name="spawn outcome", labels=list(OUTCOME_LABELS), proposed=auto,
                prompt_id=entry.get("prompt_id") if isinstance(entry.get("prompt_id"), str) else None,
                note=("doubtful: " if entry.get("outcome_doubtful") else "") + (note or "no outcome yet")
                if auto is None or entry.get("outcome_doubtful") else note)


def needs_asking(item: Item) -> bool:
    """Outcomes are asked only when `outcomes` found none or a doubtful one."""
    return item.origin != "outcome" or item.proposed is None or bool(item.note and item.note.startswith("doubtful"))


def from_jsonl(requests: Path, results: Path | None = None) -> Iterator[Item]:
    """Items of a `judge --jsonl` run: each request line's questions, proposed from the
    matching result line (same line order) when given."""
    answers_by_line: dict[int, dict[str, Any]] = {}
    if results is not None:
        answers_by_line = {i: e.get("answers") or {} for i, (_, e) in enumerate(_lines(results))}
    for index, (_number, request) in enumerate(_lines(requests)):
        state, questions = request.get("state"), request.get("questions")
        if not isinstance(questions, dict):
            continue
        text = state if isinstance(state, str) else json.dumps(state, ensure_ascii=False)
        for qid, question in questions.items():
            if not isinstance(question, dict):
                continue
            labels = _labels_of(question)
            if labels is None:
                continue
            answer = answers_by_line.get(index, {}).get(qid) or {}
            proposed = _answer_label(answer)
            yield Item(key=f"jsonl:{_short_hash(text)}:{qid}:{_short_hash(json.dumps(question, sort_keys=True))}",
                       origin="jsonl", text=text[:MAX_TEXT], question=question,
                       name=str(question.get("builtin") or qid), labels=labels, proposed=proposed,
                       confidence=answer.get("confidence") if isinstance(answer.get("confidence"), float) else None)


def _labels_of(question: dict[str, Any]) -> list[str] | None:
    from ..model.requests import answer_labels, parse_judge

    try:
        return answer_labels(parse_judge({"state": "x", "questions": {"q": question}}).questions["q"])
    except Exception:  # noqa: BLE001 - an invalid question is not labellable; judge said why
        return None


def _answer_label(answer: dict[str, Any]) -> str | None:
    if answer.get("type") == "noul" and isinstance(answer.get("p_true"), (int, float)):
        return "true" if answer["p_true"] >= 0.5 else "false"
    if answer.get("type") == "choice" and isinstance(answer.get("choice"), str):
        return answer["choice"]
    if answer.get("type") == "score" and isinstance(answer.get("level"), int):
        return str(answer["level"])
    return None


class LabelStore:
    """The labels file: appended one line per action, read back with the last line per key
    winning (a retraction removes the label)."""

    def __init__(self, path: Path | None = None):
        self.path = path or labels_path()
        self.labels: dict[str, dict[str, Any]] = {}
        for _, entry in _lines(self.path):
            key = entry.get("key")
            if not isinstance(key, str):
                continue
            if entry.get("retracted"):
                self.labels.pop(key, None)
            elif isinstance(entry.get("label"), str):
                self.labels[key] = entry

    def _append(self, record: dict[str, Any]) -> None:
        private_dir(self.path.parent)
        line = (json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, line)
        finally:
            os.close(fd)

    def give(self, item: Item, label: str, by: str) -> None:
        record = {"ts": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "key": item.key,
                  "prompt_id": item.prompt_id, "origin": item.origin, "question": item.name,
                  "label": label, "proposed": item.proposed, "by": by}
        self._append(record)
        self.labels[item.key] = record

    def retract(self, key: str) -> None:
        self._append({"ts": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "key": key, "retracted": True})
        self.labels.pop(key, None)

    def label_of(self, key: str) -> str | None:
        entry = self.labels.get(key)
        return entry["label"] if entry else None
