"""Step 3: examples.jsonl from labels.tsv, each template's text read at its pinned commit.

    python 3_build.py [--check]

labels.tsv holds one labelled template per line: repo, path, commit, licence, the four labels (T/F),
`second_pass` (T when a second reader re-read it) and `changed` (the labels that reader changed).
A template whose snapshot is under /work/.mirror is read again from it; one whose snapshot is not
keeps the text examples.jsonl already holds (the record of what was read at that commit). With
--check nothing is written: it exits 1 if a re-read text differs from the one in examples.jsonl.
"""

from __future__ import annotations

import argparse
import csv
from collections import Counter

from common import EXAMPLES, HERE, PER_REPO, PERMISSIVE, body, git, read_jsonl, snapshot, write_jsonl

LABELS = HERE / "labels.tsv"
FIELDS = ["repo", "path", "commit", "licence", "read_only", "design", "review", "specified", "second_pass", "changed"]
TASKS = ["read_only", "design", "review", "specified"]


def read_labels() -> list[dict]:
    with LABELS.open(encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    for n, row in enumerate(rows, 2):
        bad = [t for t in TASKS if row[t] not in ("T", "F")] + [k for k in ("repo", "path") if not row[k]]
        if bad or len(row["commit"]) != 40 or row["licence"] not in PERMISSIVE:
            raise SystemExit(f"{LABELS.name}:{n}: bad {', '.join(bad) or 'commit or licence'}")
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args()
    kept = {(row["repo"], row["path"]): row["state"] for row in read_jsonl(EXAMPLES)} if EXAMPLES.is_file() else {}
    out, per_repo, texts, reread, differ = [], Counter(), set(), 0, []
    for label in read_labels():
        where = (label["repo"], label["path"])
        if snapshot(label["repo"]).is_dir():
            text = body(label["path"], git(label["repo"], "show", f"{label['commit']}:{label['path']}"))
            reread += 1
            if where in kept and kept[where] != text:
                differ.append(where)
        elif where in kept:
            text = kept[where]
        else:
            raise SystemExit(f"{where}: no snapshot and no text yet; fetch {label['repo']} first")
        per_repo[label["repo"]] += 1
        if per_repo[label["repo"]] > PER_REPO or text in texts or not 0 < len(text) <= 6000:
            raise SystemExit(f"{where}: over {PER_REPO} per repository, a duplicate text, or an empty one")
        texts.add(text)
        row = {"state": text, **{t: label[t] == "T" for t in TASKS},
               **{k: label[k] for k in ("repo", "path", "commit", "licence")}}
        if label["second_pass"] == "T":
            row["second_pass"] = True
        if label["changed"]:
            row["changed"] = label["changed"].split(",")
        out.append(row)
    print(f"{len(out)} rows from {len(per_repo)} repositories; {reread} re-read from snapshots, "
          f"{len(out) - reread} kept; {len(differ)} re-read texts differ from examples.jsonl")
    for where in differ:
        print("  differs:", *where)
    if args.check:
        return 1 if differ else 0
    write_jsonl(EXAMPLES, out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
