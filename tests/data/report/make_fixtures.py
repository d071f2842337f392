"""Regenerate the fixtures of `system1 report`: Claude Code transcripts, the plugin's routing
log, and the facts a test can check a report against.

    SYSTEM1_TOOLS_DIR=/work/main/.tools .venv/bin/python tests/data/report/make_fixtures.py [OUT_DIR]

(OUT_DIR defaults to tests/data/report: it rewrites projects/, routing.jsonl and expected.json
there. A run takes ≈ 10-20 s on one core. Session, agent and prompt ids, uuids and timestamps
change from run to run; the tiers (the mock engine hashes the text), the shapes and, but for
the order in which the two parallel subagents of `hinted` reach the mock, the mock's message
and tool_use ids and usage numbers do not, as long as the scripts below and the CLI stay the
same.)

How they are produced: the real `claude` CLI (2.1.332, from `.tools/cc`, the copy
tests/test_claude_code.py drives) runs `claude -p` sessions in a temporary HOME, against
tests/mock_anthropic.py (a loopback Messages API) whose replies are scripted here, with this
repository installed as a plugin from a local marketplace (as that test does: the tracked
tree, `claude plugin marketplace add` + `install`), so the plugin's real hooks run: the
route hook (UserPromptSubmit) and the agent hook (PreToolUse on Agent). The gateway's
daemon runs on the deterministic `mock` engine (answers are a hash of the question and the
text: no model is loaded), with `[routing] enabled`, `min_confidence = 0.5` and
`log_dirs = [the project]`, so both hooks write the routing log (the skill picker keeps its
defaults: on, record-only, so the log also holds `source: "skill"` lines, as a user's does).
The MCP server is not registered (the report reads hooks, not tools).

| session | prompt                     | [routing] hint | what the main loop does                            |
|---------|----------------------------|----------------|----------------------------------------------------|
| hinted  | 17 words: gets the hint    | true           | two background spawns in one response: one on the |
|         |                            |                | hinted tier, one on another tier; the second      |
|         |                            |                | subagent Reads a file first (2 responses)         |
| short   | 4 words: no hint, unlogged | true           | one foreground spawn without a model (inherits    |
|         |                            |                | the main loop's opus)                              |
| shadow  | 15 words: logged, no hint  | false          | one background spawn, model "sonnet"              |

The mock (ReportMock below) differs from the shared one in three ways:
  * `message.model` echoes the request's `model`: what Claude Code 2.1.332 asks for, i.e.
    claude-opus-5-5 for the main loop and claude-haiku-5-5 / claude-sonnet-5-5 /
    claude-opus-5-5 for subagents spawned with model haiku / sonnet / opus (or none);
  * usage is distinct per response, a function of the mock's response counter n
    (msg_mock{n:06d}): input 100n+1, output 10n+2, cache read 1000n+3, cache writes
    5m 100n+4 and 1h n+5 (cache_creation_input_tokens is their sum), service_tier standard;
  * every response carries a `request-id: req_mock{n:06d}` header, as the real API sends.

What is kept of the transcripts: every record but the request-reconstruction ones
(`api-request`, `api-request-shape`, `api-request-blob`: they have no uuid), unchanged but for
paths, except the big attachments (`prompt_snapshot`, `skill_listing`, `agent_listing_delta`,
`environment`, `remote_session_change`: system prompt, tool and skill listings, 1-110 KB each),
whose payload is trimmed to `"attachment": {"type": …, "trimmed": true}` (and `rendered`
dropped) but whose envelope stays: they sit in the `parentUuid` chain (the prompt → … →
hook_additional_context → … → assistant), which dropping them would break. (That is the
difference from tests/data/transcripts/make_fixtures.py, which drops them.) The subagent
`.meta.json` files are kept as written. Paths are rewritten: the project becomes
/home/dev/billing (slug -home-dev-billing), the temporary HOME /home/dev, any other path in
the temporary directory /home/dev/.s1, and Claude Code's per-user temporary directory
/tmp/claude-<uid> becomes /tmp/claude-1000.

expected.json is built from what the mock was told to send and saw (models, usage, tool_use
ids, the hint text in the request, task notifications) and from the routing log: never by
parsing the transcripts. The script checks that the log and the mock agree, and fails
otherwise.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
TESTS = HERE.parents[1]
ROOT = TESTS.parent
sys.path.insert(0, str(TESTS))

from mock_anthropic import MockAnthropic, last_user_blocks, tool_results, user_text  # noqa: E402

TOOLS = Path(os.environ.get("SYSTEM1_TOOLS_DIR", ROOT / ".tools"))
CLAUDE = TOOLS / "cc" / "node_modules" / ".bin" / "claude"
PROJECT = "billing"
FAKE_HOME = "/home/dev"
DROP_TYPES = {"api-request", "api-request-shape", "api-request-blob"}
TRIM_ATTACHMENTS = {"prompt_snapshot", "skill_listing", "agent_listing_delta", "environment",
                    "remote_session_change"}
TIERS = ("haiku", "sonnet", "opus")
HINT = re.compile(r"System-1 routing hint: [^\n]*?→ subagent model: (haiku|sonnet|opus)")

SESSIONS: dict[str, dict[str, Any]] = {
    "hinted": {"hint": True,
               "prompt": "Explain how the invoice rounding in src/totals.py works and check whether its tests "
                         "cover the edge cases"},
    "short": {"hint": True, "prompt": "Summarize the README please"},
    "shadow": {"hint": False,
               "prompt": "Review the refund handler in src/refunds.py and list anything that could charge a "
                         "customer twice"},
}

# The subagents: brief -> what they answer (a list of turns; a turn that is not the last may
# call a tool).
BRIEF_ROUNDING = "Read src/totals.py and explain how invoice totals are rounded, citing line numbers."
BRIEF_TESTS = "Review tests/test_totals.py: which rounding edge cases (half cent, negative, zero) have no test?"
BRIEF_README = "Read README.md and summarize it in three bullet points."
BRIEF_REFUNDS = "Audit src/refunds.py for paths that could refund or charge the same order twice."
SUBAGENT_TURNS = {
    BRIEF_ROUNDING: [[{"type": "text", "text": "totals.py rounds once, at the end, half-even (line 4)."}]],
    BRIEF_TESTS: [[{"type": "text", "text": "Reading the tests first."},
                   {"type": "tool_use", "name": "Read", "input": {"file_path": "{project}/tests/test_totals.py"}}],
                  [{"type": "text", "text": "Missing: negative totals and exact half cents."}]],
    BRIEF_README: [[{"type": "text", "text": "- an invoicing service\n- totals and refunds\n- pytest tests"}]],
    BRIEF_REFUNDS: [[{"type": "text", "text": "refund() has no idempotency key: a retry charges twice."}]],
}
FILES = {  # the project's files (the subagent of BRIEF_TESTS reads one)
    "README.md": "# billing\n\nInvoices: totals and refunds.\n",
    "src/totals.py": "from decimal import Decimal, ROUND_HALF_EVEN\n\n\ndef total(lines):\n"
                     "    return sum(lines, Decimal(0)).quantize(Decimal('0.01'), ROUND_HALF_EVEN)\n",
    "src/refunds.py": "def refund(order, gateway):\n    return gateway.charge(order.id, -order.amount)\n",
    "tests/test_totals.py": "from decimal import Decimal\nfrom src.totals import total\n\n\n"
                            "def test_total():\n    assert total([Decimal('1.005')]) == Decimal('1.00')\n",
}


def agent(description: str, prompt: str, **extra: Any) -> dict[str, Any]:
    return {"type": "tool_use", "name": "Agent",
            "input": {"description": description, "prompt": prompt, "subagent_type": "general-purpose", **extra}}


def other_tier(tier: str) -> str:
    return "opus" if tier == "haiku" else "haiku"


def spawns_for(name: str, hinted: str | None) -> list[dict[str, Any]]:
    """The main loop's first response in each session: its Agent calls."""
    if name == "hinted":
        tier = hinted or "sonnet"  # (no hint: the run fails its checks below)
        return [agent("Explain the rounding", BRIEF_ROUNDING, model=tier),
                agent("Check the rounding tests", BRIEF_TESTS, model=other_tier(tier))]
    if name == "short":
        return [agent("Summarize the README", BRIEF_README, run_in_background=False)]
    return [agent("Audit the refund handler", BRIEF_REFUNDS, model="sonnet")]


