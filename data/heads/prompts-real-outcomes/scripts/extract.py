"""Label real user prompts `read_only` by what the agent did next (stdlib only).

Reads every session file listed in ../sources.json from bare git snapshots (as `fetch` leaves
them: <mirror>/<owner>+<name>/repo) at the recorded commit, splits it into user turns and the
agent's turn that follows each one (up to the next user prompt), and labels the prompt:

  read_only = false  the agent edited, wrote, created or deleted a file, or ran a shell command
                     that changes state (see `shell_outcome`), before the next user prompt;
  read_only = true   the agent's turn is recorded, and every tool call in it only read (or it
                     made none) — only in a format that records edits;
  (dropped)          a tool whose effect is unknown (an MCP tool, a subagent, a command we cannot
                     classify) and no edit, or a turn in a mode that cannot edit (Cursor Ask/Plan,
                     aider ask), or an empty / missing agent turn.

  specified = false  only when the agent's turn called a clarifying-question tool
                     (AskUserQuestion, ask_followup_question) — otherwise left out.

Then drops bare confirmations whose outcome is not an edit, prompts under 3 words or over 4,000
characters, harness messages, repeated texts, prompts with a near-duplicate (>= 80 % shared
character 5-grams) in the other prompts-real-* folders, and keeps at most PER_REPO prompts a
repository (a seeded sample).

    python extract.py --mirror /work/.mirror            # writes ../examples.jsonl
    python extract.py --mirror /work/.mirror --scan owner+name ...   # discovery: per-file counts
    python extract.py --mirror /work/.mirror --all      # every labelled turn, before filtering (stdout)

Formats read: SpecStory markdown (`_**User**_` / `_**Agent (model ..., mode ...)**_` /
`_**Assistant**_` blocks, with `<tool-use data-tool-type=... data-tool-name=...>` or
`Tool use: **name**` records; a file with no tool record at all is skipped: it cannot show that
nothing was edited), aider chat histories (`#### ` user lines; SEARCH/REPLACE blocks,
`> Applied edit to`, `> Commit`, `> Running CMD`), and Claude Code JSONL transcripts.
"""

from __future__ import annotations

import argparse
import hashlib
import html
import json
import random
import re
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
FOLDER = HERE.parent
ROOT = FOLDER.parents[2]
SESSIONS = ROOT / "data" / "sessions" / "commands-agent-sessions"


def _load(name: str, path: Path):
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


_label = _load("label", SESSIONS / "label.py")  # the hand-written command rules of data/sessions
_sessions = _load("sessions_extract", SESSIONS / "extract.py")  # and its parser of shell tool calls
SHELL_TOOLS, _from_tool_use = _sessions.SHELL_TOOLS, _sessions._from_tool_use
_part, _parts, strip_heredocs = _label._part, _label._parts, _label.strip_heredocs

PER_REPO = 60
MAX_CHARS = 4000
SEED = 40

WRITE_TOOLS = {
    "edit", "multiedit", "write", "notebookedit", "edit_file", "edit_file_v2", "search_replace", "replace",
    "apply_patch", "write_file", "writefile", "create_file", "delete_file", "replace_string_in_file",
    "multi_replace_string_in_file", "copilot_replacestring", "copilot_multireplacestring", "copilot_createfile",
    "copilot_applypatch", "copilot_insertedit", "copilot_createdirectory", "insert_edit_into_file",
    "create_directory", "createdirectory", "edit_notebook", "editnotebook", "reapply", "str_replace_editor",
    "str_replace_based_edit_tool", "write_to_file", "replace_in_file", "insert_content", "search_and_replace",
    "strreplace", "editfile", "create_new_file", "rename_file", "move_file", "delete", "deletefile",
    "copilot_editnotebook", "copilot_createnewjupyternotebook", "edit_notebook_file", "create_new_jupyter_notebook",
}
READ_TOOLS = {
    "read", "read_file", "read_file_v2", "readfile", "glob", "grep", "ripgrep_raw_search", "ripgrep", "grep_search",
    "glob_file_search", "file_search", "codebase_search", "semantic_search", "list_dir", "list_dir_v2", "listdir",
    "ls", "read_lints", "readlints", "get_errors", "webfetch", "web_fetch", "web_search", "websearch", "view_image",
    "copilot_readfile", "copilot_findfiles", "copilot_findtextinfiles", "copilot_searchcodebase",
    "copilot_listdirectory", "copilot_geterrors", "copilot_getchangedfiles", "copilot_listcodeusages",
    "copilot_fetchwebpage", "copilot_getterminaloutput", "copilot_thinking", "fetch_webpage", "read_many_files",
    "search_file_content", "find_by_name", "view_file", "view", "list_files", "search_files", "read_notebook",
    "notebookread", "bashoutput", "get_terminal_output", "terminal_last_command", "terminal_selection",
    "get_changed_files", "list_code_usages", "test_failure", "think", "await", "killshell", "kill_shell",
    "todo_write", "todowrite", "write_todos", "writetodos", "todoread", "manage_todo_list", "update_plan",
    "taskcreate", "taskupdate", "tasklist", "taskget", "exitplanmode", "enterplanmode", "askuserquestion",
    "ask_followup_question", "toolsearch", "glob_v2", "grep_v2", "semantic_search_full", "read_dir",
    "findfiles", "search_codebase", "list_directory", "read_multiple_files", "get_file_info", "readmcpresource",
    "listmcpresources", "check_background_terminal", "get_diagnostics",
}
ASK_TOOLS = {"askuserquestion", "ask_followup_question"}
NO_EDIT_MODES = {"ask", "plan", "chat", "debug-ask"}

