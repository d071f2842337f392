"""`system1 teach`: the embedded engine learns heads for the user's own recurring questions.

    system1 teach LABELS.jsonl [--k 5] [--no-baseline] [--dry-run]
    system1 teach --list | --remove HASH | --export DIR

Each line of LABELS.jsonl is `{"state", "question", "expected"}` (the shape of the project's
labelled dev set; other fields such as `id` or `task` are kept as names only). Lines are
grouped by question (type + instructions + criteria, builtins.question_hash); each group with
at least 20 labels of at least 2 classes gets a head, fitted locally in seconds, and written
atomically to `<state>/heads/<hash>.npz`, where the embedded engine (and a running daemon)
picks it up at its next request. Nothing leaves the machine.

What is reported is measured honestly: k-fold accuracy and ECE of the head on items it was
not fitted on (hyper-parameters and temperature chosen inside each fold), against what
answers the question today on the same items: the user's head, the shipped head (built-in
questions), or the zero-shot engine. Where a head exists, two candidates are measured: a
new head from the labels alone, and the existing head adapted to them (fit.adapt_*: it keeps
what the head knows and corrects it where the labels disagree). The better candidate is
installed only if it beats today's answerer; `--force` installs it anyway.
"""

from __future__ import annotations

import json
import re
import shutil
import sys
from pathlib import Path
from typing import Any

import numpy as np

from ..paths import state_dir
from ..providers.embedded.heads import FEATURE_VERSION, READINGS, HeadStore, labels_of, option_texts, reader
from . import fit, metrics
from .labelled import Group, LabelError, read_labels


def heads_dir() -> Path:
    return state_dir() / "heads"


def problems(groups: dict[str, Group]) -> dict[str, str]:
    """Why a group cannot get a head: too few labels, one class, or instructions shared with
    another group under other criteria (almost always a typo that split one question)."""
    out: dict[str, str] = {}
    by_instructions: dict[str, list[Group]] = {}
    for g in groups.values():
        by_instructions.setdefault(json.dumps(g.question.instructions, sort_keys=True), []).append(g)
    for same in by_instructions.values():
        if len(same) > 1:
            spans = "; ".join(f"lines {_span(g.lines)}" for g in same)
            for g in same:
                out[g.key] = (f"the same instructions appear with {len(same)} different criteria ({spans}): "
                              "a head is keyed by instructions + criteria; make them identical, or reword "
                              "the instructions if these are different questions")
    for g in groups.values():
        if g.key in out:
            continue
        if len(g.y) < fit.MIN_LABELS:
            out[g.key] = f"{len(g.y)} labels; a head needs at least {fit.MIN_LABELS} ({fit.MIN_LABELS - len(g.y)} more)"
        elif len(set(g.y)) < 2:
            out[g.key] = f"every label is {labels_of(g.question)[g.y[0]]!r}; a head needs at least 2 classes"
    return out


def _span(lines: list[int]) -> str:
    return f"{lines[0]}" if len(lines) == 1 else f"{lines[0]}–{lines[-1]}" if lines[-1] - lines[0] == len(lines) - 1 \
        else ", ".join(map(str, lines[:5])) + (", …" if len(lines) > 5 else "")


def head_name(group: Group) -> str:
    if len(group.names) == 1:
        name = re.sub(r"[^A-Za-z0-9_.-]+", "-", next(iter(group.names)))[:40].strip("-")
        if name:
            return name
    return f"q-{group.key[:8]}"


def zero_shot(groups: list[Group], progress: Any = None) -> dict[str, np.ndarray]:
    """The embedded engine's answers with heads switched off, per group (None when it
    cannot answer, e.g. undescribed options without the accurate tier)."""
    from ..config.settings import Config, GatewaySettings, load_config
    from ..core.gateway import Gateway
    from ..model.errors import ConfigError
    from ..providers.embedded import EmbeddedProvider, EmbeddedSettings

    try:
        settings = load_config().provider_settings("embedded")
    except ConfigError:
        settings = {}
    settings = {k: v for k, v in settings.items() if k in EmbeddedSettings.model_fields}
    provider = EmbeddedProvider("embedded", {**settings, "heads": False})
    out: dict[str, np.ndarray] = {}
    with Gateway(Config(gateway=GatewaySettings(timeout_s=300, deadline_s=600)), providers={"embedded": provider}, record=False) as gw:
        for g in groups:
            question = g.question.model_dump(mode="json", exclude_none=True)
            rows: list[list[float]] = []
            for state in g.states:
                result = gw.judge({"state": state, "questions": {"q": question}, "min_confidence": 0})
                provider.wait_prepared(600)
                if result["status"] != "answered":
                    break
                probs = result["answers"]["q"]["probabilities"]
                rows.append([probs[label] for label in labels_of(g.question)])
                if progress:
                    progress()
            else:  # every state answered
                out[g.key] = np.array(rows)
    return out


