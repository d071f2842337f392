"""Step 1: for each fetched snapshot, its HEAD commit, its licence and its prompt templates.

    python 1_scan.py OWNER/NAME ... [--out /tmp/prompts-real-commands/scan.json]

Fetch the candidate repositories first (the `fetch` tool puts them under /work/.mirror/). Repositories
already in scan.json are kept; a missing snapshot is reported and skipped.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from common import git, licence, snapshot, templates


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("repos", nargs="+")
    ap.add_argument("--out", type=Path, default=Path("/tmp/prompts-real-commands/scan.json"))
    args = ap.parse_args()
    scan = json.loads(args.out.read_text()) if args.out.is_file() else {}
    for repo in args.repos:
        if not snapshot(repo).is_dir():
            print(f"{repo}: no snapshot under /work/.mirror (fetch it first)")
            continue
        scan[repo] = {"commit": git(repo, "rev-parse", "HEAD").strip(), "licence": licence(repo),
                      "files": templates(repo)}
        print(f"{repo:45s} {str(scan[repo]['licence'])[:40]:40s} {len(scan[repo]['files'])} templates")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(scan, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
