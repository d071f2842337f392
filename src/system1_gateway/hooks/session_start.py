"""SessionStart: silent unless something needs the user.

    <venv python> -I -m system1_gateway.hooks.session_start [--explain] < hook-input.json

One line (`systemMessage`, shown to the user, not given to the model) when:
  * the config file is broken (TOML, or an invalid [routing] / [skills] / [guard] key);
  * routing or the guard is on but no daemon answers and autostart is off (how to start it);
  * 30 or more logged prompts wait for labels (suggests /system1:calibrate);
  * routing sets subagent models (`[routing] mode = "set"` with a READY or forced verdict), or
    the config says "set" but no verdict is recorded (then it acts as "hint").
With `[serve] autostart` on and no daemon running, it starts the daemon in the background
(no wait) so the first prompt finds the engine warm. "Not installed" is said by the
plugin's launcher (hooks/session-start.sh) before Python is even looked for.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # no `typing` on the short-lived path (docs/architecture.md)
if TYPE_CHECKING:
    from typing import Any

from ..daemon import client
from ..paths import state_file
from ..routing import gate
from ..routing import log as routing_log
from . import common
from .common import Run

LABEL_BACKLOG = 30  # logged prompts without a label before calibrate is suggested
PREFIX = "System-1: "


def config_problem(run: Run) -> str | None:
    """A problem with the config file that the fast path can see without pydantic: unreadable,
    not TOML, or an invalid hook table (run.problem). `/system1:doctor` checks the rest."""
    return run.problem


def unlabelled_prompts() -> int:
    """Logged prompts (source "prompt") not yet in the labels file."""
    labelled = {e["prompt_id"] for _, e in routing_log.entries(state_file("logs", "labels.jsonl"))
                if isinstance(e.get("prompt_id"), str)}
    count = 0
    for _, entry in routing_log.entries(only='"source":"prompt"'):
        pid = entry.get("prompt_id")
        if not (isinstance(pid, str) and pid in labelled):
            count += 1
    return count


def engine_line(run: Run) -> str | None:
    """Routing or the guard is on: is an engine answering? (Starts the daemon when allowed.)"""
    wanted = [name for name in ("routing", "guard") if run.settings[name]["enabled"]]
    if not wanted or common.toggle.paused():
        return None
    settings = client.peek()
    found, same = client.locate(settings)
    if found is not None and same:
        try:
            if found.get("/healthz", 1.0).get("status") in ("ok", "loading"):
                run.say(f"daemon answers: {found.describe()}")
                return None
        except client.DaemonUnavailable as exc:
            run.say(f"daemon does not answer: {exc}")
    if settings.autostart and found is None:
        from ..daemon import lifecycle  # stdlib + daemon_files only

        started = lifecycle.ensure_running()
        if started is not None and started.get("status") == "backoff":
            return f"{PREFIX}the engine is not running: {started.get('detail')} (or /system1:doctor)."
        if started is not None:
            run.say(f"daemon {started.get('status')} in the background")
            return None
    feature = " and ".join("routing" if name == "routing" else "the guard" for name in wanted)
    feature += " are" if len(wanted) == 2 else " is"
    if found is not None and not same:
        return (f"{PREFIX}{feature} on, but the running engine has other settings: run "
                "`system1 daemon restart` (or /system1:doctor).")
    return (f"{PREFIX}{feature} on, but the engine is not running: start it with "
            "`system1 daemon start` (or /system1:doctor).")


def routing_line(run: Run) -> str | None:
    """Say when routing is setting subagent models, or would but is not READY."""
    routing = run.settings["routing"]
    if run.problem or not routing["enabled"] or routing["mode"] != "set" or common.toggle.paused():
        return None
    record = gate.read()
    if record is None:
        return (f'{PREFIX}[routing] mode = "set" is not READY: subagent models are only hinted until '
                "`system1 routing set` records a READY verdict from `system1 evaluate`.")
    return f"{PREFIX}routing sets subagent models ({record['verdict']} {record['at'][:10]})."


def body(run: Run) -> dict[str, Any] | None:
    lines = []
    problem = config_problem(run)
    if problem:
        lines.append(f"{PREFIX}the config file is broken, routing and the guard are off until it is fixed: "
                     f"{problem} (/system1:doctor)")
    else:
        line = engine_line(run)
        if line:
            lines.append(line)
    line = routing_line(run)
    if line:
        lines.append(line)
    backlog = unlabelled_prompts() if run.settings["routing"]["enabled"] else 0
    if backlog >= LABEL_BACKLOG:
        lines.append(f"{PREFIX}{backlog} logged prompts wait for labels: /system1:calibrate fits the routing "
                     "threshold to your own prompts.")
    if not lines:
        run.say("nothing needs the user")
        return None
    return {"systemMessage": "\n".join(lines)}


if __name__ == "__main__":
    sys.exit(common.main("session_start", body))
