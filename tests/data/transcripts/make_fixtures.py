"""Regenerate the Claude Code transcript fixtures of tests/test_outcomes.py.

    SYSTEM1_TOOLS_DIR=/work/main/.tools .venv/bin/python tests/data/transcripts/make_fixtures.py [OUT_DIR]

(OUT_DIR defaults to tests/data/transcripts/projects; tests/test_outcomes.py also runs it into
a temporary directory to check that the installed CLI still writes what the fixtures hold.)

How they were produced: the real `claude` CLI (2.1.332, from `.tools/cc`, the copy
tests/test_claude_code.py drives) ran `claude -p` sessions in a temporary HOME against
tests/mock_anthropic.py, a loopback Messages API whose replies are scripted here. One mock
serves every session, so tool_use ids (`toolu_mockNNNNi`) are unique across the fixtures.
Each session exercises one way a subagent spawn ends:

| session     | what the main loop does                                   | how the spawn ends            |
|-------------|-----------------------------------------------------------|-------------------------------|
| success     | a background spawn (model haiku) and a foreground Explore | notification `completed`;     |
|             | spawn without a model (inherits opus); then `--resume     | result `completed`; the fork  |
|             | --fork-session` continues it in a new session file        | copies both spawns' records   |
| error       | a spawn of an agent type that does not exist              | tool_result `is_error: true`  |
| api-failure | the subagent's API request gets HTTP 400                  | notification `failed`         |
| stopped     | the subagent hangs; the main loop calls TaskStop          | notification `killed`         |
| redo        | `Task 12`, then re-spawned "retry … previous attempt"     | redone (same task id + retry) |
| blocked     | `W4-P3` reports "BLOCKED: …", then a retry                | report says blocked; redone   |
| same-role   | "Review the diff" twice, no task id                       | same-role re-spawn (doubtful) |

What is kept: every `user`, `assistant`, `system`, `queue-operation`, `last-prompt`,
`cost-state` record and the small attachments (the `queued_command` attachment is how a
notification arriving mid-turn is delivered), unchanged except for paths (the temporary
directory becomes /home/dev, the project /home/dev/shop). Dropped to keep the files small
(< 200 KB in all): the request-reconstruction records (`api-request`, `api-request-shape`,
`api-request-blob`) and the `prompt_snapshot`, `skill_listing`, `agent_listing_delta`,
`environment` and `remote_session_change` attachments (system prompt, tool definitions and
reminders, 1-110 KB each; nothing the reader looks at). The `.meta.json` files beside the
subagent transcripts are kept as written.
"""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
TESTS = HERE.parents[1]
sys.path.insert(0, str(TESTS))

from mock_anthropic import MockAnthropic, last_user_blocks, tool_results  # noqa: E402

TOOLS = Path(os.environ.get("SYSTEM1_TOOLS_DIR", TESTS.parent / ".tools"))
CLAUDE = TOOLS / "cc" / "node_modules" / ".bin" / "claude"
OUT = HERE / "projects"
DROP_TYPES = {"api-request", "api-request-shape", "api-request-blob"}
DROP_ATTACHMENTS = {"prompt_snapshot", "skill_listing", "agent_listing_delta", "environment",
                    "remote_session_change"}


def agent(description: str, prompt: str, subagent_type: str = "general-purpose", **extra) -> dict:
    return {"type": "tool_use", "name": "Agent",
            "input": {"description": description, "prompt": prompt, "subagent_type": subagent_type, **extra}}


def say(text: str) -> list[dict]:
    return [{"type": "text", "text": text}]


# What each subagent does, keyed by a phrase of its brief (the first match wins): a report,
# an API error or a hang.
SUBAGENTS = {
    "summarize it in five bullet points": say("Summary:\n- a small shop backend\n- config in src/config.py\n"
                                              "- tests under tests/\n- CI on push\n- MIT licence"),
    "where the config parser lives": say("The parser is src/config.py:parse_config (lines 10-80)."),
    "migrate the orders table": ("error", 400),
    "Run every benchmark": ("sleep", 6.0),
    "Task 12 (retry)": say("Done: the endpoint is in and all its tests pass."),  # before the first brief's phrase
    "add the CSV export endpoint": say("Done: the endpoint is in, but 2 of its tests still fail."),
    "W4-P3: implement the TOML": say("BLOCKED: the config tests need database credentials I do not have."),
    "W4-P3 (retry)": say("Done: the parser uses the fixture database; tests pass."),
    "Review the staged diff for bugs.": say("Looks fine to me."),
    "and check the error paths too": say("Found one bug: the retry loop never gives up."),
}

