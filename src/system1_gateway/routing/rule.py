"""The user's routing rule: `~/.config/system1/routing_rule.py`, copied from the default
(`default_rule.py` beside this module) the first time a hook needs it.

The file is the user's own code, run in the hook process like a shell alias would be: it is
compiled and executed in a fresh namespace (no import machinery, ≈ 0.2 ms), and its
`tier(features)` must return a tier (haiku / sonnet / opus / fable), or a dict
`{"model": tier, "effort": "low" … "max" (optional), "override_explicit": bool (optional)}`.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # no `typing` on the short-lived path (docs/architecture.md)
if TYPE_CHECKING:
    from typing import Any

from ..paths import LocationError, config_path, private_dir
from . import EFFORTS, TIERS

DEFAULT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "default_rule.py")


class RuleError(Exception):
    """The rule file is missing a `tier`, raised, or returned something that is not a tier."""


EXPECTED = (f"expected a tier ({', '.join(TIERS)}) or a dict {{\"model\": tier, \"effort\": "
            f"{'|'.join(EFFORTS)} (optional), \"override_explicit\": true|false (optional)}}")


def rule_path() -> str:
    try:
        return str(config_path().parent / "routing_rule.py")
    except LocationError as exc:  # a relative SYSTEM1_CONFIG: no rule is run from the working directory
        raise RuleError(str(exc)) from None


def ensure_rule() -> str:
    """The user's rule file, created from the default when absent."""
    path = rule_path()
    if not os.path.exists(path):
        private_dir(os.path.dirname(path))
        try:  # 0644 whatever the umask allows more of: a group-writable rule is refused (`_check_owner`)
            with open(DEFAULT, "rb") as source, open(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644),
                                                     "wb") as target:  # (shutil costs ≈ 3 ms to import)
                target.write(source.read())
        except FileExistsError:  # another hook created it meanwhile
            pass
    return path


def _check_owner(handle: Any, path: str) -> None:
    """The rule is Python run in the hook: refuse one another user could have written (sshd's
    StrictModes for authorized_keys, the same reasoning)."""
    if os.name == "nt":
        return
    info = os.fstat(handle.fileno())  # the file opened, not whatever the path names by now
    if info.st_uid != os.getuid():
        raise RuleError(f"{path}: not run: owned by uid {info.st_uid}, not by you (uid {os.getuid()})")
    if info.st_mode & 0o022:
        raise RuleError(f"{path}: not run: writable by group or others (chmod go-w {path})")


def decide(features: dict[str, bool], path: str | None = None) -> dict[str, Any]:
    """What the rule picks for these features, normalised: {"model": tier, "effort": str | None,
    "override_explicit": bool}; RuleError when it cannot."""
    path = path or ensure_rule()
    try:
        with open(path, encoding="utf-8") as handle:
            _check_owner(handle, path)
            source = handle.read()
        namespace: dict[str, Any] = {"__name__": "system1_routing_rule", "__file__": path}
        exec(compile(source, path, "exec"), namespace)  # noqa: S102 - the user's own rule file
        rule = namespace.get("tier")
        if not callable(rule):
            raise RuleError(f"{path}: defines no tier(features) function")
        chosen = rule(dict(features))
    except RuleError:
        raise
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - the user's code (even sys.exit): reported, not raised
        raise RuleError(f"{path}: {type(exc).__name__}: {exc}") from None
    return normalise(chosen, path)


def normalise(chosen: Any, where: str = "the routing rule") -> dict[str, Any]:
    """A rule's return value as {"model", "effort", "override_explicit"}; RuleError naming what
    was expected."""
    if isinstance(chosen, str) and chosen in TIERS:
        return {"model": chosen, "effort": None, "override_explicit": False}
    if isinstance(chosen, dict) and chosen.get("model") in TIERS and set(chosen) <= {
            "model", "effort", "override_explicit"}:
        effort, override = chosen.get("effort"), chosen.get("override_explicit", False)
        if (effort is None or effort in EFFORTS) and isinstance(override, bool):
            return {"model": chosen["model"], "effort": effort, "override_explicit": override}
    raise RuleError(f"{where}: tier() returned {chosen!r}, {EXPECTED}")


def apply_rule(features: dict[str, bool], path: str | None = None) -> str:
    """The tier the rule picks for these features; RuleError when it cannot."""
    return str(decide(features, path)["model"])
