"""PreToolUse on Agent (alias Task): the spawn recorder. Record-only: it prints nothing and
never changes the spawn.

    <venv python> -I -m system1_gateway.hooks.agent [--explain] < hook-input.json

Where the routing log is on (`[routing] enabled` and the repository in `[routing] log_dirs`),
it logs the brief's four routing features, the tier the rule would pick, the model the
orchestrator chose (`tool_input.model`, null when it left the default), `subagent_type` and
`tool_use_id` (which `system1 outcomes` and `report` join with the transcript), with
`source: "agent"`. Without an answer from the engine it still logs the spawn, without features.
"""

from __future__ import annotations

import sys
TYPE_CHECKING = False  # `typing` costs ≈ 5 ms at import: annotations only (they are never evaluated)
if TYPE_CHECKING:
    from typing import Any

from . import common
from .common import NoAnswer, Run
from ..routing.rule import RuleError, apply_rule


def body(run: Run) -> None:
    routing = run.settings["routing"]
    if not routing["enabled"] or not common.logs_here(run, run.text("cwd")):
        run.say("not recording: routing off or no log for this directory ([routing] log_dirs)")
        return None
    if common.toggle.paused():
        run.say("paused (system1 toggle on resumes)")
        return None
    brief = run.text("tool_input", "prompt")
    record: dict[str, Any] = {**common.base_record(run, "agent"), "prompt": brief,
                              "description": run.text("tool_input", "description") or None,
                              "model": run.text("tool_input", "model") or None,
                              "subagent_type": run.text("tool_input", "subagent_type") or None,
                              "tool_use_id": run.text("tool_use_id") or None,
                              "features": None, "rule_tier": None}
    if brief.strip():
        try:
            features = common.routing_features(run, brief, routing["budget_s"])
            record["features"] = common.feature_record(features)
            record["rule_tier"] = apply_rule({name: yes for name, (yes, _) in features.items()})
        except (NoAnswer, RuleError) as exc:
            run.say(f"features: none: {exc}")
            record["error"] = str(exc)
    common.append_log(run, record)
    return None


if __name__ == "__main__":
    sys.exit(common.main("agent", body))
