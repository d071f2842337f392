"""UserPromptSubmit: the routing hint and the skill picker.

    <venv python> -I -m system1_gateway.hooks.route [--explain] < hook-input.json

Routing asks the four built-in routing features of the prompt in one request to the warm
daemon, maps them to a tier (haiku / sonnet / opus / fable) with the user's rule (rule.py), and
with `[routing] mode = "hint"` (or the older `hint = true`) — when every feature clears the
routing threshold (the fitted one, else `[routing] min_confidence`) — adds one line of context
written as plain facts. Mode "set" hints the same way here (the main loop still gets the line;
the Agent hook, agent.py, is what sets the subagent's model); mode "log" only records. The skill picker asks which loadable skill fits (one choice
question, the skill descriptions as criteria, plus "none"); it only records unless `[skills]
hint = true`. Both share one engine budget (`[routing] budget_s`); the picker is skipped when
routing used it up.

Silent (no output, exit 0) whenever there is nothing to say: routing off, toggle off, a slash
command, a short prompt, a machine-injected prompt (the payload's `source` is not `user` or
`sdk`; without a `source`, a subagent hand-back by its prefix), an engine that abstains, fails
or is missing. A machine-injected prompt costs no engine call and leaves no log line.
The prompt is the evidence: it is sent to the engine as data and never reaches the output —
the hint is built from fixed words only, so a prompt cannot write its own hint. The skill hint
names one listed skill, and only names in Claude Code's form are listed (skills.NAME): a
repository's SKILL.md cannot put its own words there either.
"""

from __future__ import annotations

import os
import sys
import time

TYPE_CHECKING = False  # no `typing` on the short-lived path (docs/architecture.md)
if TYPE_CHECKING:
    from typing import Any

from ..routing.rule import RuleError, apply_rule
from . import common, skills
from .common import NoAnswer, Run

NONE_SKILL = "none"
NONE_DESCRIPTION = "None of the listed skills fits this request."
FEATURE_WORDS = {  # (yes, no) wording of each feature in the hint
    "read_only": ("read-only", "changes files"),
    "design": ("design work", "no design"),
    "review": ("a review", "no review"),
    "specified": ("fully specified", "underspecified"),
}


def hint_line(features: dict[str, tuple[bool, float]], tier: str) -> str:
    described = ", ".join(FEATURE_WORDS[name][0 if yes else 1] for name, (yes, _) in features.items())
    return f"System-1 routing hint: this task reads as {described} → subagent model: {tier}"


def _route(run: Run, prompt: str, logging: bool, budget_end: float) -> str | None:
    routing = run.settings["routing"]
    hinting = routing["mode"] in ("hint", "set")  # "set": the Agent hook sets, the main loop is hinted
    if not (hinting or logging):
        run.say("routing: hint off and no log here (mode = \"log\"): nothing would use an answer, no engine call")
        return None
    try:
        features = common.routing_features(run, prompt, budget_end - time.monotonic())
    except NoAnswer as exc:
        run.say(f"routing: silent: {exc}")
        return None
    answers = {name: yes for name, (yes, _) in features.items()}
    try:
        tier = apply_rule(answers)
    except RuleError as exc:
        run.say(f"routing: silent: rule: {exc}")
        return None
    # A threshold fitted by `system1 calibrate` for a feature replaces [routing] min_confidence.
    unsure = common.unsure(run, features)
    hinted = hinting and not unsure
    run.say(f"routing: {answers} → {tier}; " + ("hint" if hinted else "no hint" + (
        "" if hinting else " (mode = \"log\")") + "".join(
        f" ({name} {features[name][1]:.2f} < {bar:.2f})" for name, bar in unsure.items())))
    if logging:
        common.append_log(run, {**common.base_record(run, "prompt"), "prompt": prompt,
                                "features": common.feature_record(features), "rule_tier": tier, "hinted": hinted,
                                "mode": routing["mode"]})
    return hint_line(features, tier) if hinted else None


