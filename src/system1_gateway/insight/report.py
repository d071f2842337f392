"""`system1 report`: does System-1 routing pay off? Totals only, from local files.

    system1 report [--since 30d] [--project PATH] [--projects DIR] [--log FILE] [--prices FILE]
                   [--json] [--html FILE]

Reads Claude Code transcripts (`~/.claude/projects/<slug>/*.jsonl` and their subagents') and
the plugin's routing log, over a period, in constant memory:

* reach: the share of user prompts that got a routing hint; adherence: of the spawns made
  under a hint, the share whose model (the one that ran) matched it; shadow mode when hints
  are off: what the hint would have been against what ran;
* subagent cost by tier: tokens in the four buckets (input, output, cache read, cache write
  5 m / 1 h), each API response counted once, priced from `prices.json`;
* realised savings (spawns that followed a hint, repriced at the user's usual tier mix),
  missed savings (spawns upgraded past a hint), minus the hint overhead (the plugin's
  measured context per session and each hint line);
* spawns the Agent hook set (`[routing] mode = "set"`: the log's `set_model`, joined by
  `tool_use_id`): how many ran on the tier set (the transcript's `toolUseResult.resolvedModel`),
  how many failed (the log's outcome when `outcomes --apply` or a person wrote one, else the
  outcome `system1 outcomes` would propose), the savings of those that succeeded against what
  would have run without the hook (the model the orchestrator asked for, else the spawning
  loop's own model; the usual tier mix when neither is known), and the cost of those that
  failed, counted as lost.

No prompt text is read into the output. Prices are API list prices: a subscription bills
differently, and the report says so.
"""

from __future__ import annotations

import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from ..routing import log as routing_log
from .prices import TIERS, PriceTable, Tokens
from .transcripts import Stats, TranscriptFile, iter_files, iter_records, iter_usage, model_family

HINT_MARK = "System-1 routing hint:"
TIER_OF_HINT = "→ subagent model: "
# What the plugin adds to every session's context: its skills' descriptions (measured on the
# real request body, tests/test_claude_code.py: 128 WordPiece tokens, ≈ 100 Claude tokens).
PLUGIN_CONTEXT_TOKENS = 128
# Looked up with a spawn's, a hint's or a rule's tier (each `str | None`), after checking it is here.
RANK: dict[str | None, int] = {tier: i for i, tier in enumerate(TIERS)}
_PROMPT_NEEDLES = (b'"type":"user"', HINT_MARK.encode())


@dataclass
class Prompt:
    session: str
    prompt_id: str | None
    ts: str
    hint_tier: str | None = None  # the tier a hint named
    hint_chars: int = 0
    rule_tier: str | None = None  # the rule's tier from the routing log (shadow mode)


@dataclass
class SpawnFact:
    tool_use_id: str
    session: str
    ts: str
    tier: str | None  # the model that ran
    agent_id: str | None
    anyway: str | None = None  # the tier that would have run without the hook: asked for, else the parent's
    outcome: str | None = None  # 'failed' | 'succeeded' (outcomes' proposal; the log's outcome wins)
    set_tier: str | None = None  # the tier the Agent hook set (log `set_model`), None: not set


@dataclass
class Facts:
    """What one scan keeps: counts and token sums, never text."""

    sessions: set[str] = field(default_factory=set)
    main_model: dict[str, str] = field(default_factory=dict)  # session -> its main loop's model
    prompts: dict[str, list[Prompt]] = field(default_factory=lambda: defaultdict(list))
    tokens: dict[tuple[str, str, str], Tokens] = field(default_factory=dict)  # (scope, model, day)
    agent_tokens: dict[str, dict[str, Tokens]] = field(default_factory=lambda: defaultdict(dict))
    spawns: list[SpawnFact] = field(default_factory=list)
    stats: Stats = field(default_factory=Stats)  # bad lines etc. (files are read in more than one pass)
    seen_records: set[str] = field(default_factory=set)  # uuids: a resumed session's copies count once
    files: int = 0
    bytes: int = 0
    seconds: float = 0.0


def _tokens(u: Any) -> Tokens:
    # records without the 5 m / 1 h split count their cache writes as 5 m (the default)
    split = u.cache_5m_input_tokens + u.cache_1h_input_tokens
    return Tokens(u.input_tokens, u.output_tokens,
                  u.cache_5m_input_tokens + max(0, u.cache_creation_input_tokens - split),
                  u.cache_1h_input_tokens, u.cache_read_input_tokens)