def teach(path: Path, k: int = 5, baseline: bool = True, dry_run: bool = False,
          console: Any = None, force: bool = False) -> tuple[dict[str, Any], int]:
    """Fits and writes the heads; (the JSON summary, exit code)."""
    from ..providers.embedded import usable_cpus
    from ..providers.embedded.fast import FastEngine

    groups, rejected = read_labels(path)
    refused = problems(groups)
    fit_groups = [g for g in groups.values() if g.key not in refused]
    summary: dict[str, Any] = {"file": str(path), "lines_accepted": sum(len(g.y) for g in groups.values()),
                               "lines_rejected": len(rejected), "rejected": rejected[:50], "questions": []}
    for key, why in refused.items():
        g = groups[key]
        summary["questions"].append({"hash": key, "name": head_name(g), "labels": len(g.y), "head": None, "error": why})
    if not fit_groups:
        return summary, 2
    engine = FastEngine(usable_cpus())
    store = HeadStore(heads_dir())
    current_heads = {g.key: store.all().get(g.key) for g in fit_groups}
    # The zero-shot engine is the current answerer only where no head answers today; it is
    # still measured for every group when asked (the table shows it).
    zs = zero_shot(fit_groups, _ticker(console, sum(len(g.y) for g in fit_groups), "zero-shot baseline")) \
        if baseline else {}
    for g in fit_groups:
        labels = labels_of(g.question)
        y = np.array(g.y)
        X = fit.featurize(g.texts, reader(engine, READINGS[FEATURE_VERSION]), option_texts(g.question))
        raw, cal = fit.cross_validate(X, y, len(labels), k, grid=fit.TEACH_GRID)
        entry: dict[str, Any] = {"hash": g.key, "name": head_name(g), "labels": len(y), "error": None, "head": None,
                                 "head_cv": metrics.summary(cal, y), "head_cv_uncalibrated": metrics.summary(raw, y)}
        cascade = {"below": 0.0, "head_weight": 0.5}
        builtin = getattr(g.question, "builtin", None)
        candidates: dict[str, float] = {"new": entry["head_cv"]["accuracy"]}
        base = current_heads.get(g.key)
        if base is not None:
            origin, base_head = base
            # today's head, measured (and adapted) on the features it reads
            Xb = X if base_head.meta["feature_version"] == FEATURE_VERSION and base_head.W_words is None else \
                fit.featurize(g.texts, reader(engine, base_head.reading), option_texts(g.question),
                              words=base_head.W_words is not None)
            current = fit.head_probs(Xb, base_head)
            entry["current"] = {"answerer": f"{origin} head {base_head.name}", **metrics.summary(current, y)}
            if len(labels) == 2:
                # the existing head adapted to these labels, measured on the same folds
                adapted = fit.adapt_cross_validate(Xb, y, base_head, k)
                entry["adapted_cv"] = metrics.summary(adapted, y)
                candidates["adapted"] = entry["adapted_cv"]["accuracy"]
        if g.key in zs:
            entry["zero_shot"] = metrics.summary(zs[g.key], y)
            if base is None:
                entry["current"] = {"answerer": "zero-shot engine", **entry["zero_shot"]}
            if _llm_installed():
                # The bar is used when it wins on held-out folds (cross-fitted), then chosen on all.
                casc, asked = fit.cross_fitted_cascade(cal, zs[g.key], y)
                entry["cascade_cv"] = {**metrics.summary(casc, y), "escalated": round(float(asked.mean()), 3)}
                if fit.cascade_pays(candidates["new"], entry["cascade_cv"]["accuracy"], len(y)):
                    chosen = fit.choose_cascade(cal, zs[g.key], y)
                    cascade = {"below": chosen["below"], "head_weight": chosen["head_weight"]}
                    candidates["new"] = entry["cascade_cv"]["accuracy"]
            entry["cascade"] = cascade
        # Install only what beats what answers today, on the same items (never make an answer
        # worse); a tie keeps today's answerer. --force installs the best candidate anyway.
        kind = max(candidates, key=lambda c: (candidates[c], c == "adapted"))
        entry["candidate"] = {"kind": kind, "accuracy": candidates[kind]}
        today = entry.get("current", {}).get("accuracy")
        if today is not None and candidates[kind] <= today and not force:
            entry["error"] = (f"not installed: what answers today ({entry['current']['answerer']}) is as accurate "
                              f"or more on these labels ({today:.3f} vs {candidates[kind]:.3f} with the "
                              f"{kind} head); add labels, or pass --force")
        meta = {"name": head_name(g), "question_hash": g.key, "builtin": builtin, "type": g.question.type,
                "instructions": g.question.instructions, "cascade": cascade,
                "training": {"n": int(len(y)), "classes": np.bincount(y, minlength=len(labels)).tolist(),
                             "data_sha256": fit.data_hash([(t, labels[i]) for t, i in zip(g.texts, y, strict=True)]),
                             "source": path.name, "adapted_from": base_head.name if kind == "adapted" else None},
                "metrics": {"cv_k": k, "head": entry["head_cv"], "adapted": entry.get("adapted_cv"),
                            "current": entry.get("current"), "zero_shot": entry.get("zero_shot")}}
        if kind == "adapted":
            head = fit.fit_adapted_head(Xb, y, base_head, meta)
        else:
            head = fit.fit_head(X, y, labels, meta, k=k, grid=fit.TEACH_GRID)
        entry["temperature"] = head.temperature
        target = heads_dir() / f"{g.key}.npz"
        if not dry_run and entry["error"] is None:
            head.save(target)
            entry["head"] = str(target)
        summary["questions"].append(entry)
    kept = any(q["error"] for q in summary["questions"])
    # 2 is for rejected input only (docs/cli.md); 3 is a verdict, as evaluate's not-READY: every
    # line was valid, but a question kept today's answerer (more labels, or --force)
    return summary, 2 if rejected or refused else 3 if kept else 0


