"""How often `[routing] mode = "set"` acts at the shipped defaults, on subagent briefs as
orchestrators really write them: the share of read-only briefs the Agent hook sets
to a cheaper tier, and the share of editing briefs it wrongly does.

    python benchmarks/set_mode_reach.py [--data PATH] [--parent opus] [--rule PATH] [--json]

Input: JSONL, one spawn a line: `prompt` (the brief), `description`, `subagent_type`, `model`
(the orchestrator's choice, null when none), `needed_edits` (bool: did the spawn edit files?),
and provenance (`repo`, `path`, `commit`, `licence`). Default
data/sessions/subagent-briefs/examples.jsonl; a few other spellings of the fields are read too
(`brief`/`text` for `prompt`, `edited`/`needs_edits`/`label` "read"|"edit" for `needed_edits`).

Each brief goes through what the hook does: the four routing features from a warm in-process
gateway (embedded engine, fast tier: the routing heads answer, as the daemon's do), the shipped
rule (routing/default_rule.py, or `--rule`), then the hook's own decision function
(`hooks.agent.decision`: READY assumed, the brief's `subagent_type` and `model`, the spawning
loop's tier `--parent`). Printed: at the shipped default threshold (`[routing] min_confidence`)
and a sweep of thresholds, the share of read-only briefs set to a cheaper tier (target ≥ 60 %),
the share of editing briefs set (target ≤ 2 %), the count of each `why_not_set`, the features
below the bar, median feature confidences by class and the median time per brief; when the
targets are missed, the threshold (and the alternative rules tried) that would reach the
read-only target, with its cost in wrong sets.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = ROOT / "data" / "sessions" / "subagent-briefs" / "examples.jsonl"
SWEEP = (0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9)
TARGET_READ, TARGET_EDIT = 0.60, 0.02
PROMPT_KEYS = ("prompt", "brief", "text")
EDIT_KEYS = ("needed_edits", "edited", "needs_edits", "edits")


def load(path: Path) -> tuple[list[dict[str, Any]], list[str]]:
    """The labelled briefs, and a note per line skipped (no brief, no label, not JSON)."""
    briefs, skipped = [], []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError:
            skipped.append(f"line {number}: not JSON")
            continue
        if not isinstance(row, dict):
            skipped.append(f"line {number}: not an object")
            continue
        brief = next((row[k] for k in PROMPT_KEYS if isinstance(row.get(k), str) and row[k].strip()), None)
        edits = next((row[k] for k in EDIT_KEYS if isinstance(row.get(k), bool)), None)
        if edits is None and row.get("label") in ("read", "read_only", "edit", "edited"):
            edits = row["label"] in ("edit", "edited")
        if brief is None or edits is None:
            skipped.append(f"line {number}: no brief ({'/'.join(PROMPT_KEYS)}) or no edit label "
                           f"({'/'.join(EDIT_KEYS)}, or label read|edit)")
            continue
        model = row.get("model") if isinstance(row.get("model"), str) and row.get("model") else None
        kind = row.get("subagent_type") if isinstance(row.get("subagent_type"), str) else ""
        briefs.append({"prompt": brief, "needed_edits": edits, "model": model, "subagent_type": kind,
                       "repo": row.get("repo")})
    return briefs, skipped


def features_of(briefs: list[dict[str, Any]]) -> tuple[list[dict[str, tuple[bool, float]] | None], list[float]]:
    """The four routing features of each brief, as the daemon answers them, and the ms each took."""
    from system1_gateway.config.settings import Config, GatewaySettings
    from system1_gateway.core.gateway import Gateway
    from system1_gateway.hooks.common import yes_no
    from system1_gateway.providers.embedded import EmbeddedProvider
    from system1_gateway.routing import FEATURES

    provider = EmbeddedProvider("embedded", {"tier": "fast"})
    provider.warm()
    gateway = Gateway(Config(gateway=GatewaySettings(timeout_s=60, deadline_s=120)), providers={"embedded": provider})
    questions = {name: {"builtin": name} for name in FEATURES}
    out: list[dict[str, tuple[bool, float]] | None] = []
    took = []
    for b in briefs:
        t0 = time.perf_counter()
        result = gateway.judge({"state": b["prompt"], "questions": questions, "min_confidence": 0})
        took.append((time.perf_counter() - t0) * 1000)
        answers = result.get("answers") or {}
        pairs = {name: yes_no(answers.get(name)) for name in FEATURES}
        out.append(None if any(p is None for p in pairs.values()) else pairs)  # type: ignore[misc]
    return out, took


def run(briefs: list[dict[str, Any]], features: list[dict[str, tuple[bool, float]] | None],
        threshold: float, parent: str, rule_path: str, only: tuple[str, ...] | None = None,
        tiers: tuple[str, ...] | None = None) -> list[dict[str, Any]]:
    """Each brief's outcome under the hook's decision at `threshold` (every feature's bar).
    Alternatives: `only`, the features that must clear the bar (the others get a bar of 0);
    `tiers`, the tiers the hook may set (a rule that returns the parent's tier otherwise)."""
    from system1_gateway.hooks.agent import decision, family
    from system1_gateway.routing import TIERS
    from system1_gateway.routing.rule import RuleError, decide

    rank = {t: i for i, t in enumerate(TIERS)}
    rows = []
    for b, f in zip(briefs, features, strict=False):
        choice = None
        if f is not None:
            try:
                choice = decide({n: yes for n, (yes, _) in f.items()}, rule_path)
            except RuleError:
                choice = None
            if choice is not None and tiers is not None and choice["model"] not in tiers:
                choice = {**choice, "model": family(b["model"]) or parent}  # the rule keeps what runs
        bars = {n: (threshold if only is None or n in only else 0.0) for n in (f or {})}
        explicit = b["model"] or (f"the {b['subagent_type']} agent's own definition" if ":" in b["subagent_type"]
                                  else None)
        why, unsure = decision(ready=True, subagent_type=b["subagent_type"], features=f, choice=choice, bars=bars,
                               explicit=explicit, anyway=lambda: parent)
        tier = choice["model"] if why is None and choice else None
        runs = family(b["model"]) or parent
        rows.append({"why": why or "set", "tier": tier, "cheaper": tier is not None and rank[tier] < rank[runs],
                     "as_read_only": tier is not None and f is not None and f["read_only"][0],
                     "below": sorted(unsure), "edits": b["needed_edits"]})
    return rows


def shares(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """read_set_cheaper: read-only briefs set to a cheaper tier (read_set_as_read_only: set
    because they were read as read-only, the rule's haiku; the rest were read as a clear change,
    sonnet); edit_set_cheaper: editing
    briefs set to a cheaper tier (the issue's "wrongly set"); edit_set_as_read_only: of those,
    the ones set because they were read as read-only (the narrower error); edit_set: any set."""
    read = [r for r in rows if not r["edits"]]
    edit = [r for r in rows if r["edits"]]

    def share(part: list[dict[str, Any]], key: str) -> float | None:
        return sum(bool(r[key]) for r in part) / len(part) if part else None
    return {"read_only": len(read), "editing": len(edit), "read_set_cheaper": share(read, "cheaper"),
            "read_set_as_read_only": share(read, "as_read_only"),
            "edit_set_cheaper": share(edit, "cheaper"), "edit_set_as_read_only": share(edit, "as_read_only"),
            "edit_set": sum(r["why"] == "set" for r in edit) / len(edit) if edit else None}


def percent(x: float | None) -> str:
    return "–" if x is None else f"{x:.1%}"


def main() -> int:
    from system1_gateway.config.tables import DEFAULTS
    from system1_gateway.routing import FEATURES
    from system1_gateway.routing.rule import DEFAULT as DEFAULT_RULE

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help=f"labelled briefs (default {DEFAULT_DATA})")
    parser.add_argument("--parent", default="opus", help="the spawning loop's tier (what runs without the hook)")
    parser.add_argument("--rule", default=DEFAULT_RULE, help="the routing rule (default: the shipped one)")
    parser.add_argument("--json", action="store_true", help="one JSON object instead of the tables")
    a = parser.parse_args()
    if not a.data.is_file():
        print(f"set_mode_reach: no data at {a.data}\n  the labelled briefs are collected on branch issue-40-outcomes "
              "(data/sessions/subagent-briefs/examples.jsonl); pass --data PATH to a JSONL of "
              "{prompt, subagent_type, model, needed_edits, …}", file=sys.stderr)
        return 2
    briefs, skipped = load(a.data)
    if not briefs:
        why = "; ".join(skipped[:5]) if skipped else "the file is empty"
        print(f"set_mode_reach: no usable line in {a.data}: {why}", file=sys.stderr)
        return 2
    default = float(DEFAULTS["routing"]["min_confidence"])
    features, took = features_of(briefs)
    at_default = run(briefs, features, default, a.parent, a.rule)
    sweep = {t: shares(run(briefs, features, t, a.parent, a.rule)) for t in sorted({*SWEEP, default})}
    fine = [round(0.30 + i * 0.01, 2) for i in range(66)]
    alternatives: dict[str, tuple[tuple[str, ...] | None, tuple[str, ...] | None]] = {
        "one bar for every feature (the hook today)": (None, None),
        "only read_only must clear the bar": (("read_only",), None),
        "set only the read-only tier (haiku)": (None, ("haiku",)),
        "only read_only must clear the bar, set only haiku": (("read_only",), ("haiku",)),
    }
    tables = {name: {t: shares(run(briefs, features, t, a.parent, a.rule, only, tiers)) for t in fine}
              for name, (only, tiers) in alternatives.items()}

    def counts(rows: list[dict[str, Any]], edits: bool) -> dict[str, int]:
        out: dict[str, int] = {}
        for r in rows:
            if r["edits"] == edits:
                out[r["why"]] = out.get(r["why"], 0) + 1
        return dict(sorted(out.items(), key=lambda kv: -kv[1]))

    def below(rows: list[dict[str, Any]], edits: bool) -> dict[str, int]:
        out: dict[str, int] = {}
        for r in rows:
            if r["edits"] == edits:
                for name in r["below"]:
                    out[name] = out.get(name, 0) + 1
        return dict(sorted(out.items(), key=lambda kv: -kv[1]))

    medians = {}
    for label, edits in (("read_only", False), ("editing", True)):
        got = [f for f, b in zip(features, briefs, strict=False) if f is not None and b["needed_edits"] == edits]
        medians[label] = {name: {"confidence": round(statistics.median(f[name][1] for f in got), 3),
                                 "yes": round(sum(f[name][0] for f in got) / len(got), 3)}
                          for name in FEATURES} if got else {}

    def reach(table: dict[float, dict[str, Any]]) -> dict[str, Any] | None:
        """The highest threshold reaching the read-only target, with its wrong sets."""
        good = [(t, s) for t, s in table.items() if (s["read_set_cheaper"] or 0) >= TARGET_READ]
        if not good:
            return None
        t, s = max(good, key=lambda ts: ts[0])
        return {"threshold": t, **s}

    headline = shares(at_default)
    report = {"data": str(a.data), "briefs": len(briefs), "skipped": len(skipped), "parent": a.parent,
              "rule": a.rule, "default_threshold": default, "at_default": headline,
              "why_not_set": {"read_only": counts(at_default, False), "editing": counts(at_default, True)},
              "below_by_feature": {"read_only": below(at_default, False), "editing": below(at_default, True)},
              "sweep": {str(t): s for t, s in sweep.items()},
              "median_features": medians, "median_ms_per_brief": round(statistics.median(took), 2),
              "no_answer": sum(f is None for f in features),
              "targets": {"read_set_cheaper": TARGET_READ, "edit_set": TARGET_EDIT},
              "met": (headline["read_set_cheaper"] or 0) >= TARGET_READ
              and (headline["edit_set_cheaper"] or 0) <= TARGET_EDIT,
              "to_reach": {name: reach(table) for name, table in tables.items()}}
    if a.json:
        print(json.dumps(report))
        return 0
    print(f"{len(briefs)} briefs from {a.data} ({headline['read_only']} read-only, {headline['editing']} editing; "
          f"{len(skipped)} lines skipped); spawning loop {a.parent}; rule {Path(a.rule).name}; READY assumed")
    print(f"\nat the shipped default threshold {default:.2f}: read-only briefs set to a cheaper tier "
          f"{percent(headline['read_set_cheaper'])} (target >= {TARGET_READ:.0%}); editing briefs set to a cheaper tier "
          f"{percent(headline['edit_set_cheaper'])} (target <= {TARGET_EDIT:.0%}), of which read as read-only "
          f"{percent(headline['edit_set_as_read_only'])}" + ("  MET" if report["met"] else "  NOT MET"))
    for label in ("read_only", "editing"):
        print(f"  {label}: outcomes {report['why_not_set'][label]}; below the bar {report['below_by_feature'][label]}")
    print("\n| threshold | read-only set cheaper | set as read-only (haiku) | editing set cheaper "
          "| editing set as read-only |\n|---|---|---|---|---|")
    for t, s in sweep.items():
        print(f"| {t:.2f}{' (default)' if t == default else ''} | {percent(s['read_set_cheaper'])} "
              f"| {percent(s['read_set_as_read_only'])} | {percent(s['edit_set_cheaper'])} | {percent(s['edit_set_as_read_only'])} |")
    print("\nmedian confidence (share answered yes) per feature:")
    for label, per in medians.items():
        print(f"  {label}: " + ", ".join(f"{n} {v['confidence']:.2f} ({v['yes']:.0%})" for n, v in per.items()))
    print(f"median engine time per brief: {report['median_ms_per_brief']:.1f} ms in process "
          f"({report['no_answer']} without an answer)")
    if not report["met"]:
        print(f"\nto reach >= {TARGET_READ:.0%} of read-only briefs set (the highest threshold from 0.30 to 0.95 "
              "that does), and its cost:")
        for name, found in report["to_reach"].items():
            if found is None:
                print(f"  {name}: no threshold reaches it")
            else:
                print(f"  {name}: threshold {found['threshold']:.2f} sets {percent(found['read_set_cheaper'])} of "
                      f"read-only briefs; editing briefs set cheaper {percent(found['edit_set_cheaper'])}, "
                      f"read as read-only {percent(found['edit_set_as_read_only'])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
