"""`system1 routing log|hint|set|status`: the routing mode, with `set` behind the READY gate.

    system1 routing status
    system1 routing log | hint
    system1 routing set [--force] [--provider NAME] [--log FILE] [--labels-file FILE]
                        [--min-feature-accuracy P] [--min-safety P] [--min-failures N]

`set` runs `system1 evaluate` (the same bars and flags) and, only when it says READY — or with
`--force`, which the record, `system1 status`, `system1 report` and SessionStart show as
FORCED — writes `[routing] mode = "set"` (and `enabled = true`) into the config and the
verdict into `<state>/routing/set.json` (routing/gate.py; the Agent hook sets subagent models
only while it exists). NOT READY writes nothing and exits 3 with the reasons. `log` and
`hint` write the mode and remove the verdict, so "set" must pass the gate again.

Stdout: one JSON object (the mode, what was written, the verdict and its reasons).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from .evaluate import EXIT_INVALID, EXIT_NOT_READY, Refused, evaluate
from .evaluate import EXIT_READY as EXIT_OK

FEATURE_KEYS = ("n", "accuracy_at_threshold", "threshold", "coverage")


def summary(report: dict[str, Any]) -> dict[str, Any]:
    """What the verdict record keeps of an evaluate report (numbers only, no text)."""
    return {"verdict": report["verdict"], "entries": report["entries"], "reasons": report["reasons"],
            "bars": report["bars"],
            "features": {name: {k: f.get(k) for k in FEATURE_KEYS} for name, f in report["features"].items()},
            "rule_with_engine": report["rule_with_engine"]}


def emit(obj: dict[str, Any], pretty: bool) -> None:
    print(json.dumps(obj, indent=2 if pretty else None, ensure_ascii=False))


def _state(path: str) -> dict[str, Any]:
    from ..config import tables as config_tables
    from ..routing import gate

    settings, problem = config_tables.load()
    routing = settings["routing"]
    record = gate.read()
    return {"enabled": routing["enabled"], "mode": routing["mode"],
            "shown": gate.describe(routing["mode"], record) if routing["enabled"] else "off",
            "verdict": record, "config": path, "config_problem": problem}


def run(args: argparse.Namespace) -> int:
    from ..config.edit import write_routing_mode
    from ..model.errors import ConfigError, GatewayError
    from ..paths import config_path
    from ..routing import gate

    pretty = getattr(args, "pretty", False)

    def fail(message: str, code: int = EXIT_INVALID, **extra: Any) -> int:
        print(f"routing: {message}", file=sys.stderr)
        emit({"error": message, **extra, **_state(str(config_path()))}, pretty)
        return code

    if args.mode == "status":
        emit(_state(str(config_path())), pretty)
        return EXIT_OK
    if args.force and args.mode != "set":
        return fail("--force goes with `set` only")
    verdict: str | None = None
    kept: dict[str, Any] | None = None
    if args.mode == "set":
        print("routing: running `system1 evaluate` on your labelled log entries…", file=sys.stderr)
        try:
            report = evaluate(args)
        except (Refused, GatewayError) as exc:
            message = str(exc) if isinstance(exc, Refused) else exc.message
            if not args.force:
                return fail(f"evaluate: {message}")
            kept = {"verdict": "UNKNOWN", "error": message}
        else:
            kept = summary(report)
        if kept["verdict"] == "READY":
            verdict = "READY"
        elif args.force:
            verdict = "FORCED"
        else:
            for reason in kept["reasons"]:
                print(f"  • {reason}", file=sys.stderr)
            # An earlier READY no longer holds: without a verdict, mode "set" acts as "hint".
            had = gate.read() is not None
            gate.clear()
            return fail("evaluate says NOT READY: the mode is unchanged (--force overrides, and says so)"
                        + ("; the earlier verdict is withdrawn, so the hook no longer sets models" if had else ""),
                        EXIT_NOT_READY, reasons=kept["reasons"])
    try:
        path = write_routing_mode(args.mode)
    except ConfigError as exc:
        return fail(exc.message)
    if verdict:
        try:
            gate.write(verdict, kept)
        except OSError as exc:
            return fail(f"cannot write {gate.path()}: {exc.strerror or exc} (mode \"set\" acts as \"hint\" "
                        "until a verdict is recorded)")
    else:
        gate.clear()
    state = _state(str(path))
    print(f"routing: mode {state['shown']} ({path})", file=sys.stderr)
    emit(state, pretty)
    return EXIT_OK
