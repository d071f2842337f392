"""`system1 outcomes [--apply]`: did each subagent spawn fail or succeed? A proposal per
Agent spawn, from Claude Code's transcripts, written into the routing log on --apply.

    system1 outcomes [--projects DIR] [--log FILE] [--since 30d] [--apply] [--json]

Evidence, strongest first (the transcript facts are in insight/transcripts.py):
  failed     the spawn's tool_result is an error (unknown agent type, interrupted…);
             its task notification's status is not `completed` (failed / killed / stopped);
             the agent's report says it was blocked;
             a later spawn in the same conversation redid the task: the same primary task id
             (`W4-P3`, `Task 12`, `#41`) plus a retry marker ("retry", "previous attempt");
  doubtful   failed on a same-role re-spawn only (same agent type and description, nothing
             else), or succeeded without any sign of an end (no notification, no result);
  succeeded  otherwise.
The tier is the model that ran: `toolUseResult.resolvedModel` (it resolves `inherit`), else
the subagent file's own model, else the alias asked for, else the spawning loop's model.

--apply joins proposals to the routing log's `source: "agent"` entries by `tool_use_id`
and writes `outcome`, `outcome_reason`, `outcome_tier`, `outcome_source: "auto"` (and
`outcome_doubtful: true`). A human label (`outcome_source` other than "auto") is never
touched; other lines are kept byte for byte; `calibrate` then asks about the doubtful ones.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

from .. import bounded_json
from .transcripts import (
    AgentModel,
    SpawnCall,
    SpawnResult,
    Stats,
    TaskNotification,
    default_root,
    iter_files,
    iter_spawn_events,
    model_family,
)

EXIT_OK, EXIT_INPUT = 0, 2
DESCRIPTION_CHARS = 60  # what the doubtful list shows of a spawn: never its brief

# `W4-P3`, `M2.T14` (letter+digit groups), `Task 12`, `step 3.2`, `#41`
TASK_ID = re.compile(r"\b([A-Z]{1,3}\d+(?:[-.][A-Z]{1,3}\d+)+)\b"
                     r"|\b((?i:task|issue|ticket|step|phase|story|item)[ #-]*\d+(?:\.\d+)*)\b"
                     r"|(?<![\w#&])(#\d+)\b")
RETRY = re.compile(r"(?i)\b(?:retry(?:ing)?|re-try|re-?do(?:ing)?|re-?run|re-?attempt|try(?:ing)? again|again"
                   r"|(?:previous|prior|earlier|last|first|failed) attempt|second attempt|another attempt"
                   r"|attempt\s*#?\s*[2-9])\b")
# "BLOCKED: …" or "Blocked on …" opening a line, "I was blocked", "status: blocked"
BLOCKED = re.compile(r"(?im)^[\s>*_#-]*blocked\b(?:\s*[:—–-]|\s+(?:on|by)\b|\s*$)"
                     r"|\bI(?:\s+(?:am|was|got|have been)|'m)\s+blocked\b"
                     r"|\b(?:status|result|outcome|state)\s*[:=]\s*\**\s*blocked\b")
_WORDS = re.compile(r"[a-z]+")


@dataclass
class Spawn:
    call: SpawnCall
    result: SpawnResult | None = None
    notification: TaskNotification | None = None
    agent_model: str | None = None


@dataclass
class Proposal:
    tool_use_id: str
    session_id: str
    timestamp: str
    description: str
    outcome: str  # 'failed' | 'succeeded'
    reason: str
    tier: str | None
    doubtful: bool

    def short(self) -> dict[str, Any]:
        return {"tool_use_id": self.tool_use_id, "session_id": self.session_id, "timestamp": self.timestamp,
                "description": shorten(self.description), "proposed": self.outcome, "reason": self.reason,
                "tier": self.tier}


def shorten(text: str, limit: int = DESCRIPTION_CHARS) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


# -- collecting the facts ------------------------------------------------------------------------

def collect(root: Path, since: float | None = None, project: str | None = None,
            stats: Stats | None = None) -> dict[str, Spawn]:
    """Every spawn under `root`, by tool_use id (a fork's copy of a spawn is the same spawn),
    with its result, its latest notification and its subagent's model."""
    stats = stats if stats is not None else Stats()
    spawns: dict[str, Spawn] = {}
    results: dict[str, SpawnResult] = {}
    notes: dict[str, TaskNotification] = {}  # by tool_use id, else by task (agent) id
    models: dict[str, str] = {}
    for tf in iter_files(root, since, project):
        for event in iter_spawn_events(tf, stats):
            if isinstance(event, SpawnCall):
                if event.tool_use_id in spawns:
                    stats.duplicates += 1
                else:
                    spawns[event.tool_use_id] = Spawn(event)
            elif isinstance(event, SpawnResult):
                results.setdefault(event.tool_use_id, event)
            elif isinstance(event, TaskNotification):
                key = event.tool_use_id or event.task_id
                if key and (key not in notes or event.timestamp >= notes[key].timestamp):
                    notes[key] = event  # a resumed agent notifies again: the latest status wins
            elif isinstance(event, AgentModel):
                models[event.agent_id] = event.model
    for tool_use_id, spawn in spawns.items():
        spawn.result = results.get(tool_use_id)
        agent = spawn.result.agent_id if spawn.result else None
        spawn.notification = notes.get(tool_use_id) or (notes.get(agent) if agent else None)
        agent = agent or (spawn.notification.task_id if spawn.notification else None)
        spawn.agent_model = models.get(agent) if agent else None
    return spawns


# -- proposing -----------------------------------------------------------------------------------

def task_id(call: SpawnCall) -> str | None:
    """The primary task id as written: the first one in the description, else in the
    brief's opening (compare with `_task_key`)."""
    for text in (call.description, call.brief[:600]):
        found = TASK_ID.search(text)
        if found:
            return " ".join(next(g for g in found.groups() if g).split())
    return None


def _task_key(task: str | None) -> str | None:
    """'Task 12', 'task #12' and 'TASK-12' are one task; 'W4-P3' is 'w4-p3'."""
    return re.sub(r"[\s#-]+", " ", task).strip().casefold() if task else None


def role(call: SpawnCall) -> str | None:
    """Agent type + description without task ids, retry words or punctuation."""
    words = _WORDS.findall(RETRY.sub(" ", TASK_ID.sub(" ", call.description)).lower())
    return f"{call.subagent_type.lower()}|{' '.join(words)}" if words else None


def retries(call: SpawnCall) -> bool:
    return bool(RETRY.search(call.description) or RETRY.search(call.brief[:1500]))


def ended_at(spawn: Spawn) -> str:
    """When the agent was known to be done (the notification, or a foreground result)."""
    if spawn.notification and spawn.notification.timestamp:
        return spawn.notification.timestamp
    if spawn.result and spawn.result.status != "async_launched":
        return spawn.result.timestamp
    return ""


def tier_of(spawn: Spawn) -> str | None:
    result = spawn.result
    model = (result.resolved_model if result else None) or spawn.agent_model or spawn.call.model \
        or spawn.call.parent_model
    return model_family(model)


def own_evidence(spawn: Spawn) -> tuple[str, str, bool]:
    """(outcome, reason, doubtful) from the spawn's own result and notification."""
    result, note = spawn.result, spawn.notification
    if result and result.is_error:
        first = result.text.strip().splitlines()[0] if result.text.strip() else "?"
        return "failed", "tool error: " + shorten(first), False
    if note and note.status and note.status != "completed":
        return "failed", f"task notification: {note.status}", False
    report = note.result if note and note.result else (result.text if result else "")
    if report and BLOCKED.search(report):
        return "failed", "report says blocked", False
    if (note and note.status == "completed") or (result and result.status == "completed"):
        return "succeeded", "completed", False
    if result is None:
        return "succeeded", "no tool result found", True
    return "succeeded", "no task notification found", True


@dataclass
class Traits:
    """What the redo rules compare, computed once per spawn."""

    spawn: Spawn
    task: str | None  # as written, for the reason
    key: str | None  # for comparing
    role: str | None
    retries: bool


def traits(spawn: Spawn) -> Traits:
    shown = task_id(spawn.call)
    return Traits(spawn, shown, _task_key(shown), role(spawn.call), retries(spawn.call))


def redo_of(mine: Traits, later: Iterable[Traits]) -> tuple[str, bool] | None:
    """(reason, doubtful) when a later spawn of the same conversation redid this one."""
    call, done = mine.spawn.call, ended_at(mine.spawn)
    for other in later:
        if other.spawn.call.message_id == call.message_id:
            continue  # spawned together: parallel work, not a redo
        if mine.key and other.key == mine.key and other.retries:
            return f"redone: {mine.task} retried by a later spawn", False
        if mine.role and other.role == mine.role and other.key == mine.key \
                and (not done or other.spawn.call.timestamp >= done):
            return "same-role re-spawn", True
    return None


def propose(spawns: dict[str, Spawn]) -> list[Proposal]:
    """One proposal per spawn, in time order. Redos are looked for among the later spawns
    of the same conversation (session, and the agent that spawned)."""
    by_conversation: dict[tuple[str, str | None], list[Spawn]] = {}
    for spawn in spawns.values():
        by_conversation.setdefault((spawn.call.session_id, spawn.call.context), []).append(spawn)
    proposals = []
    for group in by_conversation.values():
        group.sort(key=lambda s: (s.call.timestamp, s.call.line))
        described = [traits(s) for s in group]
        for i, spawn in enumerate(group):
            outcome, reason, doubtful = own_evidence(spawn)
            redo = redo_of(described[i], described[i + 1:])
            if redo and outcome == "failed":
                reason += "; " + redo[0].split(":")[0]
            elif redo:
                outcome, reason, doubtful = "failed", redo[0], redo[1]
            call = spawn.call
            proposals.append(Proposal(call.tool_use_id, call.session_id, call.timestamp, call.description,
                                      outcome, reason, tier_of(spawn), doubtful))
    proposals.sort(key=lambda p: (p.timestamp, p.tool_use_id))
    return proposals


# -- the routing log -----------------------------------------------------------------------------

@dataclass
class LogResult:
    matched: int = 0  # agent entries with a proposal
    updated: int = 0  # entries whose outcome fields changed
    kept_user: int = 0  # entries labelled by a human, left alone
    written: bool = False


def _revised(line: bytes, proposals: dict[str, Proposal], counts: LogResult) -> bytes | None:
    """The line with its outcome fields set, or None to keep it byte for byte."""
    if b'"tool_use_id"' not in line or b'"agent"' not in line:
        return None
    try:
        entry = bounded_json.loads(line)
    except (ValueError, RecursionError):
        return None
    if not isinstance(entry, dict) or entry.get("source") != "agent":
        return None
    tool_use_id = entry.get("tool_use_id")  # a list or an object here (a hand edit) is not hashable
    proposal = proposals.get(tool_use_id) if isinstance(tool_use_id, str) else None
    if proposal is None:
        return None
    counts.matched += 1
    if entry.get("outcome_source", "auto") != "auto":
        counts.kept_user += 1
        return None
    wanted = {"outcome": proposal.outcome, "outcome_reason": proposal.reason, "outcome_tier": proposal.tier,
              "outcome_source": "auto"}
    if all(entry.get(k) == v for k, v in wanted.items()) and bool(entry.get("outcome_doubtful")) == proposal.doubtful:
        return None
    entry.update(wanted)
    entry.pop("outcome_doubtful", None)
    if proposal.doubtful:
        entry["outcome_doubtful"] = True
    counts.updated += 1
    end = b"\n" if line.endswith(b"\n") else b""
    return json.dumps(entry, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + end


def count_matches(log: Path, proposals: dict[str, Proposal]) -> int:
    counts = LogResult()
    try:
        with open(log, "rb") as src:
            for line in src:
                _revised(line, proposals, counts)
    except FileNotFoundError:
        return 0
    return counts.matched


def apply_to_log(log: Path, proposals: dict[str, Proposal]) -> LogResult:
    """Write the proposals into the routing log (routing.log.rewrite: atomic, keeps `<log>.bak`,
    copies what hooks append meanwhile). Nothing is written when nothing changes."""
    from ..routing import log as routing_log

    counts = LogResult()
    counts.written = routing_log.rewrite(log, lambda line: _revised(line, proposals, counts))
    return counts


# -- the command ---------------------------------------------------------------------------------

def parse_age(text: str) -> float:
    """Seconds in '30d' / '12h' / '2w' / '90m' (a bare number is days)."""
    found = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([mhdw]?)\s*", text or "")
    if not found:
        raise ValueError(text)
    unit = {"m": 60, "h": 3600, "d": 86400, "w": 7 * 86400, "": 86400}[found.group(2)]
    return float(found.group(1)) * unit


def _fail(message: str) -> int:
    print(f"system1 outcomes: {message}", file=sys.stderr)
    return EXIT_INPUT


def run(args: argparse.Namespace) -> int:
    root = Path(args.projects).expanduser() if args.projects else default_root()
    if not root.is_dir():
        what = "--projects" if args.projects else "--projects (default)"
        return _fail(f"{what}: no such directory: {root}")
    since = None
    if args.since:
        try:
            since = time.time() - parse_age(args.since)
        except ValueError:
            return _fail(f"--since: expected an age such as 30d, 12h or 2w, got {args.since!r}")
    if args.log:
        log = Path(args.log).expanduser()
        if not log.is_file():
            return _fail(f"--log: no such file: {log}")
    else:
        from ..routing import log as routing_log

        log = Path(routing_log.path())
    t0 = time.perf_counter()
    stats = Stats()
    proposals = propose(collect(root, since, stats=stats))
    by_id = {p.tool_use_id: p for p in proposals}
    try:
        if args.apply and log.is_file():
            applied = apply_to_log(log, by_id)
        else:
            applied = LogResult(matched=count_matches(log, by_id))
    except OSError as exc:  # unreadable log, read-only directory, disk full: nothing was replaced
        return _fail(f"--log: cannot {'rewrite' if args.apply else 'read'} {log}: {exc.strerror or exc}")
    summary = _summary(proposals, stats, applied, bool(args.apply and log.is_file()), time.perf_counter() - t0)
    _warn(stats)
    if args.json:
        print(json.dumps(summary, ensure_ascii=False))
    else:
        _print(summary, log, args.apply)
    return EXIT_OK


def _summary(proposals: list[Proposal], stats: Stats, applied: LogResult, did_apply: bool,
             seconds: float) -> dict[str, Any]:
    tiers: dict[str, dict[str, int]] = {}
    for p in proposals:
        row = tiers.setdefault(p.tier or "unknown", {"failed": 0, "succeeded": 0, "doubtful": 0})
        row[p.outcome] += 1
        row["doubtful"] += p.doubtful
    return {"spawns": len(proposals), "failed": sum(p.outcome == "failed" for p in proposals),
            "succeeded": sum(p.outcome == "succeeded" for p in proposals),
            "doubtful": [p.short() for p in proposals if p.doubtful],
            "matched_log_entries": applied.matched, "applied": did_apply, "updated_log_entries": applied.updated,
            "kept_user_labels": applied.kept_user, "by_tier": tiers,
            "files": stats.files, "bytes": stats.bytes, "skipped_lines": stats.bad_lines + stats.truncated,
            "seconds": round(seconds, 3)}


def _warn(stats: Stats) -> None:
    skipped = stats.bad_lines + stats.truncated + stats.unreadable
    if skipped:
        print(f"system1 outcomes: skipped {stats.bad_lines} unreadable line(s), {stats.truncated} truncated "
              f"last line(s), {stats.unreadable} unreadable file(s); first: {stats.examples[0]}", file=sys.stderr)


def _print(summary: dict[str, Any], log: Path, apply: bool) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    console.print(f"{summary['files']} transcript files ({summary['bytes'] / 1e6:.1f} MB) read in "
                  f"{summary['seconds']:.1f} s: {summary['spawns']} spawns, {summary['failed']} failed, "
                  f"{summary['succeeded']} succeeded, {len(summary['doubtful'])} doubtful")
    if summary["by_tier"]:
        table = Table("tier", "failed", "succeeded", "doubtful", title="proposed outcomes by the model that ran")
        for tier, row in sorted(summary["by_tier"].items()):
            table.add_row(tier, str(row["failed"]), str(row["succeeded"]), str(row["doubtful"]))
        console.print(table)
    doubtful = summary["doubtful"]
    if doubtful:
        table = Table("tool_use_id", "session", "description", "proposed", "why", title="doubtful (calibrate asks)")
        for row in doubtful[:50]:
            table.add_row(row["tool_use_id"], row["session_id"][:8], row["description"], row["proposed"], row["reason"])
        console.print(table)
        if len(doubtful) > 50:
            console.print(f"… and {len(doubtful) - 50} more (--json lists them all)")
    if apply and summary["applied"]:
        console.print(f"routing log {log}: {summary['matched_log_entries']} spawns matched, "
                      f"{summary['updated_log_entries']} updated, {summary['kept_user_labels']} human labels kept"
                      + (f" (backup: {log.name}.bak)" if summary["updated_log_entries"] else ""))
    elif apply:
        console.print(f"no routing log at {log}: nothing to apply")
    else:
        console.print(f"routing log {log}: {summary['matched_log_entries']} spawns matched; "
                      "--apply writes the outcomes there")
