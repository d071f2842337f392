"""`system1 evaluate`: is the engine good enough on *your* prompts for routing hints? Read-only.

    system1 evaluate [--provider NAME] [--min-feature-accuracy 0.85] [--min-safety 0.95]
                     [--min-failures 30] [--json]

For every routing-log entry with a feature label (given in `calibrate`) or a spawn outcome
(`outcomes --apply`, or a label, which wins), the engine is asked the four routing features
again, as it would answer today (calibration on). Per feature: accuracy, AUROC, and the
coverage and accuracy at the routing threshold (the fitted one where `calibrate` applied one,
else `[routing] min_confidence`). For the rule, on spawns with an outcome, with the engine's
answers and — where all four features are labelled — with the labels (the rule's ceiling, so
a weak rule and a weak engine can be told apart):

  * safety: of the spawns that failed, the share where the rule would have picked a higher
    tier than the one that ran;
  * agreement: of the spawns that succeeded, the share where it picks the tier that ran;
  * savings: of the spawns that succeeded, the share where it picks a cheaper tier.

READY (exit 0) only if every feature is at least `--min-feature-accuracy` accurate at the
threshold, safety is at least `--min-safety`, and at least `--min-failures` failed spawns are
labelled; otherwise NOT READY (exit 3), with the reasons. `system1 routing set` runs this and
turns `[routing] mode = "set"` on only when it says READY (or with --force).

Memory: the log is streamed and only numbers are kept per entry (no texts), so a log of any
length fits.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, Iterator

import numpy as np

from ..routing import FEATURES as ROUTING_FEATURES
from ..routing import log as routing_log
from .pending import OUTCOME_LABELS, LabelStore

EXIT_READY, EXIT_INVALID, EXIT_NOT_READY = 0, 2, 3
TIER_RANK = {"haiku": 0, "sonnet": 1, "opus": 2, "fable": 3}  # routing.TIERS, cheapest first


class Refused(ValueError):
    pass


def auroc(scores: np.ndarray, positive: np.ndarray) -> float | None:
    """Area under the ROC curve (Mann-Whitney, ties counted half); None with one class."""
    pos, neg = scores[positive], scores[~positive]
    if not len(pos) or not len(neg):
        return None
    order = np.argsort(np.concatenate([pos, neg]), kind="mergesort")
    ranks = np.empty(len(order))
    values = np.concatenate([pos, neg])[order]
    i = 0
    while i < len(values):  # average ranks over ties
        j = i
        while j + 1 < len(values) and values[j + 1] == values[i]:
            j += 1
        ranks[order[i:j + 1]] = (i + j) / 2 + 1
        i = j + 1
    return float((ranks[:len(pos)].sum() - len(pos) * (len(pos) + 1) / 2) / (len(pos) * len(neg)))


def _entries(log: Path, store: LabelStore) -> Iterator[dict[str, Any]]:
    """Log entries worth asking about: text, feature labels, and outcome (label over auto)."""
    for _, entry in routing_log.entries(log):
        source = entry.get("source")
        if source not in ("prompt", "agent") or not isinstance(entry.get("prompt"), str) or not entry["prompt"].strip():
            continue
        ident = entry.get("prompt_id") if source == "prompt" else entry.get("tool_use_id")
        labels: dict[str, bool] = {}
        if isinstance(ident, str):
            for name in ROUTING_FEATURES:
                given = store.label_of(f"{source}:{ident}:{name}")
                if given in ("true", "false"):
                    labels[name] = given == "true"
        outcome = tier = None
        if source == "agent" and isinstance(entry.get("tool_use_id"), str):
            outcome = store.label_of(f"outcome:{entry['tool_use_id']}")
            if outcome is None and entry.get("outcome") in OUTCOME_LABELS:
                outcome = entry["outcome"]
            tier = entry.get("outcome_tier") if entry.get("outcome_tier") in TIER_RANK else None
        if labels or (outcome and tier):
            yield {"text": entry["prompt"][:20_000], "labels": labels, "outcome": outcome, "tier": tier}


class _Asker:
    """The engine, in this process, answering the four features of one text."""

    def __init__(self, provider: str | None):
        from ..config.settings import load_config
        from ..daemon import dispatch

        self.config = load_config()
        self.gw = dispatch.gateway(self.config, record=False)
        self.provider = provider
        self.gw.chain(provider)  # a bad --provider fails here, before any work
        self.questions = {name: {"builtin": name} for name in ROUTING_FEATURES}
        self.gw.settle(list(self.questions.values()), provider)

    def ask(self, text: str) -> dict[str, Any] | None:
        result = self.gw.judge({"state": text, "questions": self.questions, "min_confidence": 0},
                               provider=self.provider)
        if result["status"] != "answered":
            return None
        out = {}
        for name in ROUTING_FEATURES:
            answer = result["answers"][name]
            if answer.get("type") != "noul":
                return None
            bar = (answer.get("calibration") or {}).get("threshold")
            out[name] = (float(answer["p_true"]), float(answer["confidence"]), bar)
        return out


def _answered(provider: str | None, entries: Iterator[dict[str, Any]]) -> Iterator[tuple[dict, Any]]:
    """(entry, answers) in log order, asked one entry at a time in this process. Measured on
    2 cores: threads (one interpreter lock) and worker processes (an engine each, competing
    for the cores the engine already uses per request) were both slower."""
    asker = _Asker(provider)
    try:
        for entry in entries:
            yield entry, asker.ask(entry.pop("text"))
    finally:
        asker.gw.close()


def _tier(features: dict[str, bool]) -> str | None:
    from ..routing.rule import RuleError, apply_rule

    try:
        return apply_rule(features)
    except RuleError:
        return None


def _rule_scores(rows: list[tuple[str, str, str | None]]) -> dict[str, Any]:
    """rows: (outcome, tier that ran, tier the rule picks)."""
    failed = [(ran, pick) for outcome, ran, pick in rows if outcome == "failed" and pick]
    ok = [(ran, pick) for outcome, ran, pick in rows if outcome == "succeeded" and pick]

    def share(pairs: list[tuple[str, str]], test: Any) -> float | None:
        return round(sum(1 for ran, pick in pairs if test(TIER_RANK[pick], TIER_RANK[ran])) / len(pairs), 4) \
            if pairs else None
    return {"failed": len(failed), "succeeded": len(ok),
            "safety": share(failed, lambda p, r: p > r),
            "agreement": share(ok, lambda p, r: p == r),
            "savings": share(ok, lambda p, r: p < r)}


def evaluate(args: argparse.Namespace, progress: Any = None) -> dict[str, Any]:
    log = Path(args.log) if args.log else Path(routing_log.path())
    if args.log and not log.exists():
        raise Refused(f"--log: {log} does not exist")
    store = LabelStore(Path(args.labels_file)) if args.labels_file else LabelStore()
    if args.labels_file and not Path(args.labels_file).exists():
        raise Refused(f"--labels-file: {args.labels_file} does not exist")
    for flag in ("min_feature_accuracy", "min_safety"):
        if not 0 <= getattr(args, flag) <= 1:
            raise Refused(f"--{flag.replace('_', '-')}: expected a share in [0, 1], got {getattr(args, flag)}")
    if args.min_failures < 0:
        raise Refused(f"--min-failures: expected a count ≥ 0, got {args.min_failures}")
    from ..config import tables as config_tables

    routing_bar = config_tables.load()[0]["routing"]["min_confidence"]
    from ..config.settings import load_config
    from ..daemon import dispatch

    with dispatch.gateway(load_config(), record=False) as check:
        check.chain(args.provider)  # a bad --provider fails here, before any engine loads
    per: dict[str, list[tuple[float, float, float, bool]]] = {name: [] for name in ROUTING_FEATURES}
    rule_engine: list[tuple[str, str, str | None]] = []
    rule_labels: list[tuple[str, str, str | None]] = []
    asked = unanswered = 0
    for entry, answers in _answered(args.provider, _entries(log, store)):
        asked += 1
        if progress:
            progress()
        if answers is None:
            unanswered += 1
            continue
        for name, truth in entry["labels"].items():
            p_true, conf, bar = answers[name]
            per[name].append((p_true, conf, routing_bar if bar is None else bar, truth))
        if entry["outcome"] and entry["tier"]:
            rule_engine.append((entry["outcome"], entry["tier"],
                                _tier({n: answers[n][0] >= 0.5 for n in ROUTING_FEATURES})))
            if len(entry["labels"]) == len(ROUTING_FEATURES):
                rule_labels.append((entry["outcome"], entry["tier"], _tier(entry["labels"])))
    features: dict[str, dict[str, Any]] = {}
    for name, rows in per.items():
        if not rows:
            features[name] = {"n": 0}
            continue
        p, conf, bars, truth = (np.asarray(col) for col in zip(*rows, strict=True))
        truth = truth.astype(bool)
        right = (p >= 0.5) == truth
        kept = conf >= bars
        features[name] = {"n": len(rows), "accuracy": round(float(right.mean()), 4),
                          "auroc": None if (a := auroc(p, truth)) is None else round(a, 4),
                          "threshold": round(float(np.median(bars)), 4),
                          "coverage": round(float(kept.mean()), 4),
                          "accuracy_at_threshold": round(float(right[kept].mean()), 4) if kept.any() else None}
    report = {"entries": asked, "unanswered": unanswered, "features": features,
              "rule_with_engine": _rule_scores(rule_engine), "rule_with_labels": _rule_scores(rule_labels),
              "bars": {"min_feature_accuracy": args.min_feature_accuracy, "min_safety": args.min_safety,
                       "min_failures": args.min_failures}}
    report["reasons"] = _reasons(report)
    report["verdict"] = "READY" if not report["reasons"] else "NOT READY"
    return report


def _reasons(report: dict[str, Any]) -> list[str]:
    bars = report["bars"]
    reasons = []
    for name, f in report["features"].items():
        if not f["n"]:
            reasons.append(f"{name}: no labelled prompts (label some with system1 calibrate)")
        elif f["accuracy_at_threshold"] is None or f["accuracy_at_threshold"] < bars["min_feature_accuracy"]:
            shown = "nothing above the threshold" if f["accuracy_at_threshold"] is None else \
                f"{f['accuracy_at_threshold']:.0%}"
            reasons.append(f"{name}: {shown} accurate at the threshold {f['threshold']:.2f} "
                           f"(needs {bars['min_feature_accuracy']:.0%}; n = {f['n']})")
    rule = report["rule_with_engine"]
    if rule["failed"] < bars["min_failures"]:
        reasons.append(f"{rule['failed']} failed spawns with an outcome (needs {bars['min_failures']}: "
                       f"system1 outcomes --apply, then label the doubtful ones)")
    if rule["safety"] is None or rule["safety"] < bars["min_safety"]:
        shown = "unknown" if rule["safety"] is None else f"{rule['safety']:.0%}"
        ceiling = report["rule_with_labels"]["safety"]
        hint = "" if ceiling is None else (" — the rule itself falls short with the labels too (edit routing_rule.py)"
                                           if ceiling < bars["min_safety"] else
                                           " — with the labels the rule would reach it: the engine is the weak part")
        reasons.append(f"rule safety {shown} (needs {bars['min_safety']:.0%}){hint}")
    return reasons


def _fmt(x: Any, pct: bool = True) -> str:
    return "–" if x is None else (f"{x:.0%}" if pct else f"{x:.2f}")


def render(report: dict[str, Any], console: Any) -> None:
    from rich.table import Table

    t = Table(title=f"routing features on your labelled prompts ({report['entries']} log entries asked)")
    for col in ("feature", "n", "accuracy", "AUROC", "threshold", "coverage", "accuracy ≥ threshold"):
        t.add_column(col, justify="left" if col == "feature" else "right")
    for name, f in report["features"].items():
        t.add_row(name, str(f["n"]), _fmt(f.get("accuracy")), _fmt(f.get("auroc"), False),
                  _fmt(f.get("threshold"), False), _fmt(f.get("coverage")), _fmt(f.get("accuracy_at_threshold")))
    console.print(t)
    r = Table(title="the routing rule on spawns with an outcome")
    for col in ("features from", "failed", "succeeded", "safety", "agreement", "savings"):
        r.add_column(col, justify="left" if col == "features from" else "right")
    for label, key in (("the engine", "rule_with_engine"), ("the labels (ceiling)", "rule_with_labels")):
        s = report[key]
        r.add_row(label, str(s["failed"]), str(s["succeeded"]), _fmt(s["safety"]), _fmt(s["agreement"]),
                  _fmt(s["savings"]))
    console.print(r)
    colour = "green" if report["verdict"] == "READY" else "red"
    console.print(f"[bold {colour}]{report['verdict']}[/bold {colour}]")
    for reason in report["reasons"]:
        console.print(f"  • {reason}")


def run(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.progress import Progress

    console = Console(stderr=True, width=None if sys.stderr.isatty() else 140)
    try:
        with Progress(console=console, transient=True) as bar:
            task = bar.add_task("asking the engine", total=None)
            report = evaluate(args, lambda: bar.advance(task))
    except Refused as exc:
        console.print(f"[red]evaluate:[/red] {exc}")
        return EXIT_INVALID
    except Exception as exc:  # e.g. a config or --provider error: say it, no trace
        from ..model.errors import GatewayError

        if not isinstance(exc, GatewayError):
            raise
        console.print(f"[red]evaluate:[/red] {exc.message}")
        return EXIT_INVALID
    if args.json:
        print(json.dumps(report))
    render(report, console)
    return EXIT_READY if report["verdict"] == "READY" else EXIT_NOT_READY
