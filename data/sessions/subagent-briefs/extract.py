"""Subagent briefs from committed agent sessions, labelled `needed_edits` by what the subagent did
(stdlib only). Kept apart from the routing heads' training data: nothing under data/heads reads it.

    python extract.py --mirror /work/.mirror     # writes outcome-examples.jsonl, prints what it found

A brief is the input of a subagent spawn: a Claude Code `Task` / `Agent` tool_use (`prompt`,
`description`, `subagent_type`, `model`). Its label needs the subagent's own tool calls, its
*sidechain*: the `isSidechain: true` lines of the same transcript, or an `agent-<id>.jsonl` file
(beside the transcript or under `<session>/subagents/`). A sidechain is matched to its spawn by its
first user message, which is the brief's prompt. `needed_edits` is true when the sidechain made any
file edit/write or state-changing shell command (the rules of
data/heads/prompts-real-outcomes/scripts/extract.py), false when every call only read. A spawn
whose sidechain is not in the repository is dropped, never guessed; so is one with a tool of
unknown effect and no edit.

Files read: every session file of the repositories in `sources.json` (the same snapshot and
commit as data/heads/prompts-real-outcomes/sources.json), plus any `.jsonl` that holds `tool_use`.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
_spec = importlib.util.spec_from_file_location(
    "outcomes_extract", ROOT / "data" / "heads" / "prompts-real-outcomes" / "scripts" / "extract.py")
outcomes = importlib.util.module_from_spec(_spec)
sys.modules["outcomes_extract"] = outcomes
_spec.loader.exec_module(outcomes)

SPAWN_TOOLS = {"task", "agent"}
SPEC_SPAWN = re.compile(r'<tool-use data-tool-type="[^"]*" data-tool-name="(?:Task|Agent)">', re.I)


def _lines(text: str) -> list[dict]:
    out = []
    for line in text.splitlines():
        try:
            d = json.loads(line)
        except ValueError:
            continue
        if isinstance(d, dict):
            out.append(d)
    return out


def _first_user_text(lines: list[dict]) -> str | None:
    for d in lines:
        if d.get("type") == "user":
            t = outcomes._text_of((d.get("message") or {}).get("content"))
            if t:
                return t.strip()
    return None


def _calls(lines: list[dict]) -> list[tuple[str, str]]:
    out = []
    for d in lines:
        if d.get("type") != "assistant":
            continue
        for b in (d.get("message") or {}).get("content") or []:
            if isinstance(b, dict) and b.get("type") == "tool_use":
                cmd = (b.get("input") or {}).get("command")
                name = b.get("name", "")
                out.append((name, outcomes.tool_outcome(name, cmd if isinstance(cmd, str) else None)))
    return out


def spawns(lines: list[dict]) -> list[dict]:
    out = []
    for d in lines:
        if d.get("type") != "assistant" or d.get("isSidechain"):
            continue
        for b in (d.get("message") or {}).get("content") or []:
            if isinstance(b, dict) and b.get("type") == "tool_use" and str(b.get("name", "")).lower() in SPAWN_TOOLS:
                inp = b.get("input") or {}
                if isinstance(inp.get("prompt"), str):
                    out.append({k: inp.get(k) for k in ("prompt", "description", "subagent_type", "model")})
    return out


def sidechains(lines: list[dict], agent_files: list[list[dict]]) -> dict[str, list[tuple[str, str]]]:
    """The sidechains by their first user message (the brief): in-file ones grouped by agentId (or
    as one run of consecutive sidechain lines when there is none), and agent-*.jsonl files."""
    groups: dict[str, list[dict]] = {}
    run = 0
    prev_side = False
    for d in lines:
        side = bool(d.get("isSidechain"))
        if side:
            if not prev_side:
                run += 1
            groups.setdefault(d.get("agentId") or f"run{run}", []).append(d)
        prev_side = side
    out = {}
    for g in [*groups.values(), *agent_files]:
        brief = _first_user_text(g)
        if brief:
            out[outcomes._norm(brief)] = _calls(g)
    return out


def git(g: Path, *args: str) -> str:
    return subprocess.run(["git", "--git-dir", str(g), *args], capture_output=True).stdout.decode("utf-8", "replace")


def build(mirror: Path) -> tuple[list[dict], Counter]:
    sources = json.loads((HERE / "sources.json").read_text())
    if isinstance(sources, dict):  # {"outcome_search": [...], "collect": [...]}: this script reads the first
        sources = sources["outcome_search"]
    seen: Counter = Counter()
    rows = []
    for src in sources:
        g = mirror / src["repo"].replace("/", "+") / "repo"
        texts: dict[str, str] = {}
        where: dict[str, str] = {}
        for commit in src["commits"]:  # the newest snapshot and each commit a session file was read at
            for p in git(g, "ls-tree", "-r", "--name-only", commit).splitlines():
                if p not in texts and (p.endswith(".jsonl") or re.search(r"specstory/history/.*\.md$", p)):
                    texts[p], where[p] = git(g, "show", f"{commit}:{p}"), commit
        for p, text in texts.items():
            commit = where[p]
            if p.endswith(".md"):
                seen["specstory_spawns_without_prompt_or_sidechain"] += len(SPEC_SPAWN.findall(text))
                continue
            if '"tool_use"' not in text:
                continue
            lines = _lines(text)
            found = spawns(lines)
            if not found:
                continue
            seen["jsonl_spawns"] += len(found)
            base = p.rsplit("/", 1)[0] if "/" in p else ""
            stem = p.rsplit("/", 1)[-1][:-len(".jsonl")]
            agent_files = [_lines(t) for q, t in texts.items() if q.endswith(".jsonl") and re.search(r"(^|/)agent-[^/]+\.jsonl$", q)
                           and (q.startswith(base + "/") or not base) and (f"/{stem}/subagents/" in "/" + q or q.rsplit("/", 1)[0] == base)]
            chains = sidechains(lines, agent_files)
            for s in found:
                calls = chains.get(outcomes._norm(s["prompt"]))
                if calls is None:
                    seen["dropped_no_sidechain"] += 1
                    continue
                kinds = {k for _, k in calls}
                label = True if "state" in kinds else (None if "unknown" in kinds else False)
                if label is None:
                    seen["dropped_unknown_tool"] += 1
                    continue
                rows.append({**s, "needed_edits": label, "tools": sorted({n for n, _ in calls}), "repo": src["repo"],
                             "path": p, "commit": commit, "licence": src["licence"]})
    return rows, seen


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mirror", type=Path, default=Path("/work/.mirror"))
    ap.add_argument("--out", type=Path, default=HERE / "outcome-examples.jsonl",
                    help="outcome-labelled briefs; collect.py merges this file into examples.jsonl")
    a = ap.parse_args()
    rows, seen = build(a.mirror)
    with a.out.open("w") as fh:
        for r in rows:
            fh.write(json.dumps(r, ensure_ascii=False) + "\n")
    print(f"{len(rows)} briefs ({sum(r['needed_edits'] for r in rows)} needed edits) from "
          f"{len({r['repo'] for r in rows})} repositories; seen {dict(seen)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