# run-kind commands that nevertheless change the project or the world
STATE_RUN = re.compile(
    r"^(?:(?:npm|pnpm|yarn|bun)\s+(?:i|install|add|ci|update|upgrade|up|init|create|link|publish|dlx\s+\S*create)\b"
    r"|npx\s+(?:-y\s+)?(?:create-|shadcn|prisma\s+(?:migrate|db\s+push)|drizzle-kit\s+(?:push|migrate)|expo\s+install"
    r"|@?\S*(?:init|create)\b|prettier\b.*(?:--write|\s-w\b)|eslint\b.*--fix|supabase\s+(?:db\s+push|migration)"
    r"|wrangler\s+(?:deploy|publish)|vercel|netlify\s+deploy|firebase\s+deploy|sequelize\s+db:migrate|knex\s+migrate)"
    r"|(?:pip|pip3|uv|poetry|pipenv|conda|mamba)\s+(?:install|add|sync|lock|init|update|remove|create)\b"
    r"|uv\s+(?:pip\s+install|venv|tool\s+install)\b|python3?\s+-m\s+(?:pip\s+install|venv|black|isort)\b"
    r"|python3?\s+\S*manage\.py\s+(?:migrate|makemigrations|loaddata|flush|createsuperuser)\b|alembic\s+(?:upgrade|downgrade|revision)\b"
    r"|cargo\s+(?:add|install|new|init|update|fix|fmt(?!.*--check)|clippy.*--fix)\b|go\s+(?:get|install|mod\s+(?:tidy|init)|fmt)\b|gofmt\b.*\s-w\b"
    r"|(?:brew|apt|apt-get|dnf|yum|pacman|snap|choco|winget)\s+(?:install|upgrade|remove|uninstall)\b"
    r"|prisma\s+(?:migrate|db\s+push)|drizzle-kit\s+(?:push|migrate)|supabase\s+(?:db\s+push|migration|link)"
    r"|(?:vercel|netlify|firebase|wrangler|fly|heroku|railway)\s+(?:deploy|publish|--prod)|vercel$"
    r"|prettier\b.*(?:--write|\s-w\b)|eslint\b.*--fix|ruff\s+(?:format|check\b.*--fix)|black(?!.*--(?:check|diff))\b|isort(?!.*--(?:check|diff))\b"
    r"|dotnet\s+(?:add|new|ef\s+database|format|tool\s+install)\b|flutter\s+(?:pub\s+(?:add|get|upgrade)|create)\b|dart\s+(?:format|fix|pub\s+add)\b"
    r"|clang-format\b.*\s-i\b|swiftformat\b|bundle\s+(?:install|add|update)\b|gem\s+install\b|composer\s+(?:require|install|update)\b"
    r"|(?:npm|pnpm|yarn|bun)\s+(?:run\s+)?(?:format|fmt|lint:fix|fix|prettier|db:\S+|migrate\S*|deploy\S*|release\S*|publish\S*)\b"
    r"|docker(?:-compose|\s+compose)?\s+(?:push|build\s+.*--push))"
)
SAFE_NET = re.compile(r"^(?:curl|wget|http|ping|dig|nslookup|httpie)\b")
NET_WRITES = re.compile(r"\s(?:-o|-O|--output|-X\s*(?:POST|PUT|PATCH|DELETE)|--request\s+(?:POST|PUT|PATCH|DELETE)|-d|--data\S*|-F|--form|-T|--upload-file)\b")
LOCAL = re.compile(r"(?:https?://)?(?:localhost|127\.0\.0\.1|0\.0\.0\.0|\[::1\])[:/\s]")
NET_READ = re.compile(r"^(?:(?:npm|pnpm|yarn)\s+(?:view|info|search|show|whoami)|git\s+(?:fetch|ls-remote)"
                      r"|gh\s+(?:pr|issue|run|repo|release)\s+(?:view|list|diff|checks|status)|gh\s+api\s+(?!.*-X\s*(?:POST|PUT|PATCH|DELETE)))\b")
