"""The tables every process reads from the config file with the stdlib alone: the hooks'
`[routing]`, `[skills]` and `[guard]` (a hook runs once per prompt or tool call), and the one
notion of a boolean setting that the fast paths share (`flag`, `autostart`).

This is the one definition of these tables: `config/settings.py` calls `parse` too, so `system1
doctor`, `order` and the daemon refuse what the hooks refuse, with the same message.
A hook that meets an unusable config file does nothing and says why under `--explain`, except
the guard: when the guard may be on (`broken_guard`) it applies its failure policy, and its ask
says why (at length once per session). SessionStart tells the user once per session.
"""

from __future__ import annotations

import os
from collections import namedtuple  # loaded with pathlib already; `typing` is not

TYPE_CHECKING = False  # no `typing` on the short-lived path (docs/architecture.md)
if TYPE_CHECKING:
    from typing import Any

from ..paths import config_path

# The defaults, and the type of each key. Everything is off until the user turns it on.
DEFAULTS: dict[str, dict[str, Any]] = {
    "routing": {
        "enabled": False,        # ask the four routing features of each prompt (and spawn brief)
        "mode": "log",           # "log" | "hint" (the one-line hint) | "set" (the Agent hook sets
                                 # the subagent's model; needs `system1 routing set`): see `parse`
        "hint": False,           # the older spelling: true means mode "hint" (a given mode wins)
        "min_confidence": 0.8,
        "log_dirs": [],          # repositories (or parents) whose prompts are logged, locally
        "budget_s": 1.5,         # the engine budget per prompt, shared with the skill picker
        "min_words": 10,         # shorter prompts are not routed
    },
    "skills": {
        "enabled": True,         # record which skill fits (only where the log is on, or hint = true)
        "hint": False,           # "consider the x skill" when confidence >= min_confidence
        "min_confidence": 0.8,
    },
    "guard": {
        "enabled": False,        # ask before a Bash command the engine judges destructive
        "min_confidence": 0.7,   # refitted on held-out commands read in parts (docs/guard.md)
        "on_failure": "ask",     # engine down / timed out: "ask" the user, or let it run ("open")
        "budget_s": 1.5,
        # Claude Code's auto mode has its own classifier, and a hook's "ask" forces a prompt
        # there: the guard denies only at this bar and otherwise leaves the call to it.
        "auto_deny_min_confidence": 0.95,
        "auto_context": True,    # auto mode, below the deny bar: tell the model what the guard read
        # Claude Code's permission prompt for Bash: "read-only" answers it "allow" when every part
        # of the command only reads by the reviewed table (shell/readonly.json; hooks/approve.py)
        "approve": "off",
    },
}
ON_FAILURE = ("ask", "open")
APPROVE = ("off", "read-only")
HOOK_BUDGET_MAX_S = 4.5  # the hooks' timeout in hooks/hooks.json is 5 s
ROUTING_MODES = ("log", "hint", "set")  # routing.MODES (not imported: config/settings.py reads this module too)
TABLES = tuple(DEFAULTS)
# What a boolean setting given as text means (pydantic's words, so the fast path and the
# validated config agree); anything else is malformed.
TRUE_WORDS = {"1", "true", "t", "yes", "y", "on"}
FALSE_WORDS = {"0", "false", "f", "no", "n", "off"}


def flag(value: Any) -> bool | None:
    """A boolean setting: a TOML boolean, or one of the words; None when malformed."""
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower() if isinstance(value, (str, int)) else ""
    return True if text in TRUE_WORDS else False if text in FALSE_WORDS else None


def autostart(data: dict[str, Any] | None, environ: Any) -> bool:
    """`[serve] autostart` (default true), overridden by SYSTEM1_SERVE_AUTOSTART. `data` is the
    parsed file ({} when there is none, None when it cannot be read): an unreadable file or a
    malformed value means no autostart, and whoever answers in-process reports the error."""
    value: Any = environ.get("SYSTEM1_SERVE_AUTOSTART", "")
    if value == "":
        if data is None:
            return False
        serve = data.get("serve")
        value = serve.get("autostart", True) if isinstance(serve, dict) else True
    return flag(value) is True


class Problem(Exception):
    """An invalid hook setting; the message names the table, the key and what was expected."""