def _is_prompt(record: dict[str, Any]) -> bool:
    """A prompt the user typed (not a tool result, a task notification or a meta turn)."""
    if record.get("type") != "user" or record.get("isMeta") or record.get("isSidechain"):
        return False
    origin = record.get("origin")
    if isinstance(origin, dict) and origin.get("kind"):
        return False
    content = (record.get("message") or {}).get("content") if isinstance(record.get("message"), dict) else None
    if isinstance(content, list):
        texts = [c.get("text") for c in content if isinstance(c, dict) and c.get("type") == "text"]
        if len(texts) != len(content):
            return False  # tool results
        content = " ".join(t for t in texts if isinstance(t, str))
    if not isinstance(content, str):
        return False
    stripped = content.lstrip()
    return bool(stripped) and not stripped.startswith(("<task-notification", "<agent-message", "<command-",
                                                       "<local-command", "<system-reminder"))


def _hint_text(record: dict[str, Any]) -> str | None:
    """The routing hint a record carries (the route hook's additional context), if any."""
    found: list[str] = []

    def walk(value: Any, depth: int = 0) -> None:
        if depth > 6 or found:
            return
        if isinstance(value, str):
            if HINT_MARK in value:
                found.append(value[value.index(HINT_MARK):][:400])
        elif isinstance(value, dict):
            for v in value.values():
                walk(v, depth + 1)
        elif isinstance(value, list):
            for v in value[:50]:
                walk(v, depth + 1)
    if record.get("type") == "user" and _is_prompt(record):
        return None  # the user typing the words is not a hint
    walk(record.get("attachment") if "attachment" in record else record.get("message"))
    return found[0] if found else None


def tier_in_hint(text: str) -> str | None:
    if TIER_OF_HINT not in text:
        return None
    word = text.split(TIER_OF_HINT, 1)[1].split()[0].strip(".,;") if text.split(TIER_OF_HINT, 1)[1].split() else ""
    return word if word in RANK else None


def _prompts_of(tf: TranscriptFile, facts: Facts) -> None:
    last: Prompt | None = None
    for _, record in iter_records(tf.path, facts.stats, needles=_PROMPT_NEEDLES, seen=facts.seen_records):
        if _is_prompt(record):
            pid = record.get("promptId") if isinstance(record.get("promptId"), str) else None
            last = Prompt(tf.session_id, pid, str(record.get("timestamp") or ""))
            facts.prompts[tf.session_id].append(last)
            continue
        text = _hint_text(record)
        if text and last is not None and last.hint_tier is None:
            last.hint_tier, last.hint_chars = tier_in_hint(text), len(text)


def scan(root: Path, since: float | None, project: str | None, progress: Callable[[int], None] | None = None) -> Facts:
    """Read every transcript once for prompts, hints and usage; spawns come from the
    outcomes scan (the same reader)."""
    from .outcomes import collect, propose, tier_of
    from .transcripts import model_family as family

    started = time.perf_counter()
    facts = Facts()
    seen: set[str] = set()
    for tf in iter_files(root, since, project):
        facts.files += 1
        facts.bytes += tf.size
        facts.sessions.add(tf.session_id)
        if tf.agent_id is None:
            _prompts_of(tf, facts)
        for u in iter_usage(tf, facts.stats, seen):
            tokens = _tokens(u)
            scope = "subagent" if tf.agent_id else "main"
            key = (scope, u.model, (u.timestamp or "?")[:10])
            facts.tokens[key] = facts.tokens.get(key, Tokens()) + tokens
            if tf.agent_id:
                facts.agent_tokens[tf.agent_id][u.model] = facts.agent_tokens[tf.agent_id].get(u.model, Tokens()) + tokens
            elif tf.session_id not in facts.main_model:
                facts.main_model[tf.session_id] = u.model
        if progress:
            progress(tf.size)
    spawns = collect(root, since, project, facts.stats)
    outcome = {p.tool_use_id: p.outcome for p in propose(spawns)}
    for tool_use_id, spawn in spawns.items():
        agent = spawn.result.agent_id if spawn.result else None
        # the transcript keeps the Agent call as the model wrote it (before a hook's updatedInput)
        facts.spawns.append(SpawnFact(tool_use_id, spawn.call.session_id, spawn.call.timestamp, tier_of(spawn),
                                      agent, family(spawn.call.model or spawn.call.parent_model),
                                      outcome.get(tool_use_id)))
    facts.seconds = time.perf_counter() - started
    return facts