# The main loop of each session: its replies at each decision point (the first prompt, then
# each task notification), and what it does with a plain tool result.
SESSIONS = {
    "success": [[agent("Summarize the README", "Task 1: read README.md and summarize it in five bullet points.",
                       model="haiku"),
                 agent("Locate the parser", "Find where the config parser lives and report the file and function.",
                       "Explore", run_in_background=False)]],
    "error": [[agent("Review the handlers", "Review src/handlers.py for missing error handling.", "code-reviewer")]],
    "api-failure": [[agent("Migrate the schema", "Task 7: migrate the orders table to the new schema.",
                           model="sonnet")]],
    "stopped": [[agent("Run the benchmarks", "Run every benchmark in benchmarks/ and report the slowest five.")]],
    "redo": [[agent("Add CSV export", "Task 12: add the CSV export endpoint to src/api.py with tests.",
                    model="haiku")],
             [agent("Add CSV export again", "Task 12 (retry): the previous attempt left two failing tests; "
                                            "add the CSV export endpoint to src/api.py and make its tests pass.",
                    model="sonnet")]],
    "blocked": [[agent("Implement W4-P3 parser", "W4-P3: implement the TOML config parser in src/config.py.",
                       model="haiku")],
                [agent("Retry W4-P3 parser", "W4-P3 (retry): the previous attempt was blocked on database "
                                             "credentials; use the fixture database in tests/fixtures instead.",
                       model="sonnet")]],
    "same-role": [[agent("Review the diff", "Review the staged diff for bugs.")],
                  [agent("Review the diff", "Review the staged diff for bugs, and check the error paths too.")]],
}


def texts(blocks: list[dict]) -> str:
    return "\n".join(b.get("text", "") for b in blocks if b.get("type") == "text")


def first_user_text(body: dict) -> str:
    for message in body.get("messages", []):
        if message.get("role") == "user":
            content = message.get("content")
            return content if isinstance(content, str) else texts(content or [])
    return ""


def scenario(body: dict) -> str | None:
    """The session's name, from the `[name]` its first prompt starts with (None: a subagent,
    whose first user message is its brief; subagents are offered the Agent tool too)."""
    first = first_user_text(body)
    return next((n for n in SESSIONS if f"[{n}]" in first), None)


def is_subagent(body: dict) -> bool:
    return scenario(body) is None


def subagent_plan(body: dict):
    brief = first_user_text(body)
    for phrase, plan in SUBAGENTS.items():
        if phrase in brief:
            return plan
    return say("done.")


def main_script(body: dict) -> list[dict]:
    if is_subagent(body):
        plan = subagent_plan(body)
        return plan if isinstance(plan, list) else say("done.")
    name = scenario(body)
    results = tool_results(body)
    if results:
        launched = json.dumps(results)
        found = re.search(r"agentId: (\w+)", launched)
        if name == "stopped" and found and "TaskStop" not in json.dumps(body.get("messages", [])[-2:]):
            return [{"type": "tool_use", "name": "TaskStop", "input": {"task_id": found.group(1)}}]
        return say("Waiting for the agent.")
    last = texts(last_user_blocks(body))
    if f"[{name}]" not in last and "<task-notification>" not in last:
        return say("Nothing else.")  # a later prompt (the fork's "Thanks")
    # decision point k: the prompt (k = 0), then one per task notification seen so far
    k = sum(texts(m["content"]).count("<task-notification>") if isinstance(m.get("content"), list)
            else str(m.get("content")).count("<task-notification>")
            for m in body.get("messages", []) if m.get("role") == "user")
    turns = SESSIONS[name]
    return turns[k] if k < len(turns) else say("All done.")