BENIGN_OTHER = {"export", "set", "unset", "source", ".", "alias", "kill", "pkill", "killall", "local", "declare",
                "for", "do", "done", "if", "then", "else", "elif", "fi", "while", "case", "esac", "function",
                "return", "trap", "read", "shift", "eval", "exit", "true", "false", "cd", "{", "}", "[[", "]]", "echo"}


def shell_outcome(cmd: str) -> str:
    """'state', 'read' or 'unknown' for one shell command line, from label.py's kinds of its parts:
    write/destructive -> state; read/run -> read (tests, builds, scripts), unless it installs,
    migrates, deploys, publishes or rewrites files (formatters with --write/--fix): state;
    network -> read for a plain curl/wget/ping, else state (push, pull, clone, ssh, gh ...);
    other -> read for shell builtins and process control, else unknown."""
    worst = "read"
    try:
        parts = _parts(strip_heredocs(cmd))
    except (ValueError, IndexError):  # a line the splitter cannot read (an unclosed quote)
        return "unknown"
    for words in parts:
        if not words:
            continue
        try:
            k = _part(list(words))
        except (ValueError, IndexError):
            return "unknown"
        text = " ".join(words)
        while words and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", words[0]):
            words = words[1:]
        head = words[0].rsplit("/", 1)[-1] if words else ""
        if k in ("write", "destructive"):
            return "state"
        if k == "network":
            plain = re.sub(r"\s-o\s+/dev/null\b", " ", text)
            if SAFE_NET.match(text) and (LOCAL.search(text) or not NET_WRITES.search(" " + plain)):
                continue  # a look at a URL, or a request to the local dev server (a test)
            if NET_READ.match(text):
                continue
            return "state"
        if k in ("read", "run"):
            if STATE_RUN.match(re.sub(r"^(?:sudo|npx\s+-y|time|timeout\s+\S+|nohup)\s+", "", text)):
                return "state"
            continue
        if head in BENIGN_OTHER or text.startswith(("cd ", "#")):
            continue
        worst = "unknown"
    return worst


def tool_outcome(name: str, command: str | None) -> str:
    n = name.lower().strip()
    n = re.sub(r"^(mcp_|functions\.)", "", n)
    if n in WRITE_TOOLS:
        return "state"
    if n in SHELL_TOOLS or n == "aider-shell":
        return shell_outcome(command) if command else "unknown"
    if n in READ_TOOLS:
        return "read"
    return "unknown"


# ---------------------------------------------------------------- formats

SPEC_HEAD = re.compile(r"^_\*\*(User|Assistant|Agent|Cursor|Copilot|Claude|Gemini|Codex)\b([^\n]*?)\*\*_[ \t]*$", re.M)
TOOL_USE = re.compile(r'<tool-use data-tool-type="([^"]*)" data-tool-name="([^"]*)">(.*?)</tool-use>', re.S)
OLD_TOOL = re.compile(r"Tool use: \*\*([^*\n]+)\*\*")
FENCE = re.compile(r"^(`{3,}|~{3,})[ \t]*([\w+-]*)[^\n]*\n(.*?)^\1[ \t]*$", re.S | re.M)


PARAM_CMD = re.compile(r'"(?:commandLine"\s*:\s*\{\s*"original|command)"\s*:\s*("(?:[^"\\]|\\.)*")')
SUMMARY_CMD = re.compile(r"<summary>Tool use: \*\*[^*]+\*\*\s*(`+)(.+?)\1\s*</summary>", re.S)


