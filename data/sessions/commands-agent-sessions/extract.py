"""Extract the shell commands coding agents ran from committed session logs (stdlib only).

Reads every file listed in sources.json from bare git snapshots (as `fetch` leaves them:
<mirror>/<owner>+<name>/repo) at the recorded commit, pulls out each shell tool call, drops
what is not a POSIX shell command, and writes examples.jsonl (one distinct command a line,
with its first source and the count `n` of exact repeats across all sources).

    python extract.py --mirror /work/.mirror            # writes examples.jsonl next to this file
    python extract.py --mirror /work/.mirror --scan owner+name ...   # discovery: candidate files, counts

Formats read (see README.md):
  * SpecStory markdown v2 (`<tool-use data-tool-type=... data-tool-name="Bash|Shell|run_terminal_cmd|
    run_terminal_command_v2|run_in_terminal|shell_command|exec_command|run_shell_command|...">`),
    whose command is in "Run command: ..." + a ```bash fence, an Input list "- command: `...`",
    a lone inline-code line, or a fenced block;
  * older SpecStory markdown ("Tool use: **run_terminal_cmd**" / "Tool use: **Bash**" then a fence);
  * Automaker agent-output.md ("🔧 Tool: Bash" then "Input: {json}");
  * aider chat histories: "> Running CMD" (a command the agent proposed and the user accepted);
  * Claude Code JSONL transcripts (tool_use blocks named Bash).
"""

from __future__ import annotations

import argparse
import html
import json
import re
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SHELL_TOOLS = {"bash", "shell", "run_terminal_cmd", "run_terminal_command", "run_terminal_command_v2",
               "run_in_terminal", "shell_command", "exec_command", "run_shell_command", "execute_command",
               "local_shell", "terminal", "execute_bash", "run_command"}
PER_REPO_CAP = 200  # distinct commands kept per repository (first seen), for breadth

TOOL_USE = re.compile(r'<tool-use data-tool-type="([^"]*)" data-tool-name="([^"]*)">(.*?)</tool-use>', re.S)
SUMMARY = re.compile(r"<summary>(.*?)</summary>", re.S)
FENCE = re.compile(r"^(`{3,}|~{3,})[ \t]*([\w+-]*)[^\n]*\n(.*?)^\1[ \t]*$", re.S | re.M)
OLD_TOOL = re.compile(r"^Tool use: \*\*(run_terminal_cmd|Bash|Shell|shell|run_in_terminal)\*\*[^\n]*\n", re.M)
AUTOMAKER = re.compile(r"^🔧 Tool: Bash\s*\nInput: (\{.*?\n\})", re.S | re.M)
AIDER_RUN = re.compile(r"^> Running (.+?) *$", re.M)
SHELL_LANGS = {"", "bash", "sh", "shell", "zsh", "console", "text"}


def _inline(text: str) -> str | None:
    """A line that is one inline code span: `cmd` or ``cmd``."""
    m = re.fullmatch(r"(`+) ?(.*?) ?\1", text.strip(), re.S)
    return m.group(2) if m else None


def _from_tool_use(name: str, body: str) -> str | None:
    body_wo = SUMMARY.sub("", body, count=1)
    summary = SUMMARY.search(body)
    # Copilot: "- command: `...`" in an Input list
    for line in body_wo.splitlines():
        if line.startswith("- command: "):
            return _inline(line[len("- command: "):])
    # Cursor: a fenced block right after the summary
    fence = FENCE.search(body_wo)
    head = body_wo[:fence.start()] if fence else body_wo
    # Claude Code / Codex: a lone inline-code line before any fence
    for line in head.splitlines():
        c = _inline(line) if line.strip().startswith("`") else None
        if c:
            return c
    if fence and fence.group(2).lower() in SHELL_LANGS - {"text"} and fence.start() < 400 + len(head) * 0:
        return fence.group(3).rstrip("\n")
    if summary and "Run command:" in summary.group(1):
        return html.unescape(summary.group(1).split("Run command:", 1)[1]).strip()
    return None


def from_specstory(text: str) -> list[tuple[str, str]]:
    out = []
    for kind, name, body in TOOL_USE.findall(text):
        if name.lower() in SHELL_TOOLS:
            cmd = _from_tool_use(name, body)
            if cmd:
                out.append((name, cmd))
    if out or "<tool-use " in text:
        return out
    for m in OLD_TOOL.finditer(text):  # older markdown: the next fence within a few lines
        rest = text[m.end():m.end() + 20000]
        f = FENCE.match(rest.lstrip("\n"))
        if f and f.group(2).lower() in SHELL_LANGS - {"text"}:
            out.append((m.group(1), f.group(3).rstrip("\n")))
    return out


def from_automaker(text: str) -> list[tuple[str, str]]:
    out = []
    for m in AUTOMAKER.finditer(text):
        try:
            cmd = json.loads(m.group(1)).get("command")
        except ValueError:
            continue
        if isinstance(cmd, str):
            out.append(("Bash", cmd))
    return out


def from_aider(text: str) -> list[tuple[str, str]]:
    # aider asks "Run shell command(s)? ..." and logs "> Running CMD" for each one it runs
    return [("aider-shell", m.group(1)) for m in AIDER_RUN.finditer(text)]


