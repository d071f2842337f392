"""The `destructive` built-in, asked of a shell command: read it in parts, judge each, combine.

`plan(command)` reads the command (`read.py`) and decides what the rules can (`policy.py`);
`Plan.engine_texts` are the parts left for the engine, each asked as the same built-in
question about that part alone. `combine` makes the command's answer from the parts':

* the most destructive part decides (the maximum of the parts' p(destructive)): a harmless
  part never dilutes a destructive one, so `git status && rm -rf ~` is as destructive as
  `rm -rf ~`. (Noisy-or would turn many mildly unsure harmless parts into a false alarm.)
* *unsure is not safe*: an opaque part, a reading past its bounds, or an engine that abstains
  on a part makes the answer abstained (`abstain_reason` "opaque" or "engine") unless a rule
  already found a destructive part;
* a rule's answer is deterministic (p 1 or 0, `model` "rule:<id>"); the rationale names the
  deciding part (`part 3 of 3: rm -rf ~`) and nothing else of the evidence.

A command whose parse had errors is also judged whole, as one more part (what the engine saw
before this step), so a parse failure never makes an answer less destructive.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from .inline import scan as inline_scan
from .policy import CURRENT, Verdict, decide
from .read import Part, Reading, read, shorten

MAX_ENGINE_PARTS = 32  # distinct parts asked of the engine; beyond, the answer is unsure
MAX_SHOWN = 160  # characters of the deciding part quoted in the rationale


@dataclass
class Judged:
    index: int  # 1-based, in reading order
    part: Part | None  # None: the whole command (a broken parse)
    text: str
    verdict: Verdict | None = None  # a rule's answer, or None
    p: float | None = None  # p(destructive) once known
    unsure: str | None = None  # why this part cannot be judged
    model: str | None = None
    calibrated: bool = False


@dataclass
class Plan:
    command: str
    reading: Reading
    parts: list[Judged] = field(default_factory=list)
    unsure: list[str] = field(default_factory=list)

    @property
    def engine_texts(self) -> list[str]:
        """The distinct part texts the engine must judge, in order (at most MAX_ENGINE_PARTS)."""
        seen: list[str] = []
        for judged in self.parts:
            if judged.p is None and judged.unsure is None and judged.text not in seen:
                seen.append(judged.text)
        return seen[:MAX_ENGINE_PARTS]


def warm() -> None:
    """Load the shell grammar and the rules now, not on the first command (≈ 15-20 ms after its imports)."""
    from .policy import policy

    read("true")
    policy()


def certain(plan: Plan) -> bool:
    """A rule found a destructive part: no engine answer could change the command's answer."""
    return any(j.verdict is not None and j.verdict.destructive for j in plan.parts)


def ruled(command: str, threshold: float) -> dict[str, Any] | None:
    """The answer the core gives a shell command the rules decide alone (every part ruled, or
    a part ruled destructive: core/structured.py `run` with no engine walk), computed with no
    engine and no request; None when a part needs the engine or the text may be a JSON tool
    call (judged whole by the engine as well). For a caller that has the rules loaded and
    would rather not ask the daemon: the guard in the plugin's hook server."""
    stripped = command.strip()
    if not stripped or stripped[:1] in ("{", "[") and stripped[-1:] in ("}", "]"):
        return None
    judged = plan(command)
    if judged.engine_texts and not certain(judged):
        return None
    apply(judged, {})
    return combine(judged, threshold)