def usage_for(n: int) -> dict[str, Any]:
    five, hour = 100 * n + 4, n + 5
    return {"input_tokens": 100 * n + 1, "output_tokens": 10 * n + 2, "cache_read_input_tokens": 1000 * n + 3,
            "cache_creation_input_tokens": five + hour,
            "cache_creation": {"ephemeral_5m_input_tokens": five, "ephemeral_1h_input_tokens": hour},
            "service_tier": "standard"}


def texts(blocks: list[dict[str, Any]]) -> str:
    return "\n".join(b.get("text", "") for b in blocks if b.get("type") == "text")


def first_user_text(body: dict[str, Any]) -> str:
    for message in body.get("messages", []):
        if message.get("role") == "user":
            content = message.get("content")
            return content if isinstance(content, str) else texts(content or [])
    return ""


def scenario(body: dict[str, Any]) -> str | None:
    """The session of a main-loop request, by its prompt (None: a subagent, whose first user
    message is its brief)."""
    first = first_user_text(body)
    return next((name for name, s in SESSIONS.items() if s["prompt"] in first), None)


def brief_of(body: dict[str, Any]) -> str | None:
    first = first_user_text(body)
    return next((brief for brief in SUBAGENT_TURNS if brief in first), None)


def assistant_turns(body: dict[str, Any]) -> int:
    return sum(1 for m in body.get("messages", []) if m.get("role") == "assistant")