def shell_command(name: str, body: str) -> str | None:
    """The command of a shell tool-use block: the inline code of its summary (Codex `exec_command`:
    `Tool use: **exec_command** `cmd``), else the sibling parser's reading; never the output block."""
    m = SUMMARY_CMD.search(body)
    if m:
        return html.unescape(m.group(2)).strip()
    m = PARAM_CMD.search(body)  # Copilot's Parameters JSON: "commandLine": {"original": "..."} or "command": "..."
    if m:
        try:
            return html.unescape(json.loads(m.group(1))).strip()
        except ValueError:
            pass
    cmd = _from_tool_use(name, body)
    if cmd is None or re.match(r"\s*(Chunk ID:|Wall time:|Exit code:|Output:)", cmd):
        return None
    return cmd


def _old_command(rest: str) -> str | None:
    f = FENCE.match(rest.lstrip("\n"))
    if f and f.group(2).lower() in ("", "bash", "sh", "shell", "zsh", "console"):
        return f.group(3).rstrip("\n")
    return None


def spec_turns(text: str) -> list[dict]:
    """SpecStory markdown: one dict per user block: text, events (outcomes), mode, agent_seen."""
    if "<tool-use " not in text and not OLD_TOOL.search(text):
        return []  # this export does not record tool calls: it cannot show that nothing was edited
    heads = list(SPEC_HEAD.finditer(text))
    turns: list[dict] = []
    for i, h in enumerate(heads):
        body = text[h.end():heads[i + 1].start() if i + 1 < len(heads) else len(text)]
        if h.group(1) == "User":
            body = re.sub(r"\n-{3,}\s*$", "", body.strip()).strip()
            if turns and body.startswith("[Request interrupted"):
                turns[-1]["interrupted"] = True
            turns.append({"text": body, "events": [], "modes": set(), "agent_seen": False, "agent_text": ""})
            continue
        if not turns:
            continue
        t = turns[-1]
        t["agent_seen"] = True
        m = re.search(r"mode ([\w-]+)", h.group(2))
        if m:
            t["modes"].add(m.group(1).lower())
        if not t["agent_text"]:
            t["agent_text"] = re.sub(r"<think>.*?</think>", "", body, flags=re.S).strip()[:2000]
        uses = TOOL_USE.findall(body)
        if uses:
            for _kind, name, tbody in uses:
                cmd = shell_command(name, tbody) if name.lower() in SHELL_TOOLS else None
                t["events"].append((name, tool_outcome(name, cmd)))
        else:
            for m2 in OLD_TOOL.finditer(body):
                name = m2.group(1).strip()
                cmd = _old_command(body[m2.end():].split("\n", 1)[-1][:20000]) if name.lower() in SHELL_TOOLS else None
                t["events"].append((name, tool_outcome(name, cmd)))
    return turns


AIDER_MODEL = re.compile(r"^> (?:Main model|Model): .* with ([\w-]+) edit format", re.M)