class ScriptedMock(MockAnthropic):
    """The shared mock, plus two subagent behaviours it lacks: an HTTP error, a slow reply."""

    def _handler(self):
        base = super()._handler()

        class Handler(base):
            def do_POST(self):  # noqa: N802
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                body = json.loads(raw or b"{}") if self.path.split("?")[0] == "/v1/messages" else {}
                plan = subagent_plan(body) if body.get("tools") and is_subagent(body) else None
                if isinstance(plan, tuple) and plan[0] == "error":
                    self._send(plan[1], {"type": "error", "error": {"type": "invalid_request_error",
                                                                    "message": "mock: this request is rejected"}})
                    return
                if isinstance(plan, tuple) and plan[0] == "sleep":
                    time.sleep(plan[1])
                self.rfile = io.BytesIO(raw)
                try:
                    base.do_POST(self)
                except OSError:  # the stopped subagent's connection is gone
                    pass

        return Handler


def claude_version() -> str:
    return subprocess.run([str(CLAUDE), "--version"], capture_output=True, text=True, timeout=60).stdout.strip()


def keep(record: dict) -> bool:
    if record.get("type") in DROP_TYPES:
        return False
    attachment = record.get("attachment")
    return not (isinstance(attachment, dict) and attachment.get("type") in DROP_ATTACHMENTS)


def slug(path: str) -> str:
    return re.sub(r"[^A-Za-z0-9]", "-", path)


def sanitize(text: str, base: Path) -> str:
    for old, new in ((str(base / "shop"), "/home/dev/shop"), (slug(str(base / "shop")), "-home-dev-shop"),
                     (str(base / "home"), "/home/dev")):
        text = text.replace(old, new)
    return text


def copy_tree(src: Path, base: Path, out: Path) -> None:
    if out.exists():
        shutil.rmtree(out)
    for path in sorted(src.rglob("*")):
        if not path.is_file() or path.suffix not in (".jsonl", ".json"):
            continue
        dest = out / sanitize(str(path.relative_to(src)), base)
        dest.parent.mkdir(parents=True, exist_ok=True)
        if path.suffix == ".json":
            dest.write_text(sanitize(path.read_text(), base))
            continue
        lines = [line for line in path.read_text().splitlines() if keep(json.loads(line))]
        dest.write_text("".join(sanitize(line, base) + "\n" for line in lines))


def main(out: Path = OUT) -> int:
    if not CLAUDE.exists():
        print(f"no claude CLI at {CLAUDE} (set SYSTEM1_TOOLS_DIR)", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="s1fx") as tmp, ScriptedMock(main_script) as api:
        base = Path(tmp)
        (base / "home").mkdir()
        (base / "shop").mkdir()
        env = {"HOME": str(base / "home"), "PATH": os.environ["PATH"], "DISABLE_AUTOUPDATER": "1",
               "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "ENABLE_TOOL_SEARCH": "false",
               "ANTHROPIC_BASE_URL": api.url, "ANTHROPIC_API_KEY": "sk-ant-api03-mock"}

        def claude(*args: str) -> dict:
            proc = subprocess.run([str(CLAUDE), *args, "--output-format", "json", "--allowedTools", "Agent",
                                   "TaskStop"], env=env, cwd=base / "shop", capture_output=True, text=True,
                                  timeout=300)
            if proc.returncode != 0:
                raise SystemExit(f"claude {args}: exit {proc.returncode}: {proc.stdout[-2000:]}{proc.stderr[-2000:]}")
            return json.loads(proc.stdout)

        for name in SESSIONS:
            ran = claude("-p", f"[{name}] Please delegate this work to subagents as planned.")
            print(f"{name}: {ran['session_id']} {ran.get('subagent_stats', {}).get('spawned')} spawned", file=sys.stderr)
            if name == "success":
                fork = claude("-p", "Thanks. Anything else?", "--resume", ran["session_id"], "--fork-session")
                print(f"  forked as {fork['session_id']}", file=sys.stderr)
        time.sleep(1)  # let the stopped subagent's late reply land before the tree is copied
        copy_tree(base / "home" / ".claude" / "projects", base, out)
    total = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    print(f"wrote {out} ({total // 1024} KB) with {claude_version()}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]) if len(sys.argv) > 1 else OUT))
