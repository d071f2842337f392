"""What the Agent hook did with each spawn, counted: `system1 status` shows the last one,
`system1 report` the counts per outcome. Read from the routing log's `source: "agent"`
records, which the hook writes for every spawn it sees whatever `[routing] log_dirs` says
(without the brief's text outside the log dirs: `text_logged: false`).

The outcome of a record: "set" (a model was set), else its `why_not_set` (not_ready, fork,
no_answer, below_threshold, explicit_model, same_model), else "mode_log" / "mode_hint" (the
hook only records in those modes). `reason` is a line of fixed words and numbers: the
features below their bar with confidence and bar, the model chosen explicitly, the tier that
runs anyway, the kind of engine failure; never the brief.

Stdlib only; reading never raises (an unreadable log has no spawns, a bad line is skipped).
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # `typing` costs ≈ 5 ms at import: annotations only (they are never evaluated)
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any

from .. import bounded_json
from . import log as routing_log

NEEDLE = '"source":"agent"'
TAIL_CHUNK = 256 << 10  # bytes read per step from the log's end when looking for the last spawn
TAIL_MAX = 64 << 20  # the last spawn is looked for in the log's last 64 MB at most
OUTCOMES = ("set", "not_ready", "fork", "no_answer", "below_threshold", "explicit_model", "same_model",
            "mode_log", "mode_hint")


def outcome(entry: dict[str, Any]) -> str | None:
    """The outcome of one agent record (None: not an agent record)."""
    if entry.get("source") != "agent":
        return None
    if isinstance(entry.get("set_model"), str):
        return "set"
    why = entry.get("why_not_set")
    if isinstance(why, str) and why:
        return why
    mode = entry.get("mode")
    return f"mode_{mode}" if mode in ("log", "hint") else "unknown"


def below(entry: dict[str, Any]) -> dict[str, tuple[float, float]]:
    """{feature: (confidence, bar)} of each feature the record says was below its bar."""
    found = entry.get("below")
    if not isinstance(found, dict):
        return {}
    out = {}
    for name, pair in found.items():
        if (isinstance(name, str) and isinstance(pair, list) and len(pair) == 2
                and all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in pair)):
            out[name] = (float(pair[0]), float(pair[1]))
    return out


def reason(entry: dict[str, Any]) -> str | None:
    """Why (fixed words and numbers), or None when there is nothing to add to the outcome."""
    what = outcome(entry)
    if what == "set":
        effort = entry.get("set_effort")
        return f"{entry.get('set_model')}" + (f", effort {effort}" if isinstance(effort, str) else "")
    if what == "below_threshold":
        pairs = below(entry)
        return ", ".join(f"{name} {conf:.2f} < {bar:.2f}" for name, (conf, bar) in pairs.items()) or None
    if what == "explicit_model":
        chosen = entry.get("model") if isinstance(entry.get("model"), str) else entry.get("explicit")
        return f"chosen: {chosen}" if isinstance(chosen, str) else None
    if what == "same_model":
        tier = entry.get("rule_tier")
        return f"{tier} runs anyway" if isinstance(tier, str) else None
    if what == "no_answer":
        error = entry.get("error")
        return error[:80] if isinstance(error, str) else None
    return None


def summary(entry: dict[str, Any]) -> dict[str, Any]:
    """The shape status shows: time, outcome, reason (no text)."""
    return {"at": entry.get("ts") if isinstance(entry.get("ts"), str) else None, "outcome": outcome(entry),
            "reason": reason(entry)}


def counts(where: str | Path | None = None, since: float | None = None) -> dict[str, Any]:
    """{"spawns": n, "by_outcome": {outcome: n}, "below_by_feature": {feature: n}} over the log
    (records at or after `since`, epoch seconds, when given)."""
    import time

    cutoff = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(since)) if since else ""
    by: dict[str, int] = {}
    features: dict[str, int] = {}
    total = 0
    for _, entry in routing_log.entries(where, only=NEEDLE):
        what = outcome(entry)
        ts = entry.get("ts")
        if what is None or not isinstance(ts, str) or ts < cutoff:
            continue
        total += 1
        by[what] = by.get(what, 0) + 1
        if what == "below_threshold":
            for name in below(entry):
                features[name] = features.get(name, 0) + 1
    order = {name: i for i, name in enumerate(OUTCOMES)}
    return {"spawns": total,
            "by_outcome": dict(sorted(by.items(), key=lambda kv: (-kv[1], order.get(kv[0], 99), kv[0]))),
            "below_by_feature": dict(sorted(features.items(), key=lambda kv: (-kv[1], kv[0])))}


def last(where: str | Path | None = None) -> dict[str, Any] | None:
    """The last spawn the hook recorded (`summary`), read backwards from the log's end."""
    try:
        fd = os.open(str(where or routing_log.path()), os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return None
    try:
        import stat

        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return None
        end = info.st_size
        carry = b""
        needle = NEEDLE.encode()
        while end > 0 and info.st_size - end < TAIL_MAX:
            start = max(0, end - TAIL_CHUNK)
            os.lseek(fd, start, os.SEEK_SET)
            block = os.read(fd, end - start) + carry
            lines = block.split(b"\n")
            carry = lines.pop(0) if start > 0 else b""  # a line cut at the chunk's start: read with the next
            for line in reversed(lines):
                if needle not in line:
                    continue
                try:
                    entry = bounded_json.loads(line.decode("utf-8", "replace"))
                except (ValueError, RecursionError):
                    continue
                if isinstance(entry, dict) and outcome(entry) is not None:
                    return summary(entry)
            end = start
    except OSError:
        return None
    finally:
        os.close(fd)
    return None
