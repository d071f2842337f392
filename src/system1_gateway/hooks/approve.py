"""PermissionRequest on Bash: answer Claude Code's permission prompt for a command that surely only reads.

Off by default; `[guard] approve = "read-only"` turns it on. Claude Code fires PermissionRequest
when its permission dialog is about to show (after its allow/deny rules and the PreToolUse
hooks had their say); this hook answers `allow` when every part of the command is, by a rule of
the reviewed read-only table (shell/readonly.json) **and** by the guard's own policy rules, an
inspection that writes nothing and runs no code the command does not name. Everything else gets
no answer: Claude Code shows its prompt as before. It never denies (in auto mode the guard's
PreToolUse deny has already run) and never rewrites the input; nothing is guessed, no engine is
asked, the disk is not read.

It runs in the plugin's hook server, reached by hooks/approve.sh over the guard's authenticated
channel (channel.py, kind "approve"), and as a command (`python -I -m
system1_gateway.hooks.approve < input`) that approve.sh starts itself when no authenticated
answer comes (the server not started yet, gone, hung, or not the one announced): the same rules
on the input the script kept, so no other process's word ever becomes an allow.

Every call is logged (metadata only: no command text) in the routing log as source "approve":
the decision ("allow" or null), the rules that approved each part or the fixed phrase saying
why not, the number of parts, the permission mode, the time taken. `system1 report` counts them.
"""

from __future__ import annotations

import time

TYPE_CHECKING = False  # no `typing` on the short-lived path (docs/architecture.md)
if TYPE_CHECKING:
    from typing import Any

from . import common
from .common import Run

EVENT = "PermissionRequest"
TOOL = "Bash"
MODE = "read-only"


def allow() -> dict[str, Any]:
    """The one answer this hook gives (channel.py codes it as `allow`; approve.sh rebuilds it)."""
    return {"hookSpecificOutput": {"hookEventName": EVENT, "decision": {"behavior": "allow"}}}


def is_allow(out: Any) -> bool:
    return out == allow()


def body(run: Run) -> dict[str, Any] | None:
    if run.problem:
        run.say("the config is invalid: no approval")
        return None
    if run.settings["guard"]["approve"] != MODE:
        run.say("approve is off ([guard] approve)")
        return None
    if run.text("hook_event_name") != EVENT or run.text("tool_name") != TOOL:
        run.say("not a PermissionRequest for Bash")
        return None
    if common.toggle.paused():
        run.say("paused (system1 toggle on resumes)")
        return None
    command = run.text("tool_input", "command")
    if not command.strip():
        run.say("no command in the tool input")
        return None
    from ..shell import readonly

    t0 = time.perf_counter()
    approval, why = readonly.judge(command)
    took = (time.perf_counter() - t0) * 1000
    run.say(f"{why} ({took:.1f} ms)")
    record(run, approval, why, took)
    return allow() if approval is not None else None


def record(run: Run, approval: Any, why: str, took_ms: float) -> None:
    """One routing-log line per prompt judged: metadata, never the command."""
    entry = {**common.base_record(run, "approve"), "tool": TOOL, "mode": run.text("permission_mode") or None,
             "agent": bool(run.text("agent_id")), "decision": "allow" if approval is not None else None,
             "rules": approval.rule_set if approval is not None else [], "parts": len(approval.rules) if approval else None,
             "why_not": None if approval is not None else why, "ms": round(took_ms, 2)}
    try:
        common.append_log(run, entry)
    except (OSError, ValueError) as exc:  # a full disk or a relative state dir: the answer stands, unlogged
        run.say(f"could not log the approval: {exc}")


if __name__ == "__main__":
    import sys

    sys.exit(common.main("approve", body))
