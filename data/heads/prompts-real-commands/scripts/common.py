"""What the three steps share: reading a fetched snapshot (`/work/.mirror/<owner>+<name>/repo`, made
by the `fetch` tool), its licence, which files are agent prompt templates, and a template's body."""

from __future__ import annotations

import json
import re
import subprocess
import tomllib
from pathlib import Path

MIRROR = Path("/work/.mirror")
HERE = Path(__file__).resolve().parent
EXAMPLES = HERE.parent / "examples.jsonl"
PER_REPO = 5  # at most this many templates per repository
MAX_CHARS = 6000  # a longer body is cut at the last line break before this
PERMISSIVE = {"MIT", "Apache-2.0", "BSD-3-Clause", "Unlicense"}

# Where agents read prompt templates from: slash commands and prompt files of the common agents,
# and commands/ folders of command-collection repositories.
TEMPLATE = re.compile(r"(\.claude/commands/.*\.md$|\.github/prompts/.*\.prompt\.md$|\.cursor/commands/.*\.md$"
                      r"|\.gemini/commands/.*\.toml$|\.opencode/commands?/.*\.md$|\.codex/prompts/.*\.md$"
                      r"|(^|/)commands/.*\.(md|toml)$|(^|/)prompts/.*\.prompt\.md$)")
# A collection repository (its name says command or prompt) keeps its templates as plain .md files.
NOT_A_TEMPLATE = re.compile(r"(?i)(^|/)(readme|license|contributing|changelog|claude|agents|code_of_conduct"
                            r"|security)\.md$")
# Text that looks like a secret or a person's address is never taken.
SECRET = re.compile(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[a-z]{2,}|ghp_[A-Za-z0-9]{20}|sk-[A-Za-z0-9]{20}"
                    r"|AKIA[0-9A-Z]{16}|xox[bp]-")


def snapshot(repo: str) -> Path:
    return MIRROR / repo.replace("/", "+", 1) / "repo"


def git(repo: str, *args: str) -> str:
    return subprocess.run(["git", "-C", str(snapshot(repo)), *args], capture_output=True, text=True).stdout


def licence(repo: str) -> str | None:
    """The SPDX id of the licence file at the snapshot's root; 'OTHER: …' for one not recognised."""
    for name in git(repo, "ls-tree", "--name-only", "HEAD").split("\n"):
        if re.match(r"(?i)^(licen[cs]e|copying|unlicense)(\.md|\.txt)?$", name):
            text = git(repo, "show", f"HEAD:{name}")[:3000]
            if "Apache License" in text and "Version 2.0" in text:
                return "Apache-2.0"
            if re.search(r"MIT License|Permission is hereby granted, free of charge", text):
                return "MIT"
            if "unencumbered software released into the public domain" in text:
                return "Unlicense"
            if re.search(r"BSD 3-Clause|Redistribution and use in source and binary forms", text):
                return "BSD-3-Clause" if "Neither the name" in text or "3-Clause" in text else "BSD-2-Clause"
            return "OTHER: " + text[:80].replace("\n", " ")
    return None


def templates(repo: str) -> list[str]:
    files = git(repo, "ls-tree", "-r", "--name-only", "HEAD").split("\n")
    found = [f for f in files if TEMPLATE.search(f) and "node_modules" not in f]
    if not found and re.search(r"(?i)command|prompt", repo):
        found = [f for f in files if f.endswith(".md") and not NOT_A_TEMPLATE.search(f) and not f.startswith(".github/")]
    # agent/skill/example folders hold other things than the prompts a user invokes
    return [f for f in found if not re.search(r"(?i)(^|/)(agents?|skills?|templates?|examples?|tests?|fixtures?)/", f)
            or "/commands/" in f]


def body(path: str, text: str) -> str:
    """What the agent receives: a TOML command's `prompt`, or a Markdown file without its front matter,
    cut at MAX_CHARS."""
    if path.endswith(".toml"):
        try:
            text = str(tomllib.loads(text).get("prompt", ""))
        except tomllib.TOMLDecodeError:
            return ""
    elif text.startswith("---"):
        match = re.match(r"^---\s*\n.*?\n---\s*\n", text, re.S)
        if match:
            text = text[match.end():]
    text = text.strip("\n").strip()
    if len(text) > MAX_CHARS:
        cut = text[:MAX_CHARS]
        end = cut.rfind("\n")
        text = cut[:end] if end > 0 else cut
    return text


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def write_jsonl(path: Path, rows: list[dict]) -> None:
    path.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8")