def plan(command: str, version: int = CURRENT) -> Plan:
    """The command read in parts, each decided by the rules of the built-in's `version` where they can."""
    reading = read(command)
    out = Plan(command=command, reading=reading, unsure=list(reading.unsure))
    for i, part in enumerate(reading.parts, 1):
        judged = Judged(index=i, part=part, text=part.text)
        if part.opaque:
            judged.unsure = f"opaque: {part.opaque}"
        else:
            verdict = decide(part, version)
            if verdict.shown:  # a safe rule's shape doubted for an assignment: the engine sees it
                judged.text = verdict.shown
            if verdict.destructive is not None:
                judged.verdict = verdict
                judged.p = 1.0 if verdict.destructive else 0.0
                judged.model = f"rule:{verdict.rule}"
        out.parts.append(judged)
    if not reading.parts and not reading.broken and not reading.unsure and reading.assigned and not any(
            RUNS_LATER.match(name) for name in reading.assigned):
        # `export NODE_ENV=production`, `X=1`: an assignment runs nothing (its substitutions would
        # be parts); a later part of the same command that it can change is `Part.shadowed`
        out.parts.append(Judged(index=1, part=None, text=command.strip()[:20_000], p=0.0, model="rule:assignment",
                                verdict=Verdict(False, "assignment", "sets shell variables and runs nothing")))
        return out
    if reading.broken or not reading.parts:
        # what the grammar could not read is judged as written, whole
        for text in reading.unread or [command.strip()]:
            if text:
                out.parts.append(Judged(index=len(out.parts) + 1, part=None, text=text[:20_000]))
    asked = out.engine_texts
    for judged in out.parts:
        if judged.p is None and judged.unsure is None and judged.text not in asked:
            judged.unsure = f"more than {MAX_ENGINE_PARTS} parts need the engine"
    return out


# Variables that change what later commands run or read as code, even in later commands of a
# shell that keeps them (`export PATH=…`, `export BASH_ENV=…`, `PROMPT_COMMAND=…`): an
# assignment-only command setting one is left to the engine.
RUNS_LATER = re.compile(
    r"^(PATH|LD_\w+|DYLD_\w+|BASH_ENV|ENV|PROMPT_COMMAND|PS[0-4]|SHELLOPTS|BASHOPTS|GLOBIGNORE|CDPATH|HOME|SHELL"
    r"|BASH_\w+|HISTFILE|HISTCONTROL|TMOUT|\w*_COMMAND|GIT_\w+|\w*PAGER|\w*EDITOR|VISUAL|BROWSER|LESS\w*"
    r"|PYTHON\w+|NODE_(OPTIONS|PATH|REPL_EXTERNAL_MODULE)|PERL\w*|RUBY\w*|GEM_\w+|BUNDLE_\w+|JAVA_TOOL_OPTIONS|_JAVA_OPTIONS|JDK_JAVA_OPTIONS"
    r"|\w*_OPTS|\w*_OPTIONS|\w*FLAGS|KUBECONFIG|DOCKER_\w+|(?i:npm_config_\w+)|\w*HOOK\w*|TMPDIR|XDG_\w+|ZDOTDIR"
    r"|\w*_HOME|\w*_PATH|\w*_PRELOAD|\w*_LIBRARY\w*|\w*_CONFIG|\w*_CONFIG_\w+|SSH_\w+|GNUPGHOME|IFS)$")

COMMAND_KEYS = frozenset({"command", "cmd", "script", "shell", "bash", "commands", "run"})
SQL_KEYS = frozenset({"sql", "query", "statement"})


def plan_tool_call(document: Any, text: str, version: int = CURRENT) -> Plan:
    """A tool call given as JSON (`{"tool": "bash", "command": "rm -rf dist"}`): its command
    strings are read as shell commands and its SQL by the SQL rules, and the whole call is
    judged by the engine too, so it is never read as less destructive than that."""
    commands: list[str] = []
    sqls: list[str] = []
    _collect(document, commands, sqls, 0)
    out = plan("\n".join(commands), version) if commands else Plan(command=text, reading=Reading())
    out.parts = [j for j in out.parts if j.part is not None or commands]  # drop the empty command's raw part
    for sql in sqls:  # only what the SQL rules find: the whole call below is what the engine judges
        found = inline_scan("sql", sql)
        if found.findings:
            rule, why = found.findings[0]
            out.parts.append(Judged(index=len(out.parts) + 1, part=None, text=sql[:20_000], verdict=Verdict(True, rule, why),
                                    p=1.0, model=f"rule:{rule}"))
    out.parts.append(Judged(index=len(out.parts) + 1, part=None, text=text.strip()[:20_000]))
    return out


