"""Collect subagent briefs (what an orchestrating agent hands to a subagent) from licence-checked
public repositories, label them `needed_edits`, and write examples.jsonl (stdlib only).

    python collect.py --mirror /work/.mirror            # writes examples.jsonl, prints counts
    python collect.py --mirror /work/.mirror --dump c.jsonl   # also every candidate, unlabelled

Kept apart from the routing heads' training data: nothing under data/heads reads this folder.

Sources (`sources.json`, key "collect"): repo, licence (checked at the same commit), the commit read,
and which readers apply:

- "automaker": Automaker run logs (`.automaker/features/*/agent-output.md`). Each tool call the
  orchestrating Claude Code agent made is printed as ``🔧 Tool: <name>`` then ``Input: {json}``; a
  ``Task`` / ``Agent`` call's input is the brief (`prompt`, `description`, `subagent_type`,
  `model`). kind "session". The subagent's own calls are not in the log, so labels are by reading.
- "template": orchestration prompts in command / skill / agent markdown that spell out a literal
  call ``Task(...)`` / ``Agent(...)`` with ``subagent_type`` and a quoted ``prompt``. kind
  "template". Only the files listed under "paths" are read.

Spawns whose sidechain (the subagent's own calls) is committed are read by extract.py into
outcome-examples.jsonl (label_source "outcome", by what the subagent did); this script appends them.

Labels: `labels.json` maps the first 16 hex digits of sha1(prompt) to true / false (needed_edits,
by reading the brief) or to a string (dropped as ambiguous: the reason). A candidate with no entry
is reported as unlabelled and left out. Per repository at most CAP briefs are kept, chosen by that
hash order (deterministic, spread over the repository's files); identical prompts are kept once.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import subprocess
import sys
from collections import Counter, defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
CAP = 25
SPAWN = re.compile(r"🔧 Tool: (Task|Agent)\r?\nInput: ")
QUOTED = re.compile(r'''\bprompt\W{0,2}\s*[=:]\s*(?:"((?:[^"\\]|\\.)*)"|'((?:[^'\\]|\\.)*)')''', re.I | re.S)
BLOCK = re.compile(r"^([ \t]*)(?:[-*][ \t]+)?prompt:[ \t]*[|>][-+]?[ \t]*\n", re.I | re.M)
STYPE = re.compile(r'''subagent_type\W{0,3}\s*[=:]\s*["'`]?([\w:.-]+)|(?:Task|Agent|Subagent)(?: tool)? \(([\w:.-]+)\):''', re.I)
TEMPLATE_GREP = r"subagent_type|(Task|Agent|Subagent)( tool)? \("
DESC = re.compile(r'''\bdescription\W{0,2}\s*[=:]\s*["']([^"'\n]*)["']''', re.I)
MODEL = re.compile(r'''\bmodel\W{0,2}\s*[=:]\s*["']([^"'\n]*)["']''', re.I)


def key(prompt: str) -> str:
    return hashlib.sha1(prompt.encode()).hexdigest()[:16]


def git(gd: Path, *args: str) -> str:
    return subprocess.run(["git", "--git-dir", str(gd), *args], capture_output=True, text=True,
                          check=False).stdout


def automaker(text: str):
    dec = json.JSONDecoder()
    for m in SPAWN.finditer(text):
        try:
            inp, _ = dec.raw_decode(text, m.end())
        except ValueError:
            continue
        if isinstance(inp, dict) and isinstance(inp.get("prompt"), str):
            yield {"prompt": inp["prompt"].strip(), "description": inp.get("description"),
                   "subagent_type": inp.get("subagent_type"), "model": inp.get("model")}


def _unq(s: str) -> str:
    return s.replace('\\"', '"').replace("\\'", "'").replace("\\n", "\n") if "\\" in s else s


def _near(rx: re.Pattern, text: str, lo: int, hi: int, span: int):
    """The match of rx nearest to text[lo:hi] within span characters (before or after), or None."""
    best = None
    for m in rx.finditer(text, max(0, lo - span), min(len(text), hi + span)):
        d = lo - m.end() if m.end() <= lo else (m.start() - hi if m.start() >= hi else 0)
        if d >= 0 and (best is None or d < best[0]):
            best = (d, m)
    return best and best[1]


def _prompts(text: str):
    for m in QUOTED.finditer(text):
        yield m.start(), m.end(), _unq(m.group(1) if m.group(1) is not None else m.group(2))
    for m in BLOCK.finditer(text):
        ind, body, pos = len(m.group(1).expandtabs()), [], m.end()
        for line in text[m.end():].split("\n"):
            if line.strip() and len(line) - len(line.lstrip()) <= ind:
                break
            body.append(line)
            pos += len(line) + 1
        lines = [l for l in body]
        cut = min((len(l) - len(l.lstrip()) for l in lines if l.strip()), default=0)
        yield m.start(), pos, "\n".join(l[cut:] for l in lines)


def template(text: str):
    """Literal briefs in orchestration text: a quoted or block `prompt` with a subagent type
    (`subagent_type=...` or `Task tool (type):`) within 1500 characters of it."""
    for lo, hi, prompt in _prompts(text):
        st = _near(STYPE, text, lo, hi, 1500)
        if not st or not prompt.strip():
            continue
        de, mo = _near(DESC, text, lo, hi, 400), _near(MODEL, text, lo, hi, 400)
        yield {"prompt": prompt.strip(), "description": de and de.group(1),
               "subagent_type": st.group(1) or st.group(2), "model": mo and mo.group(1)}


def build(mirror: Path, sources: list[dict]):
    cands = []
    for src in sources:
        gd = mirror / src["repo"].replace("/", "+") / "repo"
        commit = src["commit"]
        if src["reader"] == "automaker":
            paths = [l.split(":", 1)[1] for l in git(gd, "grep", "-l", "-E", "Tool: (Task|Agent)$", commit,
                                                    "--", ".automaker").splitlines()]
            read = automaker
        else:
            paths = src.get("paths") or [
                l.split(":", 1)[1] for l in git(gd, "grep", "-l", "-I", "-i", "-E", TEMPLATE_GREP, commit, "--",
                                                *src.get("under", ["*.md", "*.toml"])).splitlines()
                if "node_modules/" not in l]
            read = template
        for p in sorted(paths):
            text = git(gd, "show", f"{commit}:{p}")
            for b in read(text):
                if b["prompt"]:
                    cands.append({**b, "kind": "template" if read is template else "session",
                                  "repo": src["repo"], "path": p, "commit": commit, "licence": src["licence"]})
    return cands


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mirror", type=Path, default=Path("/work/.mirror"))
    ap.add_argument("--out", type=Path, default=HERE / "examples.jsonl")
    ap.add_argument("--dump", type=Path, help="also write every candidate (with its key), unlabelled")
    a = ap.parse_args()
    sources = json.loads((HERE / "sources.json").read_text())["collect"]
    labels = json.loads((HERE / "labels.json").read_text())
    cands = build(a.mirror, sources)
    seen, per_repo = set(), defaultdict(list)
    for c in cands:
        k = key(c["prompt"])
        if k in seen:
            continue
        seen.add(k)
        per_repo[c["repo"]].append({**c, "key": k})
    if a.dump:
        with a.dump.open("w") as fh:
            for rs in per_repo.values():
                for c in sorted(rs, key=lambda c: c["key"])[:CAP]:
                    fh.write(json.dumps(c, ensure_ascii=False) + "\n")
    rows, drops, unlabelled = [], Counter(), 0
    for repo in sorted(per_repo):
        for c in sorted(per_repo[repo], key=lambda c: c["key"])[:CAP]:
            lab = labels.get(c["key"])
            if lab is None:
                unlabelled += 1
            elif isinstance(lab, str):
                drops[lab] += 1
            else:
                k = c.pop("key")
                rows.append({"id": k, "prompt": c["prompt"], "description": c["description"],
                             "subagent_type": c["subagent_type"], "model": c["model"], "needed_edits": lab,
                             "kind": c["kind"], "label_source": "reader", "repo": c["repo"], "path": c["path"],
                             "commit": c["commit"], "licence": c["licence"]})
    outcome = HERE / "outcome-examples.jsonl"  # written by extract.py: spawns whose sidechain is committed
    if outcome.exists():
        for line in outcome.read_text().splitlines():
            r = json.loads(line)
            if key(r["prompt"]) in seen:
                continue
            seen.add(key(r["prompt"]))
            rows.append({"id": key(r["prompt"]), "prompt": r["prompt"], "description": r["description"],
                         "subagent_type": r["subagent_type"], "model": r["model"], "needed_edits": r["needed_edits"],
                         "kind": "session", "label_source": "outcome", "tools": r["tools"], "repo": r["repo"],
                         "path": r["path"], "commit": r["commit"], "licence": r["licence"]})
    with a.out.open("w") as fh:
        for r in rows:
            fh.write(json.dumps(r, ensure_ascii=False) + "\n")
    n_edit = sum(r["needed_edits"] for r in rows)
    print(f"{len(cands)} spawns read, {len(seen)} distinct; {len(rows)} briefs written "
          f"({len(rows) - n_edit} read-only, {n_edit} editing; "
          f"{sum(r['kind'] == 'session' for r in rows)} session, {sum(r['kind'] == 'template' for r in rows)} template) "
          f"from {len({r['repo'] for r in rows})} repositories; "
          f"{sum(r['label_source'] == 'outcome' for r in rows)} labelled by outcome; dropped {sum(drops.values())} {dict(drops)}; "
          f"unlabelled {unlabelled}")
    for repo, n in sorted(Counter(r["repo"] for r in rows).items()):
        print(f"  {repo}: {n}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
