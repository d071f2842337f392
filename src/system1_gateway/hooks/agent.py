"""PreToolUse on Agent (alias Task): the spawn recorder, and in `[routing] mode = "set"` the
model setter.

    <venv python> -I -m system1_gateway.hooks.agent [--explain] < hook-input.json

Where the routing log is on (`[routing] enabled` and the repository in `[routing] log_dirs`),
it logs the brief's four routing features, the tier the rule would pick, the model the
orchestrator chose (`tool_input.model`, null when it left the default), `subagent_type` and
`tool_use_id` (which `system1 outcomes` and `report` join with the transcript), with
`source: "agent"`, the routing `mode`, and what it set (`set_model`, `set_effort`) or why not
(`why_not_set`). Without an answer from the engine it still logs the spawn, without features.

In modes "log" and "hint" it prints nothing. In mode "set", once `system1 routing set` has
recorded a READY (or forced) verdict (routing/gate.py), it sets the subagent's `model` (and
`effort`, when the rule gives one) with `updatedInput` — the whole `tool_input` echoed — when
  * every feature clears the routing threshold (the fitted bar, else `[routing] min_confidence`),
  * `subagent_type` is not "fork" (a fork ignores `model`),
  * no model was chosen explicitly (`tool_input.model`, or the `model:` of the subagent's
    definition in .claude/agents/), unless the rule returned `override_explicit: true`,
  * and the rule's tier differs from what would run anyway (the explicit model, else the
    spawning loop's model, read from the transcript's last assistant turn).
No `permissionDecision` goes with it: Claude Code 2.1.332 applies `updatedInput` without one
(measured with the real CLI, tests/test_claude_code.py), so the hook never approves a spawn.
Otherwise `why_not_set` says which condition failed: not_ready, fork, no_answer,
below_threshold (with `below`: {feature: [confidence, bar]} of each feature under its bar),
explicit_model (`explicit`: the definition's model, when the input named none) or same_model.

Every spawn it sees is recorded, whatever `[routing] log_dirs` says (routing on, not paused):
outside the log dirs without the brief's text or description (`text_logged: false`, an engine
error cut to its kind), in modes "log" and "hint" too (no engine call then). `system1 status`
shows the last one and `system1 report` the counts per outcome (routing/spawns.py). The
decision itself is `decision()`, which benchmarks/set_mode_reach.py calls too.
"""

from __future__ import annotations

import json
import os
import stat
import sys

TYPE_CHECKING = False  # no `typing` on the short-lived path (docs/architecture.md)
if TYPE_CHECKING:
    from typing import Any, Callable

from ..routing import TIERS, gate
from ..routing.rule import RuleError, decide
from . import common
from .common import NoAnswer, Run

TRANSCRIPT_TAIL = 256 << 10  # bytes of the transcript read for the spawning loop's model
AGENT_FILES = 200  # agent definitions looked at per folder, at most


def family(model: Any) -> str | None:
    """The tier of a model alias or id ('claude-haiku-5-5' → 'haiku'), None when none."""
    if not isinstance(model, str):
        return None
    lowered = model.lower()
    return next((tier for tier in TIERS if tier in lowered), None)