def from_jsonl(text: str) -> list[tuple[str, str]]:
    out = []
    for line in text.splitlines():
        if '"tool_use"' not in line:
            continue
        try:
            doc = json.loads(line)
        except ValueError:
            continue
        content = (doc.get("message") or {}).get("content") if isinstance(doc, dict) else None
        for block in content if isinstance(content, list) else []:
            if isinstance(block, dict) and block.get("type") == "tool_use" and str(block.get("name", "")).lower() in SHELL_TOOLS:
                cmd = (block.get("input") or {}).get("command")
                if isinstance(cmd, str):
                    out.append((block["name"], cmd))
    return out


def extract(path: str, text: str) -> list[tuple[str, str]]:
    if path.endswith(".jsonl"):
        return from_jsonl(text)
    if path.endswith(".aider.chat.history.md"):
        return from_aider(text)
    if "🔧 Tool: Bash" in text:
        return from_automaker(text)
    return from_specstory(text)


POWERSHELL = re.compile(r"\b(Get|Set|Select|Where|ForEach|Test|New|Remove|Copy|Move|Invoke|Write|Out|Format|Start|Stop)-[A-Z][a-zA-Z]+|\$env:|^\s*(dir|cls|type)\s|^\s*cmd /c", re.M)
CODEX_WRAP = re.compile(r"^(?:/bin/)?(?:ba|z)?sh -lc (.+)$", re.S)


def clean(cmd: str) -> str | None:
    cmd = cmd.strip()
    if not cmd or len(cmd) > 4000:
        return None
    if POWERSHELL.search(cmd):
        return None  # not a POSIX shell command (the guard judges Bash)
    return cmd


def git_show(mirror: Path, repo: str, commit: str, path: str) -> str:
    g = mirror / repo.replace("/", "+") / "repo"
    return subprocess.run(["git", "-C", str(g), "show", f"{commit}:{path}"], capture_output=True,
                          check=True).stdout.decode("utf-8", "replace")


def build(mirror: Path) -> list[dict]:
    sources = json.loads((HERE / "sources.json").read_text())
    rows: dict[str, dict] = {}
    for src in sources:
        kept = 0
        for f in src["files"]:
            text = git_show(mirror, src["repo"], f["commit"], f["path"])
            for tool, raw in extract(f["path"], text):
                cmd = clean(raw)
                if cmd is None:
                    continue
                if cmd in rows:
                    rows[cmd]["n"] += 1
                    continue
                if kept >= PER_REPO_CAP:
                    continue
                kept += 1
                rows[cmd] = {"command": cmd, "repo": src["repo"], "path": f["path"], "commit": f["commit"],
                             "tool": tool, "licence": src["licence"], "n": 1}
    return list(rows.values())


def scan(mirror: Path, names: list[str]) -> None:
    pat = re.compile(r"specstory/history/.*\.md$|\.aider\.chat\.history\.md$|\.jsonl$|agent-output\.md$")
    for name in names:
        g = mirror / name / "repo"
        log = subprocess.run(["git", "-C", str(g), "log", "--all", "--format=@%H", "--name-only"],
                             capture_output=True, text=True).stdout
        latest: dict[str, str] = {}
        commit = ""
        for line in log.splitlines():
            if line.startswith("@"):
                commit = line[1:]
            elif line and pat.search(line) and line not in latest:
                latest[line] = commit
        total = 0
        for path, c in latest.items():
            ok = subprocess.run(["git", "-C", str(g), "cat-file", "-e", f"{c}:{path}"], capture_output=True).returncode == 0
            ref = c if ok else c + "^"
            try:
                text = subprocess.run(["git", "-C", str(g), "show", f"{ref}:{path}"], capture_output=True,
                                      check=True).stdout.decode("utf-8", "replace")
            except subprocess.CalledProcessError:
                continue
            n = sum(clean(c2) is not None for _, c2 in extract(path, text))
            if n:
                total += n
                print(json.dumps({"repo": name.replace("+", "/", 1), "path": path, "commit": subprocess.run(
                    ["git", "-C", str(g), "rev-parse", ref], capture_output=True, text=True).stdout.strip(), "n": n}))
        print(f"# {name}: {total} commands in {len(latest)} candidate files", file=sys.stderr)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mirror", type=Path, default=Path("/work/.mirror"))
    ap.add_argument("--scan", nargs="*")
    ap.add_argument("--out", type=Path, default=HERE / "examples.jsonl")
    a = ap.parse_args()
    if a.scan is not None:
        scan(a.mirror, a.scan)
        return 0
    rows = build(a.mirror)
    from label import kind  # the hand-written rules (label.py beside this file)
    overrides = json.loads((HERE / "overrides.json").read_text()) if (HERE / "overrides.json").exists() else {}
    with a.out.open("w") as out:
        for r in rows:
            r["kind"] = overrides.get(r["command"], kind(r["command"]))
            out.write(json.dumps({k: r[k] for k in ("command", "repo", "path", "commit", "tool", "kind", "n", "licence")},
                                 ensure_ascii=False) + "\n")
    print(f"{len(rows)} distinct commands, {len({r['repo'] for r in rows})} repositories -> {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