class ReportMock(MockAnthropic):
    """The shared mock with per-response usage, the requested model echoed, a request-id
    header, and a record of every response (who asked, what it answered)."""

    def __init__(self, project: Path):
        super().__init__(self.script)
        self.project = project
        self.session: str | None = None  # the session `claude -p` is running now
        self.responses: list[dict[str, Any]] = []
        self.problems: list[str] = []
        self._tls = threading.local()

    def script(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        name = scenario(body)
        if name is None:  # a subagent
            turns = SUBAGENT_TURNS.get(brief_of(body) or "", [[{"type": "text", "text": "done."}]])
            turn = turns[min(assistant_turns(body), len(turns) - 1)]
            return json.loads(json.dumps(turn).replace("{project}", str(self.project)))
        if assistant_turns(body) == 0:  # the prompt: spawn
            found = HINT.search(user_text(body))
            if name == "hinted" and not found:
                self.problems.append("the hinted session's first request carries no routing hint")
            return spawns_for(name, found.group(1) if found else None)
        if tool_results(body):
            return [{"type": "text", "text": "Started; I will report when the agents are done."}]
        if "<task-notification>" in texts(last_user_blocks(body)):
            return [{"type": "text", "text": "The agent's report is in; nothing else to do."}]
        return [{"type": "text", "text": "Nothing else."}]

    def _reply(self, body: dict[str, Any]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        message, content = super()._reply(body)
        n = int(message["id"][len("msg_mock"):])
        message["usage"] = usage_for(n)
        kind = "side" if not body.get("tools") else "main" if scenario(body) else "subagent"
        last = texts(last_user_blocks(body))
        launched = {}  # tool_use_id -> agentId, from the Agent tool results this request hands back
        for result in tool_results(body) if kind == "main" else []:
            found = re.search(r"agentId: (\w+)", json.dumps(result.get("content")))
            if found:
                launched[result["tool_use_id"]] = found.group(1)
        with self._lock:
            self.responses.append({
                "n": n, "message_id": message["id"], "request_id": f"req_mock{n:06d}", "model": message["model"],
                "kind": kind, "session": self.session, "brief": brief_of(body) if kind == "subagent" else None,
                "content": content, "usage": message["usage"],
                "notifications": last.count("<task-notification>") if kind == "main" else 0,
                "launched": launched,
                "hint": (HINT.search(user_text(body)).group(0) if kind == "main" and assistant_turns(body) == 0
                         and HINT.search(user_text(body)) else None)})
        self._tls.request_id = f"req_mock{n:06d}"
        return message, content

    def _handler(self):
        base = super()._handler()
        tls = self._tls

        class Handler(base):
            def end_headers(self) -> None:
                request_id = getattr(tls, "request_id", None)
                if request_id:
                    self.send_header("request-id", request_id)
                    tls.request_id = None
                super().end_headers()

        return Handler


# -- the temporary HOME ---------------------------------------------------------------------

def tracked_tree(dest: Path) -> Path:
    """The repository as a clean clone has it (as tests/test_claude_code.py copies it)."""
    listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT, capture_output=True,
                            check=True).stdout.decode().split("\0")
    for name in filter(None, listed):
        source = ROOT / name
        if source.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, dest / name)
    return dest