def join_log(facts: Facts, log: Path) -> int:
    """Rule tiers (and hints) from the routing log, by prompt id: what shadow mode compares;
    and the spawns the Agent hook set, by tool_use id (with the log's outcome, which wins).
    Returns the number of log entries joined."""
    by_id = {p.prompt_id: p for prompts in facts.prompts.values() for p in prompts if p.prompt_id}
    spawns = {s.tool_use_id: s for s in facts.spawns}
    joined = 0
    for _, entry in routing_log.entries(log, only='"source":"agent"'):
        spawn = spawns.get(entry["tool_use_id"]) if isinstance(entry.get("tool_use_id"), str) else None
        if spawn is None or entry.get("source") != "agent" or entry.get("set_model") not in RANK:
            continue
        joined += 1
        spawn.set_tier = entry["set_model"]
        if entry.get("outcome") in ("failed", "succeeded"):
            spawn.outcome = entry["outcome"]
    for _, entry in routing_log.entries(log, only='"source":"prompt"'):
        pid = entry.get("prompt_id")
        prompt = by_id.get(pid) if isinstance(pid, str) else None
        if prompt is None:
            continue
        joined += 1
        if entry.get("rule_tier") in RANK:
            prompt.rule_tier = entry["rule_tier"]
            if entry.get("hinted") is True and prompt.hint_tier is None:
                prompt.hint_tier = entry["rule_tier"]
    return joined


def approvals(log: Path, since: float | None = None) -> dict[str, Any]:
    """The permission prompts `[guard] approve` answered (routing log, source "approve"; metadata
    only): how many it answered `allow`, how many it left to the user, and which rules answered."""
    cutoff = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(since)) if since else ""
    answered, passed = 0, 0
    by_rule: defaultdict[str, int] = defaultdict(int)
    for _, entry in routing_log.entries(log, only='"source":"approve"'):
        if entry.get("source") != "approve" or not isinstance(entry.get("ts"), str) or entry["ts"] < cutoff:
            continue
        if entry.get("decision") == "allow":
            answered += 1
            for rule in entry.get("rules") or ():
                if isinstance(rule, str):
                    by_rule[rule] += 1
        else:
            passed += 1
    total = answered + passed
    return {"prompts": total, "answered": answered, "left_to_user": passed,
            "share_answered": _r(answered / total) if total else None,
            "by_rule": dict(sorted(by_rule.items(), key=lambda kv: (-kv[1], kv[0])))}


def _prompt_before(prompts: list[Prompt], ts: str) -> Prompt | None:
    """The last prompt of the session at or before `ts` (ISO timestamps sort as text)."""
    chosen = None
    for p in prompts:
        if p.ts and p.ts <= ts:
            chosen = p
    return chosen


def _r(x: float | None, digits: int = 4) -> float | None:
    return None if x is None else round(x, digits)


