"""PreToolUse on Bash: the guard. Off by default (`[guard] enabled = true` turns it on).

    <venv python> -I -m system1_gateway.hooks.guard [--explain] < hook-input.json

Asks the built-in `destructive` question of the command; the gateway reads the command in
parts (docs/guard.md). When the answer is yes at or above `[guard] min_confidence`, or
*unsure* (abstained because what runs cannot be known from the text, or the engine abstained),
it returns `permissionDecision: "ask"` with a one-line reason naming the deciding part, so
the user confirms before the command runs. It never allows (Claude Code's own permission
rules still apply to everything it lets through) and never rewrites the command.

In the plugin's hook server (hooks/serve.py) a command the policy rules decide alone is
answered there, without the daemon (`ruled`); every other command goes to the daemon.
A command the text would ask about is then looked at on disk, in the hook input's `cwd`
(`on_disk`, shell/disk.py): `git reset --hard` in a clean tree, `rm -rf node_modules` that git
ignores, `> new.txt` lose nothing, and the guard stays silent; where it would lose something
the reason says what (`src/app.py has uncommitted changes`). Only the hook reads the disk.
When the engine cannot answer (no daemon, down, timed out, an error), `[guard] on_failure`
decides: "ask" (the default: the user is asked rather than the command silently passing) or
"open" (say nothing). So does a config file that cannot be used (unreadable, not TOML, an
invalid value) when the guard may be on: its defaults would turn the guard off (`misconfigured`).
The command is evidence: it is sent as data, and the reason shown is
built from fixed words, the confidence and the deciding part (shortened), never more of it.

In Claude Code's auto mode (`permission_mode: "auto"` in the hook input) a classifier reviews
every call, and a hook's "ask" would force a prompt it would have handled (Claude Code
≥ 2.1.211). There the guard denies only what reads destructive at `[guard]
auto_deny_min_confidence` (default 0.95; a policy rule's answer is certain), the reason naming
the deciding part (its place, the rule, a quoted excerpt of at most 60 characters: what reaches
the model is fixed words and a quote, never the command's text as the guard's); below that, and when it is unsure, it forces nothing: with `auto_context`
it passes what it read to the model as context, and when the engine fails it stays silent (the
classifier still reviews the call). Every other mode asks as above. The log records the mode.
"""

from __future__ import annotations

import json
import os
import re
import sys
import time

TYPE_CHECKING = False  # no `typing` on the short-lived path (docs/architecture.md)
if TYPE_CHECKING:
    from typing import Any

from .. import paths
from ..config import tables as config_tables
from . import common
from .common import NoAnswer, Run

AUTO = "auto"  # Claude Code's permission mode with its own classifier


def ask(reason: str) -> dict[str, Any]:
    return decide("ask", reason)


def decide(decision: str, reason: str) -> dict[str, Any]:
    return {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": decision,
                                   "permissionDecisionReason": reason}}


def context(note: str) -> dict[str, Any]:
    """Auto mode below the deny bar: no decision (the classifier decides), what the guard read."""
    return {"hookSpecificOutput": {"hookEventName": "PreToolUse", "additionalContext": note}}


def failed(run: Run, why: str) -> dict[str, Any] | None:
    """The failure policy: ask the user (default) or stay out of the way."""
    if run.problem:
        return misconfigured(run)
    guard = run.settings["guard"]
    if not guard["enabled"] or _stays_out(run, f"engine failed ({why})", guard["on_failure"]):
        return None
    return ask("System-1 guard could not judge this command (the engine did not answer); "
               "confirm it yourself, or run /system1:doctor.")


def _stays_out(run: Run, failure: str, on_failure: str) -> bool:
    if on_failure == "open":
        run.say(f"{failure}; on_failure = open: no decision")
        return True
    if run.text("permission_mode") == AUTO:
        run.say(f"{failure}; auto mode: no decision, the classifier reviews the call")
        return True
    run.say(f"{failure}; on_failure = ask")
    return False


def misconfigured(run: Run) -> dict[str, Any] | None:
    """The config file is unusable (run.problem): its defaults would turn the guard off, so when
    the guard may be on the failure policy applies. The ask says why at length once per session
    (`_told`), then briefly: every Bash call asks until the file is fixed."""
    policy = config_tables.broken_guard()
    if policy is None:
        run.say("guard is off (the config is invalid, and it turns no guard on)")
        return None
    if _stays_out(run, "the config is invalid", policy):
        return None
    if _told(run, str(run.problem)):
        return ask("System-1 guard: the config file is still invalid (explained at this session's first ask; "
                   "/system1:doctor); confirm this command yourself.")
    return ask(f"System-1 guard: the config file is invalid, so no command can be judged: {str(run.problem)[:400]}. "
               "Until it is fixed, the guard asks before every Bash command; fix it, or run /system1:doctor. "
               "Confirm this command yourself.")