def write_config(path: Path, project: Path, hint: bool) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join([
        "[gateway]", 'provider = "mock"', "", "[providers.mock]", 'model = "mock-1"', "",
        "[routing]", "enabled = true", f"hint = {'true' if hint else 'false'}", "min_confidence = 0.5",
        f"log_dirs = [{json.dumps(str(project))}]", ""]))


def slug(path: str) -> str:
    return re.sub(r"[^A-Za-z0-9]", "-", path)


def sanitizer(base: Path, project: Path, home: Path):
    pairs = [(f"/tmp/claude-{os.getuid()}/", "/tmp/claude-1000/"), (str(project), f"{FAKE_HOME}/{PROJECT}"), (slug(str(project)), slug(f"{FAKE_HOME}/{PROJECT}")),
             (str(home), FAKE_HOME), (slug(str(home)), slug(FAKE_HOME)), (str(base), f"{FAKE_HOME}/.s1"),
             (slug(str(base)), slug(f"{FAKE_HOME}/.s1"))]

    def sanitize(text: str) -> str:
        for old, new in pairs:
            text = text.replace(old, new)
        return text
    return sanitize


def trimmed(record: dict[str, Any]) -> dict[str, Any] | None:
    """The record as the fixture keeps it: None (dropped), trimmed, or itself."""
    if record.get("type") in DROP_TYPES:
        return None
    attachment = record.get("attachment")
    if isinstance(attachment, dict) and attachment.get("type") in TRIM_ATTACHMENTS:
        return {key: ({"type": attachment["type"], "trimmed": True} if key == "attachment" else value)
                for key, value in record.items() if key != "rendered"}
    return record


def copy_tree(src: Path, out: Path, sanitize) -> None:
    for path in sorted(src.rglob("*")):
        if not path.is_file() or path.suffix not in (".jsonl", ".json"):
            continue
        dest = out / sanitize(str(path.relative_to(src)))
        dest.parent.mkdir(parents=True, exist_ok=True)
        if path.suffix == ".json":
            dest.write_text(sanitize(path.read_text()))
            continue
        lines = []
        for line in filter(str.strip, path.read_text().splitlines()):
            record = json.loads(line)
            kept = trimmed(record)
            if kept is not None:
                lines.append(line if kept is record else json.dumps(kept, ensure_ascii=False, separators=(",", ":")))
        dest.write_text("".join(sanitize(line) + "\n" for line in lines))


# -- the facts ------------------------------------------------------------------------------

def tier_of(model: str | None) -> str | None:
    return next((t for t in TIERS if model and t in model), None)


BUCKETS = ("input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens",
           "ephemeral_5m_input_tokens", "ephemeral_1h_input_tokens")


def flat_usage(usage: dict[str, Any]) -> dict[str, int]:
    return {"input_tokens": usage["input_tokens"], "output_tokens": usage["output_tokens"],
            "cache_read_input_tokens": usage["cache_read_input_tokens"],
            "cache_creation_input_tokens": usage["cache_creation_input_tokens"],
            "ephemeral_5m_input_tokens": usage["cache_creation"]["ephemeral_5m_input_tokens"],
            "ephemeral_1h_input_tokens": usage["cache_creation"]["ephemeral_1h_input_tokens"]}