def summarize(facts: Facts, prices: PriceTable) -> dict[str, Any]:
    prompts = [p for ps in facts.prompts.values() for p in ps]
    hinted = [p for p in prompts if p.hint_tier]
    unpriced: set[str] = set()

    def cost_of(by_model: dict[str, Tokens]) -> float:
        total = 0.0
        for model, tokens in by_model.items():
            c = prices.cost(tokens, prices.rates(model))
            if c is None:
                unpriced.add(model)
            else:
                total += c
        return total

    # what each spawn cost, and what it would have cost on another tier (same tokens)
    spawn_rows = []
    for s in facts.spawns:
        used = facts.agent_tokens.get(s.agent_id or "", {})
        tokens = sum(used.values(), Tokens())
        prompt = _prompt_before(facts.prompts.get(s.session, []), s.ts)
        spawn_rows.append((s, tokens, cost_of(used), prompt))
    by_tier: dict[str, dict[str, Any]] = {}
    for scope in ("subagent", "main"):
        for (sc, model, _day), tokens in facts.tokens.items():
            if sc != scope:
                continue
            tier = model_family(model) or "?"
            row = by_tier.setdefault(f"{scope}:{tier}", {"tokens": Tokens(), "cost_usd": 0.0, "spawns": 0})
            row["tokens"] = row["tokens"] + tokens
            c = prices.cost(tokens, prices.rates(model))
            if c is None:
                unpriced.add(model)
            else:
                row["cost_usd"] += c
    for s, *_ in spawn_rows:
        if s.tier:
            by_tier.setdefault(f"subagent:{s.tier}", {"tokens": Tokens(), "cost_usd": 0.0, "spawns": 0})["spawns"] += 1

    set_rows = [r for r in spawn_rows if r[0].set_tier]
    spawn_rows_by_hint = [r for r in spawn_rows if not r[0].set_tier]  # a set spawn is measured below
    under_hint = [(s, t, c, p) for s, t, c, p in spawn_rows_by_hint if p and p.hint_tier and s.tier in RANK]
    followed = [r for r in under_hint if r[0].tier == r[3].hint_tier]
    upgraded = [r for r in under_hint if RANK[r[0].tier] > RANK[r[3].hint_tier]]
    downgraded = [r for r in under_hint if RANK[r[0].tier] < RANK[r[3].hint_tier]]
    free = [r for r in spawn_rows_by_hint if not (r[3] and r[3].hint_tier) and r[0].tier in RANK]
    mix_source = free or [r for r in spawn_rows_by_hint if r[0].tier in RANK]
    mix = {t: sum(1 for r in mix_source if r[0].tier == t) / len(mix_source) for t in TIERS} if mix_source else {}

    def at_mix(tokens: Tokens) -> float | None:
        costs = [(share, prices.cost(tokens, prices.tier_rates(t))) for t, share in mix.items() if share]
        parts = [(share, c) for share, c in costs if c is not None]
        if not parts or len(parts) < len(costs):
            return None
        return sum(share * c for share, c in parts)

    realised = sum((at_mix(t) or 0.0) - c for _, t, c, _ in followed) if mix else 0.0
    set_report = _set_spawns(set_rows, prices, at_mix)
    missed = sum(c - (prices.cost(t, prices.tier_rates(p.hint_tier)) or c) for _, t, c, p in upgraded)
    overhead = 0.0
    for session in facts.sessions:
        rates = prices.rates(facts.main_model.get(session))
        if rates:
            overhead += PLUGIN_CONTEXT_TOKENS * rates["cache_read"] / 1e6
    for p in hinted:
        rates = prices.rates(facts.main_model.get(p.session))
        if rates:
            overhead += max(1, p.hint_chars // 4) * rates["input"] / 1e6
    shadow = [(s, p) for s, _, _, p in spawn_rows if p and not p.hint_tier and p.rule_tier and s.tier in RANK]
    report = {
        "sessions": len(facts.sessions),
        "prompts": len(prompts),
        "hinted": len(hinted),
        "reach": _r(len(hinted) / len(prompts)) if prompts else None,
        "mode": "hints" if hinted else ("shadow" if any(p.rule_tier for p in prompts) else "none"),
        "spawns": len(spawn_rows),
        "spawns_under_hint": len(under_hint),
        "followed": len(followed),
        "upgraded": len(upgraded),
        "downgraded": len(downgraded),
        "adherence": _r(len(followed) / len(under_hint)) if under_hint else None,
        "shadow": {"spawns": len(shadow),
                   "rule_matches": sum(1 for s, p in shadow if s.tier == p.rule_tier),
                   "rule_cheaper": sum(1 for s, p in shadow if RANK[p.rule_tier] < RANK[s.tier]),
                   "rule_pricier": sum(1 for s, p in shadow if RANK[p.rule_tier] > RANK[s.tier])},
        "by_tier": {k: {"spawns": v["spawns"], "tokens": v["tokens"].as_dict(), "cost_usd": round(v["cost_usd"], 6)}
                    for k, v in sorted(by_tier.items(), key=lambda kv: (kv[0].startswith("main"), kv[0]))},
        "savings": {"usual_mix": {t: round(s, 4) for t, s in mix.items()}, "realised_usd": round(realised, 6),
                    "missed_usd": round(missed, 6), "hint_overhead_usd": round(overhead, 6),
                    "set_net_usd": set_report["net_usd"],
                    "net_usd": round(realised + set_report["net_usd"] - overhead, 6)},
        "set": set_report,
        "prices": {"date": prices.date, "source": prices.source, "file": prices.path, "note": prices.note},
        "unpriced_models": sorted(unpriced),
        "scan": {"files": facts.files, "bytes": facts.bytes, "seconds": round(facts.seconds, 2),
                 "skipped_lines": facts.stats.bad_lines, "truncated_lines": facts.stats.truncated},
        "daily": daily(facts, prices),
    }
    report["next"] = next_step(report)
    return report


def _set_spawns(rows: list[tuple[SpawnFact, Tokens, float, Prompt | None]], prices: PriceTable,
                at_mix: Callable[[Tokens], float | None]) -> dict[str, Any]:
    """The spawns the Agent hook set: did they run on that tier, fail, and save anything?"""
    succeeded = [r for r in rows if r[0].outcome == "succeeded"]
    failed = [r for r in rows if r[0].outcome == "failed"]
    realised, baselines = 0.0, {"asked_or_parent": 0, "usual_mix": 0, "unpriced": 0}
    for s, tokens, cost, _ in succeeded:
        anyway = prices.cost(tokens, prices.tier_rates(s.anyway)) if s.anyway in RANK else None
        kind = "asked_or_parent" if anyway is not None else "usual_mix"
        if anyway is None:
            anyway = at_mix(tokens)
        if anyway is None:
            baselines["unpriced"] += 1
            continue
        baselines[kind] += 1
        realised += anyway - cost
    lost = sum(cost for _, _, cost, _ in failed)
    return {"spawns": len(rows), "ran_as_set": sum(1 for r in rows if r[0].tier == r[0].set_tier),
            "by_tier": {t: n for t in TIERS if (n := sum(1 for r in rows if r[0].set_tier == t))},
            "succeeded": len(succeeded), "failed": len(failed),
            "failure_rate": _r(len(failed) / (len(failed) + len(succeeded))) if failed or succeeded else None,
            "realised_usd": round(realised, 6), "failed_cost_usd": round(lost, 6),
            "net_usd": round(realised - lost, 6), "baselines": baselines}


def daily(facts: Facts, prices: PriceTable) -> list[dict[str, Any]]:
    """Per day: subagent cost by tier, prompts, hinted prompts (the charts' series)."""
    days: dict[str, dict[str, Any]] = defaultdict(lambda: {"cost": {t: 0.0 for t in TIERS}, "prompts": 0, "hinted": 0})
    for (scope, model, day), tokens in facts.tokens.items():
        tier = model_family(model)
        if scope == "subagent" and tier in RANK:
            days[day]["cost"][tier] += prices.cost(tokens, prices.rates(model)) or 0.0
    for prompts in facts.prompts.values():
        for p in prompts:
            day = (p.ts or "?")[:10]
            days[day]["prompts"] += 1
            days[day]["hinted"] += bool(p.hint_tier)
    return [{"day": d, **v, "cost": {t: round(c, 6) for t, c in v["cost"].items()}} for d, v in sorted(days.items())]


def next_step(report: dict[str, Any]) -> str:
    """One suggestion drawn from the figures, for /system1:calibrate."""
    if not report["prompts"]:
        return "No prompts in this period: is Claude Code writing transcripts here (--projects)?"
    if report["mode"] == "none":
        return ("No routing decisions were logged: turn the log on for this repository ([routing] log_dirs, "
                "/system1:setup), then label some prompts with /system1:calibrate.")
    if report["mode"] == "shadow":
        return ("Hints are off (shadow mode): label 30 logged prompts with /system1:calibrate and run "
                "`system1 evaluate`; turn hints on when it says READY.")
    if report["reach"] is not None and report["reach"] < 0.3:
        share = 1 - report["reach"]
        return (f"Routing stays silent on {share:.0%} of prompts (a feature below its threshold): label 30 of them "
                f"with /system1:calibrate to fit the thresholds to your prompts.")
    if report["adherence"] is not None and report["adherence"] < 0.5:
        return ("Most spawns under a hint ran on another tier: check the rule against your outcomes "
                "(`system1 outcomes --apply`, then `system1 evaluate`).")
    return "Routing reaches and is followed: keep labelling doubtful spawns with /system1:calibrate now and then."