def _collect(node: Any, commands: list[str], sqls: list[str], depth: int, key: str = "") -> None:
    if depth > 20 or len(commands) + len(sqls) > 64:
        return
    if isinstance(node, dict):
        for k, v in node.items():
            _collect(v, commands, sqls, depth + 1, str(k).lower())
    elif isinstance(node, list):
        if key in COMMAND_KEYS | {"args", "argv"} and node and all(isinstance(v, str) for v in node):
            import shlex

            commands.append(" ".join(shlex.quote(v) for v in node))
        else:
            for v in node:
                _collect(v, commands, sqls, depth + 1, key)
    elif isinstance(node, str):
        stripped = node.strip()
        if stripped[:1] in "{[" and key in ("arguments", "input", "parameters", "params"):
            try:
                import json

                _collect(json.loads(stripped), commands, sqls, depth + 1, key)
                return
            except (ValueError, RecursionError):
                pass
        if key in COMMAND_KEYS:
            commands.append(node)
        elif key in SQL_KEYS:
            sqls.append(node)


def apply(plan: Plan, answers: dict[str, dict[str, Any]]) -> None:
    """Give each engine-judged part its answer (`answers`: part text → the engine's final answer)."""
    for judged in plan.parts:
        if judged.p is not None or judged.unsure is not None:
            continue
        answer = answers.get(judged.text)
        if answer is None or answer.get("type") != "noul":
            judged.unsure = "the engine gave no answer for this part"
            continue
        judged.p = float(answer["p_true"])
        judged.model = answer.get("model")
        judged.calibrated = bool(answer.get("calibrated"))
        if answer.get("abstained") and answer.get("abstain_reason") in ("engine", "refused"):
            judged.unsure = "the engine abstained: " + (answer.get("rationale") or "no reason given")[:200]


def combine(plan: Plan, threshold: float) -> dict[str, Any]:
    """The command's answer, in the canonical noul shape (answers.finalize's output)."""
    known = [j for j in plan.parts if j.p is not None]
    unsure = [j for j in plan.parts if j.unsure is not None]
    certain = [j for j in known if j.verdict is not None and j.verdict.destructive]
    deciding = max(known, key=lambda j: (j.p, j.verdict is not None), default=None)
    if certain:
        deciding = certain[0]
    p = deciding.p if deciding is not None and deciding.p is not None else 0.5  # `known` parts all have a p
    reasons = [j.unsure for j in unsure if j.unsure] + plan.unsure
    shown = deciding if deciding is not None and (certain or not reasons) else (unsure[0] if unsure else deciding)
    count = len(plan.parts)
    abstain_reason: str | None
    if reasons and not certain:
        reason = "opaque" if any(r.startswith("opaque") for r in reasons) else (
            "engine" if any(r.startswith("the engine") for r in reasons) else "bounds")
        p = max(p, 0.5)
        confidence = max(p, 1 - p)
        abstained, abstain_reason = True, reason
        why = "; ".join(dict.fromkeys(reasons))
    else:
        confidence = max(p, 1 - p)
        abstained = confidence < threshold
        abstain_reason = "below_threshold" if abstained else None
        why = _why(deciding)
    described = shown or deciding
    rationale = (f"part {shown.index} of {count}: {shorten(shown.text, MAX_SHOWN)}: {why}" if shown is not None
                 else f"no part could be read: {why}")
    return {
        "type": "noul", "p_true": round(p, 6), "probabilities": {"true": round(p, 6), "false": round(1 - p, 6)},
        "confidence": round(confidence, 6), "engine_confidence": None, "abstained": abstained,
        "abstain_reason": abstain_reason, "calibrated": bool(deciding and deciding.calibrated and not certain),
        "calibration": None, "model": described.model if described is not None else None,
        "rationale": rationale[:2000],
        "part": None if shown is None else {
            "index": shown.index, "of": count, "text": shorten(shown.text, MAX_SHOWN),
            "rule": shown.verdict.rule if shown.verdict is not None else None,
            "destructive": None if shown.p is None or shown.unsure else shown.p >= 0.5,
            "why": shorten(why, 300)},
    }


def _why(judged: Judged | None) -> str:
    if judged is None:
        return "nothing to judge"
    if judged.verdict is not None:
        return f"rule {judged.verdict.rule}: {judged.verdict.why}"
    return f"p(destructive) = {judged.p:.2f} from {judged.model or 'the engine'}"