def _told(run: Run, problem: str) -> bool:
    """Has this session had the long explanation of `problem`? Marks it when not: an empty file
    per (session, problem) in the state dir, named by their digest (a session id is input, never
    a path). Without a session id, or a state dir to write, every ask explains."""
    session = run.text("session_id")
    if not session:
        return False
    try:
        folder = paths.private_dir(paths.state_file("hooks", "told"))
        digest = paths.sha256(f"{session}\0{problem}".encode("utf-8", "surrogatepass")).hexdigest()[:32]
        os.close(os.open(folder / digest, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    except FileExistsError:
        return True
    except (OSError, ValueError):  # ValueError: a relative SYSTEM1_STATE_DIR (paths.LocationError)
        return False
    for old in folder.iterdir():  # a marker per broken session: forget those of past days
        try:
            if old.stat().st_mtime < time.time() - 86400:
                old.unlink()
        except OSError:
            pass
    return False


def body(run: Run) -> dict[str, Any] | None:
    guard = run.settings["guard"]
    if not guard["enabled"] and not run.problem:
        run.say("guard is off ([guard] enabled = false)")
        return None
    command = run.text("tool_input", "command")
    if not command.strip():
        run.say("no command in the tool input")
        return None
    if common.toggle.paused():
        run.say("paused (system1 toggle on resumes)")
        return None
    if run.problem:
        return misconfigured(run)
    answer = ruled(run, command)
    if answer is None:
        try:
            result = common.judge(run, command, {"destructive": {"builtin": "destructive"}}, guard["budget_s"])
        except NoAnswer as exc:
            # the rules and the disk may still decide it all, and find nothing lost
            answer = on_disk(run, command)
            if answer is None or answer.get("p_true", 1) >= 0.5:
                return failed(run, str(exc))
        else:
            answer = result["answers"].get("destructive")
    if not isinstance(answer, dict) or not isinstance(answer.get("p_true"), (int, float)):
        return failed(run, "no usable answer")
    p_true, confidence, unsure, destructive = _reads(answer, guard)
    if destructive or unsure:
        # what the text alone would ask about: the working tree may show it loses nothing (or
        # say what it would lose); only the hook reads the disk (docs/guard.md, "What is on disk")
        seen = on_disk(run, command)
        if seen is not None:
            answer = seen
            p_true, confidence, unsure, destructive = _reads(answer, guard)
    mode = run.text("permission_mode") or None
    if mode == AUTO:
        decision = "deny" if p_true >= 0.5 and confidence >= guard["auto_deny_min_confidence"] and not unsure \
            else "context" if (destructive or unsure) and guard["auto_context"] else None
    else:
        decision = "ask" if destructive or unsure else None
    run.say(f"destructive p = {p_true:.3f}" + (f", unsure ({answer.get('abstain_reason')})" if unsure else "")
            + f"; mode {mode or 'unknown'}: " + (decision or "no decision"))
    if common.logs_here(run, run.text("cwd")):
        common.append_log(run, {**common.base_record(run, "guard"), "command": command,
                                "tool_use_id": run.text("tool_use_id") or None,
                                "features": {"destructive": {"answer": p_true >= 0.5,
                                                             "confidence": round(confidence, 4)}},
                                "mode": mode, "decision": decision, "asked": decision == "ask"})
    # What goes to the model (auto mode's deny reason and context) is fixed words, the rule's id
    # or the unsure category, and the part as a quoted, shortened excerpt: the command is the
    # agent's (or an attacker's) text and must not speak with the guard's voice.
    if decision == "deny":
        return decide("deny", f"System-1 guard (auto mode): this command reads as destructive "
                              f"(p = {p_true:.2f}){_quoted(answer)}. Not run; do it another way or ask the user to run it.")
    if decision == "context":
        what = (f"cannot tell what this command does{_quoted(answer)}" if unsure else
                f"this command reads as destructive (p = {p_true:.2f}){_quoted(answer)}")
        return context(f"System-1 guard: {what}. Be sure the user wants this before relying on it.")
    if decision is None:
        return None
    if unsure:
        return ask(f"System-1 guard: cannot tell what this command does{_where(answer)}: "
                   f"{_reason(answer)}. Confirm before it runs.")
    return ask(f"System-1 guard: this command reads as destructive (p = {p_true:.2f}){_where(answer)}: "
               f"{_reason(answer, 'it may delete or overwrite data')}. Confirm before it runs.")


UNSURE = ("opaque", "engine", "bounds", "refused")


def _reads(answer: dict[str, Any], guard: dict[str, Any]) -> tuple[float, float, bool, bool]:
    """(p_true, confidence, unsure, destructive at the bar) of an answer. Unsure is not safe: an
    answer the engine (or the reading of the command) abstained on asks, whatever its
    probability. Only a confidence under the bar is left to the bar."""
    p_true = float(answer["p_true"])
    confidence = max(p_true, 1 - p_true)
    unsure = bool(answer.get("abstained")) and answer.get("abstain_reason") in UNSURE
    return p_true, confidence, unsure, p_true >= 0.5 and confidence >= guard["min_confidence"]


def on_disk(run: Run, command: str) -> dict[str, Any] | None:
    """The command's answer with what is on disk in the hook input's `cwd` (shell/disk.py), when
    the rules and the disk decide every part; None: the text-only answer stands. ASCII only, as
    `ruled`: the command path must not parse what could crash the parser."""
    if not command.isascii():
        return None
    from ..shell import disk

    if not disk.might_depend(command):
        return None
    t0 = time.perf_counter()
    seen = disk.answer(command, run.payload.get("cwd"))
    took = (time.perf_counter() - t0) * 1000
    if seen is None:
        run.say(f"disk: not decided by the rules and the disk ({took:.1f} ms): the text answer stands")
    else:
        run.say(f"disk: {seen.get('rationale')} ({took:.1f} ms)")
    return seen


def ruled(run: Run, command: str) -> dict[str, Any] | None:
    """In the warm hook server, the answer of a command the policy rules decide alone (`ls`,
    `git status && rm -rf ~`), as the daemon would give it, without its round trip (≈ 3 ms
    after an idle second) and without needing it running; None: ask the daemon. The command
    path (a new interpreter per call) does not load the shell grammar (≈ 40 ms) for this."""
    if not run.served or not command.isascii():
        # Beyond ASCII, the daemon reads it: a crash there is a failed call that asks, whereas a
        # crash here would end the server (the route hooks of the session fail open with it, and
        # guard.sh waits 6 s before its command guard). tree-sitter-bash's one known crasher was
        # code points past U+FFFF.
        return None
    from ..shell import structure

    answer = structure.ruled(command, 0.0)  # min_confidence 0, as common.judge asks the daemon
    if answer is not None:
        run.say(f"answered by the policy rules in the hook server ({answer.get('model')})")
    return answer


def _where(answer: dict[str, Any]) -> str:
    """` (part 3 of 3: rm -rf ~)` for a command read in parts, else ''."""
    part = answer.get("part")
    if not isinstance(part, dict) or not isinstance(part.get("text"), str):
        return ""
    return f" (part {part.get('index')} of {part.get('of')}: {part['text'][:120]})"


RULE_ID = re.compile(r"[a-z0-9][a-z0-9._-]{0,40}")
EXCERPT = 60  # characters of the deciding part quoted to the model


def _quoted(answer: dict[str, Any]) -> str:
    """` (part 2 of 2, rule rm, command text "rm -rf ~")`: the part's place, the rule id or the
    unsure category (fixed words), and the part as a JSON-quoted excerpt; '' without parts."""
    part = answer.get("part")
    if not isinstance(part, dict) or not isinstance(part.get("text"), str):
        return ""
    index, of = part.get("index"), part.get("of")
    place = f"part {index} of {of}" if isinstance(index, int) and isinstance(of, int) else "a part"
    rule, unsure = part.get("rule"), answer.get("abstain_reason")
    if isinstance(rule, str) and RULE_ID.fullmatch(rule):
        place += f", rule {rule}"
    elif unsure in UNSURE:
        place += f", {unsure}"
    text = part["text"] if len(part["text"]) <= EXCERPT else part["text"][:EXCERPT - 1] + "…"
    return f" ({place}, command text {json.dumps(text)})"


def _reason(answer: dict[str, Any], default: str = "the engine abstained") -> str:
    """Why the deciding part reads so (`rule rm: deletes files…`, `opaque: …`)."""
    part = answer.get("part")
    why = part.get("why") if isinstance(part, dict) else None
    return why[:300] if isinstance(why, str) and why else default


if __name__ == "__main__":
    sys.exit(common.main("guard", body, on_crash=failed))