def parent_model(run: Run) -> str | None:
    """The spawning loop's model: the last assistant turn's `message.model` in the transcript's
    tail (Claude Code writes the turn holding the Agent call before the hook runs)."""
    where = run.text("transcript_path")
    if not where:
        return None
    try:
        fd = os.open(where, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return None
    try:  # the tail of a regular file only (a FIFO or device would block or never end)
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return None
        os.lseek(fd, max(0, info.st_size - TRANSCRIPT_TAIL), os.SEEK_SET)
        tail = os.read(fd, TRANSCRIPT_TAIL)
    except OSError:
        return None
    finally:
        os.close(fd)
    for line in reversed(tail.split(b"\n")):
        if b'"assistant"' not in line or b'"model"' not in line:
            continue
        try:
            record = json.loads(line)
        except ValueError:
            continue
        message = record.get("message") if isinstance(record, dict) else None
        model = message.get("model") if isinstance(message, dict) else None
        if record.get("type") == "assistant" and isinstance(model, str) and not model.startswith("<"):
            return model
    return None


def defined_model(run: Run, subagent_type: str) -> str | None:
    """The `model:` of the subagent's own definition (project, then user .claude/agents/*.md),
    when it names one other than `inherit`: a choice the user made in a file."""
    if not subagent_type or subagent_type in ("general-purpose", "fork"):
        return None
    if ":" in subagent_type:  # a plugin's agent: its definition (and model) is the plugin's choice
        return f"the {subagent_type} agent's own definition"
    from .skills import frontmatter, read_regular

    cwd = run.text("cwd") or os.getcwd()
    # The hook server may run without CLAUDE_PROJECT_DIR: then the session's folder and its
    # repository's root (a session started in a subfolder still finds the project's agents).
    projects = [os.environ["CLAUDE_PROJECT_DIR"]] if os.environ.get("CLAUDE_PROJECT_DIR") else \
        list(dict.fromkeys([cwd, common.repo_of(cwd)]))
    user = os.environ.get("CLAUDE_CONFIG_DIR") or os.path.join(os.path.expanduser("~"), ".claude")
    for folder in [os.path.join(p, ".claude", "agents") for p in projects] + [os.path.join(user, "agents")]:
        try:
            names = sorted(n for n in os.listdir(folder) if n.endswith(".md"))[:AGENT_FILES]
        except OSError:
            continue
        for name in names:
            data = read_regular(os.path.join(folder, name), 16 << 10)
            if data is None:
                continue
            fields = frontmatter(data.decode("utf-8", "replace"))
            if fields.get("name", name[:-3]) == subagent_type:
                model = fields.get("model", "").strip()
                return model if model and model != "inherit" else None
    return None


def speaks(settings: dict[str, Any]) -> bool:
    """Can this hook print anything under these settings? Only mode "set" sets a model."""
    routing = settings["routing"]
    return bool(routing["enabled"] and routing["mode"] == "set")


def gate_reason(ready: bool, subagent_type: str) -> str | None:
    """Why not set before the engine is asked: not READY, or a fork (which ignores `model`)."""
    if not ready:
        return "not_ready"
    if subagent_type == "fork":
        return "fork"
    return None


def decision(*, ready: bool, subagent_type: str, features: dict[str, tuple[bool, float]] | None,
             choice: dict[str, Any] | None, bars: dict[str, float], explicit: str | None,
             anyway: Callable[[], str | None]) -> tuple[str | None, dict[str, tuple[float, float]]]:
    """Mode "set"'s decision for one spawn: (why not set, or None to set the rule's tier;
    {feature: (confidence, bar)} of the features below their bar). `bars`: the bar of each
    feature (the fitted one, else `[routing] min_confidence`); `explicit`: the model chosen for
    the spawn (its input's, or its definition's), None when none; `anyway`: the tier that would
    run without the hook when nothing explicit was chosen (called only when needed: it reads
    the transcript). The hook runs this; so does benchmarks/set_mode_reach.py."""
    early = gate_reason(ready, subagent_type)
    if early:
        return early, {}
    if features is None or choice is None:
        return "no_answer", {}
    unsure = {name: (conf, bars[name]) for name, (_, conf) in features.items() if conf < bars[name]}
    if unsure:
        return "below_threshold", unsure
    if explicit and not choice["override_explicit"]:
        return "explicit_model", {}
    if (family(explicit) if explicit else anyway()) == choice["model"]:
        return "same_model", {}
    return None, {}


def bars_of(run: Run, features: dict[str, tuple[bool, float]]) -> dict[str, float]:
    """Each feature's bar: the one `system1 calibrate` fitted, else `[routing] min_confidence`."""
    floor = run.settings["routing"]["min_confidence"]
    return {name: run.bars.get(name, floor) for name in features}


def body(run: Run) -> dict[str, Any] | None:
    routing = run.settings["routing"]
    if run.problem or not routing["enabled"]:
        run.say("routing is off ([routing] enabled = false, or a broken config)")
        return None
    if common.toggle.paused():
        run.say("paused (system1 toggle on resumes)")
        return None
    mode = routing["mode"]
    logging = common.logs_here(run, run.text("cwd"))
    setting = mode == "set"
    record: dict[str, Any] = {**common.base_record(run, "agent"), "prompt": None, "description": None,
                              "model": run.text("tool_input", "model") or None,
                              "subagent_type": run.text("tool_input", "subagent_type") or None,
                              "tool_use_id": run.text("tool_use_id") or None,
                              "features": None, "rule_tier": None, "mode": mode,
                              "set_model": None, "set_effort": None, "why_not_set": None}
    if not (logging or setting):
        run.say(f"not recording the brief: no log for this directory ([routing] log_dirs) and mode = {mode!r}; "
                "counted without its text")
        count(run, {**record, "text_logged": False})
        return None
    ready = gate.read() if setting else None
    given = run.payload.get("tool_input")
    tool_input: dict[str, Any] = given if isinstance(given, dict) else {}
    brief = run.text("tool_input", "prompt")
    subagent_type = run.text("tool_input", "subagent_type")
    explicit = run.text("tool_input", "model") or None
    record.update(prompt=brief, description=run.text("tool_input", "description") or None)
    why_not = gate_reason(ready is not None, subagent_type) if setting else None
    if why_not == "not_ready":
        run.say('mode = "set" but not READY (no verdict recorded by `system1 routing set`): acting as "hint", '
                "the spawn is left as it is")
    elif why_not == "fork":
        run.say('subagent_type "fork" ignores model: left as it is')
    wants_answer = logging or (setting and why_not is None)
    features = choice = None
    if wants_answer and brief.strip():
        try:
            features = common.routing_features(run, brief, routing["budget_s"])
            record["features"] = common.feature_record(features)
            choice = decide({name: yes for name, (yes, _) in features.items()})
            record["rule_tier"] = choice["model"]
        except (NoAnswer, RuleError) as exc:
            run.say(f"features: none: {exc}")
            record["error"] = str(exc)
    out = None
    if setting and why_not is None:
        chosen = explicit or defined_model(run, subagent_type)
        if chosen and not explicit:
            record["explicit"] = chosen
        why_not, unsure, out = _set(run, tool_input, features, choice, chosen)
        if unsure:
            record["below"] = {name: [round(conf, 4), round(bar, 4)] for name, (conf, bar) in unsure.items()}
    if setting:
        record["why_not_set"] = why_not
        if out:
            record["set_model"] = out["model"]
            record["set_effort"] = out.get("effort") if out.get("effort") != tool_input.get("effort") else None
    if logging:
        count(run, record)
    else:  # every spawn is counted; without log_dirs here, without the brief's text
        error = record.get("error")
        count(run, {**record, "prompt": None, "description": None, "text_logged": False,
                    **({"error": _kind(error)} if isinstance(error, str) else {})})
    if not out:
        return None
    return {"hookSpecificOutput": {"hookEventName": "PreToolUse", "updatedInput": out}}


def _kind(error: str) -> str:
    """An engine failure without its details (they could quote the input): the words before
    the first colon, at most 80 characters."""
    return error.split(":", 1)[0][:80]


def count(run: Run, record: dict[str, Any]) -> None:
    """Append the spawn's record (routing/spawns.py counts them); a log that cannot be written
    never costs the spawn its answer."""
    try:
        common.append_log(run, record)
    except (OSError, ValueError) as exc:  # a full disk, a directory in the way, a relative state dir
        run.say(f"could not record the spawn: {exc}")


def _set(run: Run, tool_input: dict[str, Any], features: dict[str, tuple[bool, float]] | None,
         choice: dict[str, Any] | None, explicit: str | None
         ) -> tuple[str | None, dict[str, tuple[float, float]], dict[str, Any] | None]:
    """(why not set, the features below their bar, None) or (None, {}, the whole tool_input
    with the model set)."""
    anyway_seen: list[str | None] = []

    def anyway() -> str | None:
        anyway_seen.append(family(parent_model(run)))
        return anyway_seen[-1]

    why_not, unsure = decision(ready=True, subagent_type="", features=features, choice=choice,
                               bars=bars_of(run, features) if features else {}, explicit=explicit, anyway=anyway)
    if why_not == "no_answer":
        run.say("not set: no answer from the engine or the rule")
        return why_not, {}, None
    if why_not == "below_threshold":
        run.say("not set: below the routing threshold:" + "".join(
            f" ({name} {conf:.2f} < {bar:.2f})" for name, (conf, bar) in unsure.items()))
        return why_not, unsure, None
    assert choice is not None
    model, effort = choice["model"], choice["effort"]
    if why_not == "explicit_model":
        run.say(f"not set: the model was chosen explicitly ({explicit}); the rule said {model}")
        return why_not, {}, None
    if why_not == "same_model":
        run.say(f"not set: {model} runs anyway")
        return why_not, {}, None
    was = family(explicit) if explicit else (anyway_seen[-1] if anyway_seen else None)
    updated = dict(tool_input)
    updated["model"] = model
    if effort and (not tool_input.get("effort") or choice["override_explicit"]):
        updated["effort"] = effort
    run.say(f"set: model {model}" + (f", effort {updated['effort']}" if updated.get("effort") else "")
            + f" (would have run {was or 'the default'})")
    return None, {}, updated


if __name__ == "__main__":
    sys.exit(common.main("agent", body))