def totals(responses: list[dict[str, Any]], key) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for r in sorted(responses, key=key):
        row = out.setdefault(key(r), {"responses": 0, **{b: 0 for b in BUCKETS}})
        row["responses"] += 1
        for bucket, value in flat_usage(r["usage"]).items():
            row[bucket] += value
    return out


def session_facts(name: str, sid: str, mock: ReportMock, log: list[dict[str, Any]]) -> dict[str, Any]:
    """What a report must find in session `sid`, from the mock's record and the routing log
    (checked against each other: a disagreement is a problem that fails the run)."""
    spec = SESSIONS[name]
    mine = [r for r in mock.responses if r["session"] == name]
    main = [r for r in mine if r["kind"] == "main"]
    logged = [e for e in log if e.get("session_id") == sid]
    prompt_entries = [e for e in logged if e["source"] == "prompt"]
    agent_entries = {e["tool_use_id"]: e for e in logged if e["source"] == "agent"}
    hint_seen = next((r["hint"] for r in main if r["hint"]), None)
    hint_tier = HINT.search(hint_seen).group(1) if hint_seen else None
    entry = prompt_entries[0] if prompt_entries else None
    if len(prompt_entries) > 1:
        mock.problems.append(f"{name}: {len(prompt_entries)} prompt entries in the log")
    if entry and entry["hinted"] != bool(hint_seen):
        mock.problems.append(f"{name}: the log says hinted={entry['hinted']}, the mock saw hint {hint_seen!r}")
    if hint_tier and (not entry or entry["rule_tier"] != hint_tier):
        mock.problems.append(f"{name}: hint tier {hint_tier} is not the logged rule_tier")
    if spec["hint"] != bool(hint_seen) and name != "short":
        mock.problems.append(f"{name}: hint = {spec['hint']} but the mock saw hint {hint_seen!r}")
    prompt = {"text": spec["prompt"], "words": len(spec["prompt"].split()), "logged": entry is not None,
              "prompt_id": entry["prompt_id"] if entry else None,
              "rule_tier": entry["rule_tier"] if entry else None,
              "hinted": bool(hint_seen), "hint_tier": hint_tier, "hint_text": hint_seen}
    launched = {tool_use_id: agent_id for r in main for tool_use_id, agent_id in r["launched"].items()}
    spawns = []
    for r in main:  # the Agent tool_use blocks of the main loop's responses
        for block in r["content"]:
            if block["type"] != "tool_use" or block["name"] != "Agent":
                continue
            brief, requested = block["input"]["prompt"], block["input"].get("model")
            runs = [s for s in mine if s["kind"] == "subagent" and s["brief"] == brief]
            resolved = sorted({s["model"] for s in runs})
            if len(resolved) != 1:
                mock.problems.append(f"{name}: the subagent of {block['id']} ran on {resolved}")
            model = resolved[0] if resolved else None
            seen = agent_entries.get(block["id"])
            if seen is None or seen["model"] != requested or seen["prompt"] != brief:
                mock.problems.append(f"{name}: spawn {block['id']} is not logged as sent: {seen}")
            if requested and tier_of(requested) != tier_of(model):
                mock.problems.append(f"{name}: spawn {block['id']} asked for {requested}, ran on {model}")
            spawns.append({
                "tool_use_id": block["id"], "message_id": r["message_id"], "agent_id": launched.get(block["id"]),
                "prompt_id": seen["prompt_id"] if seen else None,
                "description": block["input"]["description"], "subagent_type": block["input"]["subagent_type"],
                "run_in_background": block["input"].get("run_in_background", True),
                "requested_model": requested, "resolved_model": model, "tier": tier_of(model),
                "follows_hint": tier_of(model) == hint_tier if hint_tier else None,
                "matches_prompt_rule_tier": tier_of(model) == prompt["rule_tier"] if prompt["rule_tier"] else None,
                "brief_rule_tier": seen["rule_tier"] if seen else None,
                "subagent_message_ids": [s["message_id"] for s in runs]})
    api = sorted((r for r in mine if r["kind"] != "side"), key=lambda r: r["n"])
    who = {m: s["tool_use_id"] for s in spawns for m in s["subagent_message_ids"]}
    by_model: dict[str, dict[str, Any]] = {}
    for r in api:
        by_model.setdefault(r["model"], {})[r["message_id"]] = {
            "agent": who.get(r["message_id"], "main"), "request_id": r["request_id"],
            "content_blocks": len(r["content"]), "usage": flat_usage(r["usage"])}
    return {
        "name": name, "routing_hint_setting": spec["hint"],
        "transcript": f"projects/{slug(FAKE_HOME + '/' + PROJECT)}/{sid}.jsonl",
        "user_prompts": 1, "prompts": [prompt],
        "task_notifications": sum(r["notifications"] for r in main),
        "spawns": spawns,
        "responses_by_model": by_model,
        "totals_by_model": totals(api, lambda r: r["model"]),
        "totals_by_tier": totals(api, lambda r: tier_of(r["model"])),
        "main_loop_totals_by_model": totals([r for r in api if r["kind"] == "main"], lambda r: r["model"]),
        "subagent_totals_by_tier": totals([r for r in api if r["kind"] == "subagent"], lambda r: tier_of(r["model"])),
        "routing_log_entries": {source: sum(1 for e in logged if e["source"] == source)
                                for source in sorted({e["source"] for e in logged})},
    }


