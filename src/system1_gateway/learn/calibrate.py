"""`system1 calibrate`: label what the hooks logged, fit a temperature and a threshold per
(provider, model, question), show before/after, and apply on a yes.

    system1 calibrate                              label pending items, then fit (interactive)
    system1 calibrate --labels FILE [--apply]      fit on a labelled file (dev.jsonl shape), no questions asked
    system1 calibrate --jsonl REQUESTS [--results RESULTS]   also label a `judge --jsonl` run
    system1 calibrate --pending                    items waiting for a label, as JSON Lines
    system1 calibrate --proposals FILE             {"key", "label"} lines: someone else's proposals (Claude's)

The engine is asked again, with calibration off, on every labelled item: fits are made on the
raw answers of the model that runs today, never on logged numbers from another version. The
"before" columns are the answers as served now (the fits in force and their thresholds); the
"after" columns are cross-fitted (5 folds), so no fit is graded on its own labels.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from .. import bounded_json
from ..core.calibration import Calibration, CalibrationFile, FitRecord, read_file, user_path
from ..paths import state_dir, write_atomic
from . import calibration_fit as cf
from .pending import Item, LabelStore, from_jsonl, from_routing_log, needs_asking

EXIT_OK, EXIT_INVALID = 0, 2


class Refused(ValueError):
    """Bad input: exit 2 with this message."""


# -- the labelled set -----------------------------------------------------------------------------

def _from_labels_file(path: Path) -> tuple[list[tuple[Any, dict[str, Any], str, str]], list[str]]:
    """(state, question, label, name) per valid line, and the rejected lines."""
    from .labelled import LabelError, read_labels

    try:
        groups, rejected = read_labels(path)
    except LabelError as exc:
        raise Refused(str(exc)) from None
    rows: list[tuple[Any, dict[str, Any], str, str]] = []
    for g in groups.values():
        labels = _labels(g.question)
        question = g.question.model_dump(mode="json", exclude_none=True)
        name = ", ".join(sorted(g.names)) or g.key
        rows.extend((state, question, labels[y], name) for state, y in zip(g.states, g.y, strict=True))
    return rows, rejected


def _labels(question: Any) -> list[str]:
    from ..model.requests import answer_labels

    return answer_labels(question)


def _from_store(items: list[Item], store: LabelStore) -> list[tuple[Any, dict[str, Any], str, str]]:
    rows = []
    for item in items:
        label = store.label_of(item.key)
        if label is not None and item.question and label in item.labels:
            rows.append((item.text, item.question, label, item.name))
    return rows


# -- asking the engine ----------------------------------------------------------------------------

def raw_answers(rows: list[tuple[Any, dict[str, Any], str, str]], provider: str | None,
                console: Any) -> tuple[list[dict[str, Any]], list[str]]:
    """The engine's raw (uncalibrated) answer to each row: one request per distinct state.
    Returns one record per answered row and the errors."""
    from ..config.settings import load_config
    from ..daemon import dispatch
    from ..model.requests import parse_judge

    by_state: dict[str, list[int]] = {}
    for i, (state, *_rest) in enumerate(rows):
        by_state.setdefault(json.dumps(state, sort_keys=True, ensure_ascii=False), []).append(i)
    out: list[dict[str, Any]] = []
    errors: list[str] = []
    gw = dispatch.gateway(load_config(), calibration=Calibration.off(), record=False)
    with gw, _progress(console, len(by_state), "asking the engine (calibration off)") as advance:
        chain = gw.chain(provider)
        distinct = {json.dumps(r[1], sort_keys=True): r[1] for r in rows}
        gw.settle(list(distinct.values()), provider)
        kinds = {name: gw.rungs.kind(name) for name in chain}
        for indices in by_state.values():
            state = rows[indices[0]][0]
            questions = {f"q{k}": rows[i][1] for k, i in enumerate(indices)}
            result = gw.judge({"state": state, "questions": questions, "min_confidence": 0},
                              provider=provider)
            advance()
            if result["status"] != "answered":
                errors.append(f"{(result.get('error') or {}).get('code')}: {(result.get('error') or {}).get('message')}")
                continue
            parsed = parse_judge({"state": state, "questions": questions}).questions
            for k, i in enumerate(indices):
                answer = result["answers"][f"q{k}"]
                if answer.get("type") == "refusal":
                    errors.append("the engine refused a question")
                    continue
                question = parsed[f"q{k}"]
                labels = _labels(question)
                out.append({"row": i, "provider": result["provider"], "kind": kinds.get(result["provider"], ""),
                            "model": answer.get("model") or result["model"], "question": question.wording_hash(),
                            "labels": labels, "probs": [answer["probabilities"][lab] for lab in labels],
                            "y": labels.index(rows[i][2]), "name": rows[i][3]})
    return out, errors


class _progress:
    def __init__(self, console: Any, total: int, what: str):
        from rich.progress import Progress

        self.bar = Progress(console=console, transient=True, disable=total < 5)
        self.task = self.bar.add_task(what, total=total)

    def __enter__(self):
        self.bar.__enter__()
        return lambda: self.bar.advance(self.task)

    def __exit__(self, *exc: Any) -> None:
        self.bar.__exit__(*exc)


# -- fitting --------------------------------------------------------------------------------------

def groups_of(answers: list[dict[str, Any]], current: Calibration, default_threshold: float) -> list[cf.Group]:
    """One group per (provider, model, question), plus an option-count fallback per
    (provider, model, options) where two or more questions share it."""
    groups: dict[tuple[str, str, str], cf.Group] = {}
    for a in answers:
        probs = np.asarray([a["probs"]], dtype=float)
        fit = current.find((a["provider"], a["kind"]), a["model"], a["question"], len(a["labels"]))
        served = cf.apply_temperature(probs, fit.temperature)[0] if fit else probs[0]
        bar = fit.threshold if fit and fit.threshold is not None else default_threshold
        for scope in (f"q:{a['question']}", f"o:{len(a['labels'])}"):
            key = (a["provider"], a["model"], scope)
            g = groups.get(key)
            if g is None:
                g = groups[key] = cf.Group(a["provider"], a["model"], a["question"] if scope[0] == "q" else None,
                                           len(a["labels"]), a["name"] if scope[0] == "q" else
                                           f"any {len(a['labels'])}-option question", served_threshold=bar)
            g.probs.append(a["probs"])
            g.y.append(a["y"])
            g.served.append(served.tolist())
            g.questions.add(a["question"])
    return [g for g in groups.values() if g.question or len(g.questions) >= 2]


def fit_all(answers: list[dict[str, Any]], target: float, default_threshold: float) -> list[dict[str, Any]]:
    return [cf.fit_group(g, target) for g in groups_of(answers, Calibration(), default_threshold)]


def merge(records: list[FitRecord], path: Path) -> int:
    """Write `records` into the user file, replacing fits of the same key; returns the count."""
    existing = CalibrationFile()
    if path.exists():
        try:
            existing = read_file(path)
        except ValueError as exc:
            raise Refused(f"{exc} — fix or remove it first; nothing was written") from None
    keep = {f.key(): f for f in existing.fits}
    for r in records:
        keep[r.key()] = r
    text = CalibrationFile(fits=list(keep.values())).model_dump_json(indent=2, exclude_none=True)
    write_atomic(path, text + "\n")
    return len(records)


# -- output ---------------------------------------------------------------------------------------

def _fmt(x: Any, pct: bool = False) -> str:
    if x is None:
        return "–"
    return f"{x:.0%}" if pct else f"{x:.2f}"


def table(rows: list[dict[str, Any]]) -> Any:
    from rich.table import Table

    t = Table(title="calibration — each cell: before (as served now) → after (cross-fitted, 5 folds)",
              caption="T: the fitted temperature (> 1 cools an over-confident engine). Threshold: the lowest "
                      "confidence whose answers keep the target accuracy at the bootstrap 5 % bound.")
    for col in ("question", "n", "T", "accuracy", "ECE", "Brier", "threshold", "acc. ≥ thr.", "coverage", "fit"):
        t.add_column(col, justify="left" if col in ("question", "fit") else "right")
    engine = None
    for r in rows:
        if (r["provider"], r["model"]) != engine:
            engine = (r["provider"], r["model"])
            t.add_row(f"[bold]{r['provider']}[/bold] · {r['model'][:60]}", *[""] * 9)
        b, a = r["before"], r.get("after") or {}
        pick = r.get("pick") or {}
        status = r.get("refused") or ("provisional" if r.get("provisional") else "firm")
        if r.get("record") is not None and pick.get("threshold") is None:
            status += "; no threshold keeps the target"

        def pair(key: str, pct: bool = False) -> str:
            return f"{_fmt(b.get(key), pct)} → {_fmt(a.get(key), pct)}" if a else _fmt(b.get(key), pct)
        t.add_row("  " + str(r["name"])[:30], str(r["n"]), _fmt(r.get("temperature")), pair("accuracy"),
                  pair("ece"), pair("brier"), f"{_fmt(r['before_threshold'])} → {_fmt(pick.get('threshold'))}"
                  if r.get("record") else _fmt(r["before_threshold"]),
                  pair("accuracy_at_threshold"), pair("coverage", True), status)
    return t


def plot(rows: list[dict[str, Any]], answers: list[dict[str, Any]], path: Path) -> str | None:
    panels = []
    for r in rows:
        if r.get("record") is None or not r["question"]:
            continue
        sel = [a for a in answers if a["provider"] == r["provider"] and a["model"] == r["model"]
               and a["question"] == r["question"]]
        raw = np.asarray([a["probs"] for a in sel], dtype=float)
        y = np.asarray([a["y"] for a in sel], dtype=int)
        oof, _ = cf.cross_fitted(raw, y, r["record"].target_accuracy or 0.9)
        panels.append((f"{r['name']} (n={len(y)})", raw, oof, y))
    if not panels:
        return None
    path.parent.mkdir(parents=True, exist_ok=True)
    return cf.reliability_png(panels, str(path))


def report_json(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{**{k: v for k, v in r.items() if k != "record"},
             "fit": r["record"].model_dump(exclude_none=True) if r.get("record") else None} for r in rows]


# -- the command ----------------------------------------------------------------------------------

def run(args: argparse.Namespace) -> int:
    from rich.console import Console

    console = Console(stderr=True, width=None if sys.stderr.isatty() else 160)
    try:
        return _run(args, console)
    except Refused as exc:
        console.print(f"[red]calibrate:[/red] {exc}")
        return EXIT_INVALID


def _pending_items(args: argparse.Namespace) -> list[Item]:
    log = Path(args.log) if args.log else None
    if log is not None and not log.exists():
        raise Refused(f"--log: {log} does not exist")
    items = list(from_routing_log(log))
    if args.jsonl:
        requests = Path(args.jsonl)
        if not requests.exists():
            raise Refused(f"--jsonl: {requests} does not exist")
        results = Path(args.results) if args.results else None
        if results is not None and not results.exists():
            raise Refused(f"--results: {results} does not exist")
        items.extend(from_jsonl(requests, results))
    seen: set[str] = set()
    unique = []
    for item in items:  # a resumed session logs the same prompt id again: label it once
        if item.key not in seen and needs_asking(item):
            seen.add(item.key)
            unique.append(item)
    return unique


def _load_proposals(path: str, items: list[Item]) -> list[Item]:
    by_key = {item.key: item for item in items}
    changed = []
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise Refused(f"--proposals: cannot read {path}: {exc.strerror or exc}") from None
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            entry = bounded_json.loads(line)
        except ValueError as exc:
            raise Refused(f"--proposals: {path}:{number}: invalid JSON ({exc})") from None
        if not isinstance(entry, dict) or not isinstance(entry.get("key"), str) or not isinstance(entry.get("label"), str):
            raise Refused(f'--proposals: {path}:{number}: expected {{"key": "...", "label": "..."}}')
        item = by_key.get(entry["key"])
        if item is None:
            continue  # labelled meanwhile, or from another log
        if entry["label"] not in item.labels:
            raise Refused(f"--proposals: {path}:{number}: {entry['label']!r} is not one of {item.labels}")
        item.proposed, item.confidence = entry["label"], None
        changed.append(item)
    return changed


def _propose_with(rung: str, items: list[Item], console: Any) -> None:
    from ..config.settings import load_config
    from ..daemon import dispatch

    with dispatch.gateway(load_config(), record=False) as gw, _progress(console, len(items), f"proposals from {rung}") as advance:
        for item in items:
            advance()
            if not item.question:
                continue
            result = gw.judge({"state": item.text, "questions": {"q": item.question}, "min_confidence": 0},
                              provider=rung)
            answer = (result.get("answers") or {}).get("q") or {}
            if result["status"] == "answered" and answer.get("type") != "refusal":
                probs = answer["probabilities"]
                item.proposed = max(probs, key=probs.__getitem__)
                item.confidence = answer.get("confidence")


def _run(args: argparse.Namespace, console: Any) -> int:
    from ..config.settings import load_config

    if not 0.5 <= args.target_accuracy < 1:
        raise Refused(f"--target-accuracy: expected a number in [0.5, 1), got {args.target_accuracy}")
    default_threshold = load_config().gateway.min_confidence
    rejected: list[str] = []
    if args.labels:
        path = Path(args.labels)
        if not path.exists():
            raise Refused(f"--labels: {path} does not exist")
        rows, rejected = _from_labels_file(path)
        for message in rejected[:20]:
            console.print(f"[yellow]skipped[/yellow] {message}")
    else:
        items = _pending_items(args)
        store = LabelStore()
        if args.pending:
            for item in items:
                if store.label_of(item.key) is None:
                    print(json.dumps({"key": item.key, "origin": item.origin, "question": item.name,
                                      "labels": item.labels, "proposed": item.proposed,
                                      "confidence": item.confidence, "note": item.note, "text": item.text},
                                     ensure_ascii=False))
            return EXIT_OK
        if args.confirmed and not args.proposals:
            raise Refused("--confirmed: needs --proposals FILE (the labels the user confirmed)")
        if args.proposals:
            proposed = _load_proposals(args.proposals, items)
            console.print(f"{len(proposed)} proposals read from {args.proposals}")
            if args.confirmed:  # the user confirmed them elsewhere (in Claude Code, in the chat)
                for item in proposed:
                    if item.proposed is not None:  # always: _load_proposals set each one's
                        store.give(item, item.proposed, "confirmed-in-chat")
                args.no_label = True
        elif args.propose_with:
            _propose_with(args.propose_with, [i for i in items if store.label_of(i.key) is None], console)
        if not args.no_label:
            from .labelling_ui import label_items

            counts = label_items(items, store, console)
            console.print(f"labelled {counts['labelled']} ({counts['confirmed']} confirmed, "
                          f"{counts['corrected']} corrected), skipped {counts['skipped']}, {counts['left']} left"
                          + (" — run calibrate again to resume" if counts["left"] else ""))
        rows = _from_store(items, store)
    if not rows:
        console.print("nothing labelled to fit on yet")
        return EXIT_INVALID if args.labels else EXIT_OK
    answers, errors = raw_answers(rows, args.provider, console)
    for message in sorted(set(errors))[:10]:
        console.print(f"[yellow]not answered[/yellow] {message} ({errors.count(message)}×)")
    rows_out = fit_all(answers, args.target_accuracy, default_threshold)
    records = [r["record"] for r in rows_out if r.get("record") is not None]
    stamp = time.strftime("%Y%m%d-%H%M%S")
    png = plot(rows_out, answers, Path(args.plot) if args.plot else state_dir() / "calibration" / f"reliability-{stamp}.png")
    if not args.json:
        console.print(table(rows_out))
        if png:
            console.print(f"reliability diagram: {png}")
        elif records:
            console.print("no reliability diagram (matplotlib is missing: pip install 'system1-gateway\\[teach]')")
    applied = False
    if records:
        target = user_path()
        # --json is for scripts: it applies with --apply only, never asks
        applied = args.apply or (not args.labels and not args.json and sys.stdin.isatty()
                                 and _confirm(console, len(records), target))
        if applied:
            merge(records, target)
            console.print(f"[green]applied[/green] {len(records)} fit(s) to {target} (a running daemon picks them up)")
        else:
            console.print(f"not applied (--apply writes them to {target})")
    else:
        console.print("no fit: every group needs at least 50 labels of two answers or more")
    if args.json:  # printed last, so "applied" says what happened
        print(json.dumps({"groups": report_json(rows_out), "rejected_lines": len(rejected),
                          "unanswered": len(errors), "plot": png, "applied": bool(applied)}, default=str))
    return EXIT_INVALID if rejected else EXIT_OK


def _confirm(console: Any, count: int, target: Path) -> bool:
    console.print(f"apply {count} fit(s) and their thresholds to {target}? [y/N] ", end="")
    answer = sys.stdin.readline().strip().lower()
    return answer in ("y", "yes")