def aider_turns(text: str) -> list[dict]:
    """aider chat history: `#### ` lines are the user's; the rest up to the next one is aider's turn."""
    turns: list[dict] = []
    fmt = "diff"
    lines = text.split("\n")
    i = 0
    cur: dict | None = None
    last = ""
    while i < len(lines):
        line = lines[i]
        if line.startswith("#### ") or line == "####":
            block = []
            while i < len(lines) and (lines[i].startswith("#### ") or lines[i] == "####"):
                block.append(lines[i][5:].rstrip())
                i += 1
            if last.startswith("> Edit the files?") and not re.search(r":\s*n\w*$", last, re.I):
                continue  # architect mode: the architect's answer handed to the editor, not the user's words
            prompt = "\n".join(block).strip()
            mode = "ask" if fmt == "ask" else "code"
            cm = re.match(r"^/(\w[\w-]*)\s*(.*)$", prompt, re.S)
            if cm:
                cmd, rest = cm.group(1).lower(), cm.group(2).strip()
                if cmd == "chat-mode":
                    fmt = rest.split()[0] if rest else fmt
                    cur = None
                    continue
                if cmd in ("code", "architect") and rest:
                    prompt, mode = rest, "code"
                elif cmd == "ask" and rest:
                    prompt, mode = rest, "ask"
                else:  # /add, /run, /test, /drop, /commit ...: aider commands, not prompts
                    cur = None
                    continue
            cur = {"text": prompt, "events": [], "modes": {mode}, "agent_seen": False, "agent_text": ""}
            turns.append(cur)
            continue
        if line.strip():
            last = line.strip()
        m = AIDER_MODEL.match(line)
        if m:
            fmt = m.group(1)
        if line.startswith("# aider chat started"):
            cur = None
        elif cur is not None:
            s = line.strip()
            if s.startswith("> Add ") and "to the chat?" in s:
                cur["agent_text"] += s + "\n"
            if s and not s.startswith(">"):
                cur["agent_seen"] = True
                if len(cur["agent_text"]) < 2000:
                    cur["agent_text"] += line + "\n"
            if s.startswith("<<<<<<< SEARCH") or s.startswith("> Applied edit to") or re.match(r"^> Commit [0-9a-f]{7}", s) \
                    or s.startswith("> Creating empty file"):
                cur["events"].append(("aider-edit", "state"))
                cur["agent_seen"] = True
            elif s.startswith("> Running "):
                cur["events"].append(("aider-shell", shell_outcome(s[len("> Running "):])))
            elif s.startswith("> Did not apply edit") or s.startswith("> The LLM did not conform") \
                    or s.startswith("<<<<<<< ORIGINAL") or s.startswith("```diff"):
                cur["events"].append(("aider-edit", "state"))  # it tried to edit (an edit block aider did not apply)
            elif s.startswith("> ^C") or "KeyboardInterrupt" in s:
                cur["interrupted"] = True
        i += 1
    return turns


def _text_of(content) -> str | None:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        if any(isinstance(b, dict) and b.get("type") == "tool_result" for b in content):
            return None
        parts = [b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text"]
        return "\n".join(parts) if parts else None
    return None


def jsonl_turns(text: str) -> list[dict]:
    """Claude Code transcript: user lines with text content (not tool results, not sidechain)."""
    turns: list[dict] = []
    for line in text.splitlines():
        try:
            d = json.loads(line)
        except ValueError:
            continue
        if not isinstance(d, dict) or d.get("isSidechain") or d.get("isMeta"):
            continue
        msg = d.get("message") or {}
        if d.get("type") == "user":
            t = _text_of(msg.get("content"))
            if t is not None and turns and t.startswith("[Request interrupted"):
                turns[-1]["interrupted"] = True
            if t is not None:
                turns.append({"text": t.strip(), "events": [], "modes": set(), "agent_seen": False, "agent_text": ""})
        elif d.get("type") == "assistant" and turns:
            cur = turns[-1]
            cur["agent_seen"] = True
            for b in msg.get("content") or []:
                if not isinstance(b, dict):
                    continue
                if b.get("type") == "tool_use":
                    cmd = (b.get("input") or {}).get("command")
                    cur["events"].append((b.get("name", ""), tool_outcome(b.get("name", ""), cmd if isinstance(cmd, str) else None)))
                elif b.get("type") == "text" and len(cur["agent_text"]) < 2000:
                    cur["agent_text"] += b.get("text", "")
    return turns


def turns_of(path: str, text: str) -> list[dict]:
    if path.endswith(".jsonl"):
        return jsonl_turns(text)
    if path.endswith("aider.chat.history.md"):
        return aider_turns(text)
    return spec_turns(text)


# ---------------------------------------------------------------- labels and filters

HARNESS = re.compile(r"^\s*(<command-name>|<command-message>|<local-command|Caveat: |\[Request interrupted|<system-reminder>"
                     r"|This session is being continued from a previous conversation|<user-prompt-submit-hook>"
                     r"|<bash-input>|<bash-stdout>|<task-notification>|<system_notification>|<system-notification>|Base directory for this skill"
                     r"|I added these files to the chat:|\[Terminal [0-9a-f-]+ notification|# \d+ SEARCH/REPLACE blocks? failed to match)", re.I)
CONFIRM = re.compile(r"^\W*(y|yes|yeah|yep|ok|okay|sure|go|go ahead|do it|proceed|continue|go on|please|please do|"
                     r"yes please|yes,? do it|yes,? go ahead|yes,? proceed|ok,? do it|ok,? go ahead|ok,? proceed|"
                     r"ok,? continue|sounds good|lgtm|approved|implement it|make it so|let'?s do it|keep going|"
                     r"continue please|please continue|go for it|yes do that|do that|ok do that|next|carry on)\W*$", re.I)
SECRET = re.compile(r"\b[\w.+-]+@[A-Za-z0-9-]+\.[A-Za-z]{2,}\b|\b(sk-[A-Za-z0-9]{16,}|ghp_[A-Za-z0-9]{20,}|AKIA[0-9A-Z]{16}|xox[bp]-\S+)")


# aider could not act: the files were not in its chat (it asks for them, or offers to add them)
NEEDS_FILES = re.compile(r"add (?:these|this|the following|those|them|it|the)?\s*(?:files?\s*)?(?:\S+\s+){0,4}to the chat|"
                         r"^> Add .* to the chat\?|need (?:you to add|to see) (?:the )?(?:contents|files?)", re.I | re.M)


def outcome(turn: dict) -> bool | None:
    if not turn["agent_seen"] and not turn["events"]:
        return None
    kinds = {k for _, k in turn["events"]}
    if "state" in kinds:
        return False
    if NEEDS_FILES.search(turn["agent_text"]) or turn.get("interrupted"):
        return None  # the agent could not act (files missing) or was stopped: no outcome
    if turn["modes"] & NO_EDIT_MODES:
        return None  # a mode that cannot edit: the outcome says nothing of the request
    if "unknown" in kinds:
        return None
    return True


def clean(text: str) -> str:
    text = re.sub(r"<think>.*?</think>", "", text, flags=re.S)
    text = re.sub(r"(?m)^\s*\[Image(?: #\d+)?(?::[^\]\n]*)?\]\s*$", "", text)  # pasted-image placeholders
    return text.strip()


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"[^\w\s/.-]", " ", text.lower())).strip()