EXPECTED_ABOUT = (
    "Facts of the fixtures, from what the mock sent and saw and from routing.jsonl (not from the transcripts). "
    "Per session: user_prompts counts typed prompts only (task-notification turns and isMeta reminders are "
    "user records too; task_notifications says how many notifications the main loop was handed); prompts[] "
    "says whether the route hook hinted (hint_text is the line the model was given) and the rule's tier "
    "(null when the prompt was not logged: under [routing] min_words); spawns[] are the main loop's Agent "
    "calls: requested_model is the tool input's model (null: not given), resolved_model the model the "
    "subagent's requests named, tier its family, follows_hint compares tier with the hint's (null: no hint), "
    "matches_prompt_rule_tier with the logged rule tier of the prompt (shadow mode too), brief_rule_tier is "
    "the agent hook's tier for the brief; responses_by_model lists every API response (one per message.id; "
    "the transcript repeats it once per content block, content_blocks times) with the usage the mock "
    "returned and who made it (main or the spawn's tool_use_id); totals_* sum them. cli_model_usage is "
    "what `claude -p --output-format json` itself reported (modelUsage), for cross-checking. "
    "side_requests: requests without tools (none in 2.1.332 -p runs), which never reach a transcript.")


def claude_version() -> str:
    return subprocess.run([str(CLAUDE), "--version"], capture_output=True, text=True, timeout=60).stdout.strip()