def _check(table: str, key: str, value: Any) -> Any:
    default = DEFAULTS[table][key]
    where = f"[{table}] {key}"
    if isinstance(default, bool):
        if not isinstance(value, bool):
            raise Problem(f"{where}: expected true or false, got {value!r}")
        return value
    if isinstance(default, int) and not isinstance(default, bool) and key == "min_words":
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 1000:
            raise Problem(f"{where}: expected a whole number from 0 to 1000, got {value!r}")
        return value
    if isinstance(default, float):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise Problem(f"{where}: expected a number, got {value!r}")
        # A budget ends before the hook's 5 s timeout (hooks.json): Claude Code treats a hook it
        # had to kill as a non-blocking error, so a guard still waiting would let the command run.
        low, high = (0.0, 1.0) if key.endswith("min_confidence") else (0.05, HOOK_BUDGET_MAX_S)
        if not low <= float(value) <= high:
            raise Problem(f"{where}: expected a number from {low:g} to {high:g}, got {value!r}")
        return float(value)
    if key == "log_dirs":
        if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
            raise Problem(f"{where}: expected a list of directory paths, got {value!r}")
        return [os.path.abspath(os.path.expanduser(v)) for v in value]
    if key == "mode":
        if value not in ROUTING_MODES:
            raise Problem(f"{where}: expected \"log\", \"hint\" or \"set\", got {value!r}")
        return value
    if key == "approve":
        if value not in APPROVE:
            raise Problem(f"{where}: expected \"off\" or \"read-only\", got {value!r}")
        return value
    if key == "on_failure":
        if value not in ON_FAILURE:
            raise Problem(f"{where}: expected \"ask\" or \"open\", got {value!r}")
        return value
    raise Problem(f"{where}: unknown key")  # pragma: no cover - DEFAULTS lists every key


def parse(data: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The three tables of a parsed config file, with defaults; raises Problem.

    `[routing] mode` is the effective mode: the given `mode`, else "hint" when the older
    `hint = true` is given, else "log" (when both are given and disagree, `mode` wins)."""
    settings = {}
    for table, defaults in DEFAULTS.items():
        raw = data.get(table, {})
        if not isinstance(raw, dict):
            raise Problem(f"[{table}]: expected a table, got {raw!r}")
        unknown = sorted(set(raw) - set(defaults))
        if unknown:
            raise Problem(f"[{table}] {unknown[0]}: unknown key (expected one of {', '.join(defaults)})")
        settings[table] = {key: _check(table, key, raw[key]) if key in raw else default
                           for key, default in defaults.items()}
    routing = settings["routing"]
    if "mode" not in data.get("routing", {}) and routing["hint"]:
        routing["mode"] = "hint"  # `hint = true` alone is the older spelling of mode "hint"
    return settings


def broken_guard() -> str | None:
    """With the config file unusable (`load` gave a problem): is the guard perhaps on? None when
    it is off for sure (the file parses and has no [guard] table, or one without `enabled`, or
    `enabled = false`); else the failure policy it applies: a valid `on_failure`, or "ask". A
    broken config must not switch a guard the user turned on off. A file that is not TOML is read
    as text: "ask" when a line names the guard table (a syntax error elsewhere says nothing about
    it); one that cannot be read at all, or a relative SYSTEM1_CONFIG: "ask", as nothing says it is off."""
    from . import file as config_file

    try:
        data = config_file.load() or {}
    except config_file.Unreadable:
        try:
            text = config_path().read_bytes().decode("utf-8", "replace")
        except (OSError, ValueError):  # ValueError: paths.LocationError
            return "ask"
        names = any(line.strip().lstrip("[ \t\"'").startswith("guard") for line in text.splitlines()
                    if line.strip().startswith(("[", "guard", "\"guard", "'guard")))
        return "ask" if names else None
    guard = data.get("guard")
    if guard is None or isinstance(guard, dict) and guard.get("enabled", False) is False:
        return None
    policy = guard.get("on_failure") if isinstance(guard, dict) else None
    return policy if policy in ON_FAILURE else "ask"


# The hooks' tables as the file sets them, and a message when the file is unreadable or invalid
# (the tables are then the defaults).
Loaded = namedtuple("Loaded", "tables problem")


def load() -> Loaded:
    """The tables, or the defaults and the problem when the file is unreadable or invalid."""
    from . import file as config_file

    try:
        data = config_file.load() or {}
    except config_file.Unreadable as exc:
        return Loaded(parse({}), str(exc))
    try:
        return Loaded(parse(data), None)
    except Problem as exc:
        return Loaded(parse({}), f"{config_path()}: {exc}")
