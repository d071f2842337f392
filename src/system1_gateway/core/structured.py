"""Built-in questions whose evidence the gateway reads before any engine does.

The `destructive` built-in (either version: each is read under its own rules) asked of a
text state is a shell command: the core reads it in
parts (`shell/`), answers the parts the policy rules know, asks the chain about each other
part alone (the same built-in question, the part as the state, under the request's one
deadline), and combines (`shell/structure.py`). Every face gets this (hook, MCP, CLI, HTTP,
Pi gate, bulk), with any engine behind it. The request's other questions are asked of the
whole state in one more walk of the chain, as always.
"""

from __future__ import annotations

from typing import Any, Callable

from .. import bounded_json
from ..model import builtins
from ..model.requests import JudgeRequest
from .chain import NO_USAGE, Outcome

# {wording hash: version} of every version of the `destructive` built-in
DESTRUCTIVE_VERSIONS = {b.hash: b.version for b in (builtins.BUILTINS["destructive"], *builtins.EARLIER)
                        if b.name == "destructive"}
PART_QID = "destructive"


def warm() -> None:
    """Load the shell grammar and the rules now (a daemon's start), not on the first command."""
    from ..shell import structure

    structure.warm()


def shell_questions(request: JudgeRequest) -> list[str]:
    """Ids of the questions that are the `destructive` built-in about a shell command or a
    tool call (a text state: a command line, or a JSON tool call whose commands are read)."""
    if not isinstance(request.state, str):
        return []
    return [qid for qid, q in request.questions.items()
            if q.type == "noul" and q.wording_hash() in DESTRUCTIVE_VERSIONS]


def run(request: JudgeRequest, qids: list[str], walk: Callable[[JudgeRequest], Outcome],
        threshold: float) -> Outcome:
    """Answer `request` (its `qids` by parts); `walk` runs the chain on a request under the
    request's deadline. Errors as the chain reports them: a walk that fails fails the request,
    unless a rule already found a destructive part (then no engine answer could change it)."""
    from ..shell import structure

    versions = {DESTRUCTIVE_VERSIONS[request.questions[qid].wording_hash()] for qid in qids}
    if len(versions) > 1:  # both versions in one request (rare): each read under its own rules
        ordered = sorted(versions)
        older = [q for q in qids if DESTRUCTIVE_VERSIONS[request.questions[q].wording_hash()] == ordered[0]]
        rest = [q for q in qids if q not in older]
        done = run(request.model_copy(update={"questions": {q: request.questions[q] for q in request.questions
                                                            if q not in rest}}), older, walk, threshold)
        if done.error is not None:
            return done
        more = run(request.model_copy(update={"questions": {q: request.questions[q] for q in rest}}), rest, walk,
                   threshold)
        out = _merged(more if more.error is not None else None, [done, more])
        out.answers = {**(done.answers or {}), **(more.answers or {})}
        return out
    plan = _plan(request, versions.pop())
    others = {qid: q for qid, q in request.questions.items() if qid not in qids}
    walks: list[Outcome] = []
    if others:
        first = walk(request.model_copy(update={"questions": others}))
        walks.append(first)
        if first.error is not None:
            return _merged(first, walks)
    certain = structure.certain(plan)
    answers: dict[str, dict[str, Any]] = {}
    question = request.questions[qids[0]]
    if not certain:
        for text in plan.engine_texts:
            part = walk(request.model_copy(update={"state": text, "questions": {PART_QID: question}}))
            walks.append(part)
            if part.error is not None:
                return _merged(part, walks)
            answers[text] = part.answers[PART_QID]  # type: ignore[index]
    structure.apply(plan, answers)
    combined = structure.combine(plan, threshold)
    out = _merged(None, walks)
    out.answers = {**((walks[0].answers or {}) if others else {}), **{qid: dict(combined) for qid in qids}}
    if out.provider is None:  # every part was decided by the rules: no engine was asked
        out.provider, out.model = "rules", combined["model"]
    return out


def _plan(request: JudgeRequest, version: int) -> Any:
    from ..shell import structure

    document = _json_document(request.state)  # type: ignore[arg-type]
    return (structure.plan_tool_call(document, request.state, version) if document is not None  # type: ignore[arg-type]
            else structure.plan(request.state, version))  # type: ignore[arg-type]


def engine_requests(request: JudgeRequest) -> list[JudgeRequest]:
    """The requests the chain will be asked when answering `request` (what `run` walks): the
    request itself, or, for the `destructive` built-in about a command, each part the rules
    leave to the engine (and the request's other questions about the whole state). The batch
    path computes their embeddings ahead in one go (core.Gateway.prefetch)."""
    from ..shell import structure

    qids = shell_questions(request)
    if not qids:
        return [request]
    out = []
    others = {qid: q for qid, q in request.questions.items() if qid not in qids}
    if others:
        out.append(request.model_copy(update={"questions": others}))
    for version in sorted({DESTRUCTIVE_VERSIONS[request.questions[qid].wording_hash()] for qid in qids}):
        question = next(request.questions[q] for q in qids
                        if DESTRUCTIVE_VERSIONS[request.questions[q].wording_hash()] == version)
        plan = _plan(request, version)
        if not structure.certain(plan):
            out.extend(request.model_copy(update={"state": text, "questions": {PART_QID: question}})
                       for text in plan.engine_texts)
    return out


def _merged(failed: Outcome | None, walks: list[Outcome]) -> Outcome:
    """One outcome from several walks: every attempt, usage summed, the last engine's name."""
    out = Outcome()
    for w in walks:
        out.attempts.extend(w.attempts)
        if w.provider is not None:
            out.provider, out.model = w.provider, w.model
        out.usage = _add_usage(out.usage, w.usage)
    if failed is not None:
        out.error = failed.error
        out.answers = None
    return out


def _add_usage(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    merged = dict(NO_USAGE)
    for key in merged:
        x, y = a.get(key), b.get(key)
        merged[key] = None if x is None and y is None else (x or 0) + (y or 0)
    return merged


def _json_document(text: str) -> Any:
    """The JSON object or array the text is (a tool call), else None."""
    stripped = text.strip()
    if not stripped or stripped[0] not in "{[" or stripped[-1] not in "}]":
        return None
    try:
        return bounded_json.loads(stripped)
    except (ValueError, RecursionError):
        return None