def grams(text: str) -> set[str]:  # as scripts/train_builtin_heads.py
    t = _norm(text)
    return {t[i:i + 5] for i in range(max(1, len(t) - 4))}


def git_show(mirror: Path, repo: str, commit: str, path: str) -> str:
    g = mirror / repo.replace("/", "+") / "repo"
    return subprocess.run(["git", "--git-dir", str(g), "show", f"{commit}:{path}"], capture_output=True,
                          check=True).stdout.decode("utf-8", "replace")


def labelled(mirror: Path) -> tuple[list[dict], dict]:
    sources = json.loads((FOLDER / "sources.json").read_text())
    rows, dropped = [], {"no_outcome": 0, "mode_cannot_edit": 0, "unknown_tool": 0, "harness": 0, "short": 0,
                         "long": 0, "confirmation": 0, "secret": 0}
    for src in sources:
        for f in src["files"]:
            text = git_show(mirror, src["repo"], f["commit"], f["path"])
            for turn in turns_of(f["path"], text):
                t = clean(turn["text"])
                ro = outcome(turn)
                if ro is None:
                    kinds = {k for _, k in turn["events"]}
                    key = ("mode_cannot_edit" if turn["modes"] & NO_EDIT_MODES and "state" not in kinds else
                           "unknown_tool" if "unknown" in kinds else "no_outcome")
                    dropped[key] += 1
                    continue
                if HARNESS.match(t):
                    dropped["harness"] += 1
                    continue
                if len(t.split()) < 3 and not CONFIRM.match(t):
                    dropped["short"] += 1
                    continue
                if len(t) > MAX_CHARS:
                    dropped["long"] += 1
                    continue
                if CONFIRM.match(t) and ro:
                    dropped["confirmation"] += 1  # "yes"/"continue" is an edit by the rule; the outcome disagrees
                    continue
                if len(t.split()) < 3:
                    dropped["short"] += 1
                    continue
                if SECRET.search(t):
                    dropped["secret"] += 1
                    continue
                row = {"state": t, "read_only": ro}
                if any(n.lower() in ASK_TOOLS for n, _ in turn["events"]):
                    row["specified"] = False
                tools = sorted({n for n, _ in turn["events"]})
                rows.append({**row, "repo": src["repo"], "path": f["path"], "commit": f["commit"],
                             "licence": src["licence"], "tools": tools})
    return rows, dropped