def _llm_installed() -> bool:
    from ..providers.embedded import assets

    return assets.llm_available()


def _ticker(console: Any, total: int, what: str) -> Any:
    if console is None or not console.is_terminal:
        return None
    from rich.progress import Progress

    progress = Progress(console=console, transient=True)
    progress.start()
    task = progress.add_task(what, total=total)
    done = [0]

    def tick() -> None:
        done[0] += 1
        progress.advance(task)
        if done[0] >= total:
            progress.stop()
    return tick


def table(summary: dict[str, Any]) -> Any:
    from rich.table import Table

    t = Table(title=f"system1 teach {summary['file']}: {summary['lines_accepted']} lines accepted, "
                    f"{summary['lines_rejected']} rejected")
    for col in ("question", "labels", "today (answerer)", "new head acc", "adapted acc", "cascade acc",
                "head ECE raw → T", "installed"):
        t.add_column(col)
    t.caption = ("today: what answers now (your head, the shipped head, or the zero-shot engine) on these items; "
                 "new/adapted heads: k-fold, scored on items their fit never saw; installed only if better than today")
    for q in summary["questions"]:
        if q["error"] and "head_cv" not in q:
            t.add_row(q["name"], str(q["labels"]), "", "", "", "", "", f"[red]not fitted: {q['error']}[/red]")
            continue
        today = q.get("current")
        casc = q.get("cascade") or {}
        casc_cv = q.get("cascade_cv")
        adapted = q.get("adapted_cv")
        kind = (q.get("candidate") or {}).get("kind", "new")
        used = "(dry run)" if q["head"] is None else \
            f"yes ({kind}), llm below {casc['below']}" if casc.get("below") else f"yes ({kind} head)"
        t.add_row(q["name"], str(q["labels"]), f"{today['accuracy']:.3f} ({today['answerer']})" if today else "—",
                  f"{q['head_cv']['accuracy']:.3f}", f"{adapted['accuracy']:.3f}" if adapted else "—",
                  f"{casc_cv['accuracy']:.3f}" if casc_cv else "—",
                  f"{q['head_cv_uncalibrated']['ece']:.3f} → {q['head_cv']['ece']:.3f}",
                  f"[yellow]{q['error']}[/yellow]" if q["error"] else used)
    return t


# -- --list / --remove / --export ------------------------------------------------------------
def listing() -> list[dict[str, Any]]:
    store = HeadStore(heads_dir())
    out = []
    for key, (origin, head) in sorted(store.all().items(), key=lambda kv: (kv[1][0], kv[1][1].name)):
        m = head.meta
        out.append({"hash": key, "name": head.name, "origin": origin, "builtin": m.get("builtin"),
                    "type": m.get("type"), "labels": head.labels, "trained_on": m.get("training", {}).get("n"),
                    "cv_accuracy": (m.get("metrics", {}).get("head") or {}).get("accuracy"),
                    "temperature": head.temperature, "cascade_below": head.escalate_below,
                    "created": m.get("created"), "path": str(head.path)})
    return out


