"""Step 2: up to 5 templates per permissively licensed repository, to be labelled by hand.

    python 2_candidates.py [--scan /tmp/prompts-real-commands/scan.json]
                           [--out /tmp/prompts-real-commands/candidates.jsonl]

Per repository, templates whose file names name different tasks come first (commit, review, plan,
refactor, release, …), then any other; a body under 40 characters, one that looks like it holds a
secret or an address, one mostly not in English, or one already in examples.jsonl (or an earlier
candidate) is skipped. Label a candidate by adding its repo, path and four labels to labels.tsv
(LABELLING.md), then run step 3.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
from pathlib import Path

from common import EXAMPLES, PER_REPO, PERMISSIVE, SECRET, body, git, read_jsonl, write_jsonl

TASK_WORDS = ["commit", "review", "pr", "explain", "plan", "design", "architect", "refactor", "test", "fix", "bug",
              "debug", "release", "deploy", "doc", "changelog", "security", "audit", "optimi", "perf", "spec", "issue",
              "clean", "migrat", "todo", "onboard", "analy"]


def key(text: str) -> str:
    """Two bodies that differ only in punctuation, spacing or case are one."""
    return hashlib.md5(re.sub(r"\W+", "", text.lower())[:400].encode()).hexdigest()


def pick(repo: str, info: dict, seen: set[str]) -> list[dict]:
    items = []
    for path in info["files"]:
        text = body(path, git(repo, "show", f"{info['commit']}:{path}"))
        if len(text) < 40 or SECRET.search(text) or key(text) in seen:
            continue
        if sum(ch > "\x7f" for ch in text) / len(text) > 0.05:
            continue
        name = path.rsplit("/", 1)[-1].lower()
        items.append({"repo": repo, "path": path, "commit": info["commit"], "licence": info["licence"], "state": text,
                      "task": next((w for w in TASK_WORDS if w in name), None)})
    items.sort(key=lambda item: item["path"])
    chosen, tasks = [], set()
    for item in items:  # different tasks first
        if item["task"] and item["task"] not in tasks and len(chosen) < PER_REPO:
            chosen.append(item)
            tasks.add(item["task"])
    chosen += [item for item in items if item not in chosen][:PER_REPO - len(chosen)]
    for item in chosen:
        seen.add(key(item["state"]))
        del item["task"]
    return chosen


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--scan", type=Path, default=Path("/tmp/prompts-real-commands/scan.json"))
    ap.add_argument("--out", type=Path, default=Path("/tmp/prompts-real-commands/candidates.jsonl"))
    args = ap.parse_args()
    seen = {key(row["state"]) for row in read_jsonl(EXAMPLES)}
    labelled = {(row["repo"], row["path"]) for row in read_jsonl(EXAMPLES)}
    out = []
    for repo, info in json.loads(args.scan.read_text()).items():
        if info["licence"] not in PERMISSIVE:
            continue
        out += [c for c in pick(repo, info, seen) if (c["repo"], c["path"]) not in labelled]
    write_jsonl(args.out, out)
    print(f"{len(out)} candidates from {len({c['repo'] for c in out})} repositories -> {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