def existing_real() -> list[tuple[str, set[str]]]:
    out = []
    for p in sorted((FOLDER.parent).glob("prompts-real-*/examples.jsonl")):
        if p.parent == FOLDER:
            continue
        for line in p.read_text().splitlines():
            if line.strip():
                s = json.loads(line)["state"]
                out.append((_norm(s), grams(s)))
    return out


def select(rows: list[dict], dropped: dict) -> list[dict]:
    known = existing_real()
    known_norm = {n for n, _ in known}
    # repeated texts: kept once if every copy has the same outcome, dropped if they disagree
    by_text: dict[str, list[dict]] = {}
    for r in rows:
        by_text.setdefault(_norm(r["state"]), []).append(r)
    uniq = []
    dropped.update({"repeated": 0, "repeated_conflicting": 0, "near_existing": 0, "over_repo_cap": 0})
    for key, group in by_text.items():
        if len({g["read_only"] for g in group}) > 1:
            dropped["repeated_conflicting"] += len(group)
            continue
        dropped["repeated"] += len(group) - 1
        if key in known_norm:
            dropped["near_existing"] += 1
            continue
        g = grams(group[0]["state"])
        if any(len(g & k) / max(1, len(g | k)) >= 0.8 for _, k in known):
            dropped["near_existing"] += 1
            continue
        uniq.append(group[0])
    per_repo: dict[str, list[dict]] = {}
    for r in uniq:
        per_repo.setdefault(r["repo"], []).append(r)
    out = []
    for repo, items in sorted(per_repo.items()):
        rng = random.Random(f"{SEED}:{repo}")
        rng.shuffle(items)
        dropped["over_repo_cap"] += max(0, len(items) - PER_REPO)
        out.extend(items[:PER_REPO])
    out.sort(key=lambda r: (r["repo"].lower(), r["path"], hashlib.sha256(r["state"].encode()).hexdigest()))
    return out


def scan(mirror: Path, names: list[str]) -> None:
    pat = re.compile(r"specstory/history/.*\.md$|aider\.chat\.history\.md$|\.jsonl$")
    for name in names:
        g = mirror / name / "repo"
        log = subprocess.run(["git", "--git-dir", str(g), "log", "--all", "--format=@%H", "--name-only"],
                             capture_output=True, text=True).stdout
        latest: dict[str, str] = {}
        commit = ""
        for line in log.splitlines():
            if line.startswith("@"):
                commit = line[1:]
            elif line and pat.search(line) and line not in latest:
                latest[line] = commit
        for path, c in latest.items():
            ok = subprocess.run(["git", "--git-dir", str(g), "cat-file", "-e", f"{c}:{path}"],
                                capture_output=True).returncode == 0
            ref = c if ok else c + "^"
            try:
                text = subprocess.run(["git", "--git-dir", str(g), "show", f"{ref}:{path}"], capture_output=True,
                                      check=True).stdout.decode("utf-8", "replace")
            except subprocess.CalledProcessError:
                continue
            ts = turns_of(path, text)
            labs = [outcome(t) for t in ts]
            if ts:
                sha = subprocess.run(["git", "--git-dir", str(g), "rev-parse", ref], capture_output=True,
                                     text=True).stdout.strip()
                print(json.dumps({"repo": name.replace("+", "/", 1), "path": path, "commit": sha, "turns": len(ts),
                                  "true": labs.count(True), "false": labs.count(False)}))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mirror", type=Path, default=Path("/work/.mirror"))
    ap.add_argument("--scan", nargs="*")
    ap.add_argument("--all", action="store_true", help="print every labelled turn before selection")
    ap.add_argument("--out", type=Path, default=FOLDER / "examples.jsonl")
    a = ap.parse_args()
    if a.scan is not None:
        scan(a.mirror, a.scan)
        return 0
    rows, dropped = labelled(a.mirror)
    if a.all:
        for r in rows:
            print(json.dumps(r, ensure_ascii=False))
        return 0
    out = select(rows, dropped)
    with a.out.open("w") as fh:
        for r in out:
            fh.write(json.dumps({k: r[k] for k in ("state", "read_only", "specified", "repo", "path", "commit",
                                                   "licence", "tools") if k in r}, ensure_ascii=False) + "\n")
    ro = [r["read_only"] for r in out]
    print(f"{len(out)} prompts, {len({r['repo'] for r in out})} repositories, read_only true {ro.count(True)} "
          f"false {ro.count(False)}; specified false {sum('specified' in r for r in out)}; dropped {dropped}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