def remove(prefix: str) -> list[str]:
    """Removes the user's heads whose hash starts with `prefix` (shipped heads are not files
    of the user's; a user head shadowing one is removable)."""
    folder = heads_dir()
    if len(prefix) < 4:
        raise LabelError("--remove: give at least 4 characters of the question hash (see --list)")
    # A hash is 16 hex digits: anything else (a path, `..`, a glob character) would reach files
    # outside heads/ through the glob, so it is refused before any file is looked at.
    if len(prefix) > 16 or any(c not in "0123456789abcdef" for c in prefix):
        raise LabelError(f"--remove: {prefix[:100]!r} is not a question hash (up to 16 hex digits, "
                         f"lower case; see --list)")
    matches = sorted(folder.glob(f"{prefix}*.npz")) if folder.is_dir() else []
    if len(matches) > 1:
        raise LabelError(f"--remove: {prefix!r} matches {len(matches)} heads; give more characters")
    for path in matches:
        path.unlink()
    return [str(p) for p in matches]


def export(target: Path) -> list[str]:
    """Copies the user's heads into folder `target` (made if missing), never into heads/."""
    if target.exists() and not target.is_dir():
        raise LabelError(f"--export: {str(target)[:200]!r} is a file, not a folder")
    if heads_dir().is_dir() and target.exists() and target.resolve() == heads_dir().resolve():
        raise LabelError("--export: that is the heads folder itself; give another folder")
    try:
        target.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise LabelError(f"--export: cannot create {str(target)[:200]!r} ({exc.strerror or exc})") from None
    copied: list[str] = []
    folder = heads_dir()
    for path in sorted(folder.glob("*.npz")) if folder.is_dir() else []:
        try:
            shutil.copy2(path, target / path.name)
        except OSError as exc:
            raise LabelError(f"--export: cannot write {str(target / path.name)[:200]!r} ({exc.strerror or exc}); "
                             f"copied before it: {len(copied)}") from None
        copied.append(str(target / path.name))
    return copied


def main(args: Any) -> int:
    """The CLI entry (argparse namespace from cli.py); JSON on stdout, tables on stderr."""
    from rich.console import Console

    console = Console(stderr=True)
    if not console.is_terminal:
        console.width = max(console.width, 140)  # a log or a pipe: do not wrap the table
    if args.list:
        heads = listing()
        _table_list(console, heads)
        return _out({"heads": heads}, args.pretty, 0)
    try:
        if args.remove:
            removed = remove(args.remove)
            if not removed:
                return _out({"removed": [], "error": {"code": "invalid_request",
                             "message": f"--remove: no head of yours matches {args.remove!r} (see --list)"}}, args.pretty, 2)
            return _out({"removed": removed}, args.pretty, 0)
        if args.export:
            return _out({"exported": export(Path(args.export))}, args.pretty, 0)
        if not args.file:
            return _out({"error": {"code": "invalid_request", "message": "teach: give a labels file (JSON Lines), "
                                   "or --list, --remove HASH, --export DIR"}}, args.pretty, 2)
        summary, code = teach(Path(args.file), k=args.k, baseline=not args.no_baseline, dry_run=args.dry_run,
                              console=console, force=args.force)
    except LabelError as exc:
        return _out({"error": {"code": "invalid_request", "message": str(exc)}}, args.pretty, 2)
    for line in summary["rejected"]:
        console.print(f"[yellow]rejected[/yellow] {line}", highlight=False)
    console.print(table(summary))
    for q in summary["questions"]:
        if q.get("head"):
            console.print(f"wrote {q['head']}", highlight=False)
    return _out(summary, args.pretty, code)


def _table_list(console: Any, heads: list[dict[str, Any]]) -> None:
    from rich.table import Table

    t = Table(title="heads (user heads replace shipped ones for the same question)")
    for col in ("hash", "name", "origin", "type", "labels", "trained on", "k-fold acc", "created"):
        t.add_column(col)
    for h in heads:
        t.add_row(h["hash"], h["name"], h["origin"], str(h["type"]), ", ".join(h["labels"])[:40],
                  str(h["trained_on"]), "—" if h["cv_accuracy"] is None else f"{h['cv_accuracy']:.3f}", str(h["created"]))
    console.print(t)


def _out(obj: dict[str, Any], pretty: bool, code: int) -> int:
    sys.stdout.write(json.dumps(obj, ensure_ascii=False, indent=2 if pretty else None, default=str) + "\n")
    return code