def _pick_skill(run: Run, prompt: str, logging: bool, budget_end: float) -> str | None:
    picker = run.settings["skills"]
    if not picker["enabled"]:
        return None
    if not (picker["hint"] or logging):
        run.say("skills: hint off and no log here: no engine call")
        return None
    project = os.environ.get("CLAUDE_PROJECT_DIR") or run.text("cwd") or os.getcwd()
    found = skills.candidates(run.payload, project)
    if not found:
        run.say("skills: no loadable skill found")
        return None
    try:
        daemon = common.daemon(run)
        limit = daemon.get("/healthz", 0.5).get("max_options")
    except (NoAnswer, common.client.DaemonUnavailable) as exc:
        run.say(f"skills: silent: {exc}")
        return None
    if isinstance(limit, int) and len(found) + 1 > limit:
        run.say(f"skills: dormant: {len(found) + 1} options exceed the engine's max_options {limit}")
        return None
    criteria = {s["name"]: s["description"] for s in found}
    criteria.setdefault(NONE_SKILL, NONE_DESCRIPTION)
    question = {"type": "choice", "criteria": criteria,
                "instructions": "Which of these skills should a coding agent load to handle this request?"}
    try:
        result = common.judge(run, prompt, {"skill": question}, budget_end - time.monotonic())
    except NoAnswer as exc:
        run.say(f"skills: silent: {exc}")
        return None
    answer = result["answers"].get("skill")
    if not isinstance(answer, dict) or answer.get("abstained") or not isinstance(answer.get("choice"), str):
        run.say("skills: the engine abstained")
        return None
    choice, confidence = answer["choice"], float(answer.get("confidence") or 0.0)
    if choice not in criteria:  # the gateway checks labels; a hint names only a listed skill
        run.say(f"skills: silent: unknown choice {choice!r}")
        return None
    hinted = picker["hint"] and choice != NONE_SKILL and confidence >= picker["min_confidence"]
    run.say(f"skills: {choice} ({confidence:.2f}) of {len(found)}; " + ("hint" if hinted else "record only"))
    if logging:
        common.append_log(run, {**common.base_record(run, "skill"), "prompt": prompt, "skill": choice,
                                "confidence": round(confidence, 4), "candidates": len(found), "hinted": hinted})
    return f"System-1 skill hint: consider the `{choice}` skill if it fits." if hinted else None


def speaks(settings: dict[str, Any]) -> bool:
    """Can this hook print anything under these settings? (Routing hints in modes "hint" and
    "set"; the picker with `[skills] hint = true`.) When not, its work is only the log."""
    routing, picker = settings["routing"], settings["skills"]
    return bool((routing["enabled"] and routing["mode"] in ("hint", "set")) or (picker["enabled"] and picker["hint"]))


def body(run: Run) -> dict[str, Any] | None:
    routing = run.settings["routing"]
    if run.problem:
        return None
    if not routing["enabled"] and not run.settings["skills"]["enabled"]:
        run.say("routing and the skill picker are off ([routing] enabled = false, [skills] enabled = false)")
        return None
    prompt = run.text("prompt")
    reason = common.skip_reason(run, prompt, routing["min_words"])
    if reason:
        run.say(f"silent: {reason}")
        return None
    logging = common.logs_here(run, run.text("cwd"))
    budget_end = time.monotonic() + routing["budget_s"]
    lines = []
    if routing["enabled"]:
        lines.append(_route(run, prompt, logging, budget_end))
    if budget_end - time.monotonic() < 0.05:
        run.say("skills: skipped: routing used the budget")
    else:
        lines.append(_pick_skill(run, prompt, logging, budget_end))
    text = "\n".join(line for line in lines if line)
    if not text:
        return None
    return {"hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": text}}


if __name__ == "__main__":
    sys.exit(common.main("route", body))