def main(out: Path = HERE) -> int:
    if not CLAUDE.exists():
        print(f"no claude CLI at {CLAUDE} (set SYSTEM1_TOOLS_DIR)", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="s1rp") as tmp:
        base = Path(tmp).resolve()
        home, project, install = base / "home", base / PROJECT, base / "install"
        for path in (home, project, install):
            path.mkdir()
        for rel, text in FILES.items():
            (project / rel).parent.mkdir(parents=True, exist_ok=True)
            (project / rel).write_text(text)
        subprocess.run(["git", "init", "-q", str(project)], check=True)
        (install / "venv").symlink_to(Path(sys.prefix))  # the gateway's venv, as install.sh makes it
        config = base / "xdg" / "system1" / "config.toml"
        write_config(config, project, hint=True)
        env = {"HOME": str(home), "PATH": os.environ["PATH"], "DISABLE_AUTOUPDATER": "1",
               "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "ENABLE_TOOL_SEARCH": "false",
               "SYSTEM1_STATE_DIR": str(base / "state"), "XDG_CONFIG_HOME": str(base / "xdg"),
               "SYSTEM1_INSTALL_DIR": str(install), "SYSTEM1_SERVE_PORT": "0", "SYSTEM1_SERVE_AUTOSTART": "0"}

        def run(*args: str, extra: dict[str, str] | None = None, timeout: float = 300) -> str:
            proc = subprocess.run(list(args), env={**env, **(extra or {})}, cwd=project, capture_output=True,
                                  text=True, timeout=timeout)
            if proc.returncode != 0:
                raise SystemExit(f"{args[:4]}: exit {proc.returncode}: {proc.stdout[-2000:]}{proc.stderr[-2000:]}")
            return proc.stdout

        system1 = [sys.executable, "-m", "system1_gateway.cli"]
        market = tracked_tree(base / "clone")
        run(str(CLAUDE), "plugin", "marketplace", "add", str(market))
        run(str(CLAUDE), "plugin", "install", "system1@system1-gateway", "--scope", "user")
        run(*system1, "daemon", "start")
        results: dict[str, dict[str, Any]] = {}
        try:
            end = time.monotonic() + 60
            while json.loads(run(*system1, "daemon", "status")).get("health") != "ok":
                if time.monotonic() > end:
                    raise SystemExit("the daemon did not become ready")
                time.sleep(0.3)
            with ReportMock(project) as api:
                api_env = {"ANTHROPIC_BASE_URL": api.url, "ANTHROPIC_API_KEY": "sk-ant-api03-mock"}
                for name, spec in SESSIONS.items():
                    write_config(config, project, hint=spec["hint"])
                    api.session = name
                    results[name] = json.loads(run(str(CLAUDE), "-p", spec["prompt"], "--output-format", "json",
                                                   "--allowedTools", "Agent", "Read", extra=api_env))
                    print(f"{name}: {results[name]['session_id']}", file=sys.stderr)
                time.sleep(1)  # late side requests, if any
        finally:
            subprocess.run([*system1, "daemon", "stop"], env=env, capture_output=True, timeout=60)
        log_file = base / "state" / "logs" / "routing.jsonl"
        log = [json.loads(line) for line in log_file.read_text().splitlines() if line.strip()]
        sanitize = sanitizer(base, project, home)
        sessions = {results[name]["session_id"]: session_facts(name, results[name]["session_id"], api, log)
                    for name in SESSIONS}
        if api.problems:
            raise SystemExit("the run does not show what the fixtures need:\n  " + "\n  ".join(api.problems))
        version = claude_version()
        out.mkdir(parents=True, exist_ok=True)
        if (out / "projects").exists():
            shutil.rmtree(out / "projects")
        copy_tree(home / ".claude" / "projects", out / "projects", sanitize)
        (out / "routing.jsonl").write_text(sanitize(log_file.read_text()))
        expected = {
            "about": EXPECTED_ABOUT,
            "claude_version": version,
            "project": f"{FAKE_HOME}/{PROJECT}",
            "slug": slug(f"{FAKE_HOME}/{PROJECT}"),
            "main_model": sorted({r["model"] for r in api.responses if r["kind"] == "main"}),
            "usage_scheme": "response n (message id msg_mock{n:06d}, request id req_mock{n:06d}): input 100n+1, "
                            "output 10n+2, cache read 1000n+3, cache write 5m 100n+4 + 1h n+5 "
                            "(= cache_creation_input_tokens)",
            "sessions": sessions,
            "side_requests": {r["message_id"]: {"session": r["session"], "model": r["model"],
                                                "usage": flat_usage(r["usage"])}
                              for r in api.responses if r["kind"] == "side"},
            "routing_log": {"entries": len(log), "by_source": {s: sum(1 for e in log if e["source"] == s)
                                                              for s in sorted({e["source"] for e in log})}},
            "cli_model_usage": {results[name]["session_id"]: {
                model: {k: v for k, v in usage.items() if k.endswith("Tokens") and k != "maxOutputTokens"}
                for model, usage in results[name].get("modelUsage", {}).items()} for name in SESSIONS},
        }
        (out / "expected.json").write_text(sanitize(json.dumps(expected, indent=1, ensure_ascii=False)) + "\n")
    total = sum(p.stat().st_size for p in out.rglob("*") if p.is_file() and p.name != "make_fixtures.py")
    print(f"wrote {out} ({total // 1024} KB) with {version}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]) if len(sys.argv) > 1 else HERE))
