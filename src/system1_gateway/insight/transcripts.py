"""Claude Code transcripts, read as a stream in constant memory.

Layout (as written by claude 2.1.332): `<root>/<slug>/<session>.jsonl`
for the main loop and `<root>/<slug>/<session>/subagents/agent-<agentId>.jsonl` for each
subagent, root `~/.claude/projects` (`$CLAUDE_CONFIG_DIR/projects` when set). One JSON
record per line; the format is internal to Claude Code and changes between versions, so
every field is optional here and nothing in a file can make a reader raise.

Why it is fast and small: a file is never loaded whole. Lines are read one at a time with a
size cap; a caller names byte substrings ("needles") a line must contain to be worth
parsing, so the bulk of a transcript (tool output, the `api-request*` and `prompt_snapshot`
records that repeat the system prompt and tool definitions) is skipped by a substring test
and never reaches `json.loads`. The needles are spelled as Claude Code (Node's
JSON.stringify) writes records: no space after ':' or ','. A line longer than MAX_LINE is
skimmed: only its first and last SKIM_KEEP bytes are kept, and callers salvage what they
need from those by regex.

Duplicates: `--resume --fork-session` and compaction copy records into another session file
with their `uuid` (RAN: a fork repeats the parent's spawn records and its queued
notifications). `iter_records(seen=…)` drops a uuid seen before; `iter_usage` counts one API
response once (by `requestId` where present, else `message.id`, the last record of a
response winning: a response is written as one record per content block, each repeating the
usage); `iter_spawn_events` callers key spawns by tool_use id. Memory then grows with the
number of relevant records (spawns, API responses), not with bytes.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Union

from .. import bounded_json

MAX_LINE = 4 << 20  # a longer line is skimmed, not parsed (tool output that large is never a spawn record)
SKIM_KEEP = 64 << 10  # bytes kept at each end of a skimmed line
SKIM_CHUNK = 256 << 10  # the rest of a skimmed line is read this much at a time
READ_BUFFER = 1 << 20
TEXT_KEEP = 3000  # characters of a brief or report kept for the outcome heuristics (head + tail)
AGENT_TOOLS = ("Agent", "Task")  # `Task` is the pre-2.1.63 name, still an alias
SYNTHETIC_MODEL = "<synthetic>"  # Claude Code's own stand-in message (an API error), not a model


def default_root() -> Path:
    config = os.environ.get("CLAUDE_CONFIG_DIR")
    return (Path(config).expanduser() if config else Path.home() / ".claude") / "projects"


@dataclass(frozen=True, slots=True)
class TranscriptFile:
    path: Path
    project: str  # the slug directory: the working directory with non-alphanumerics as '-'
    session_id: str
    agent_id: str | None  # None: the main loop's file; else the subagent's id (agent-<id>.jsonl)
    size: int
    mtime: float


@dataclass
class Stats:
    """What one scan read and what it could not use (counts; a few examples, not every line)."""

    files: int = 0
    bytes: int = 0
    lines: int = 0
    parsed: int = 0
    # Lines are counted as bad only when they were parsed, i.e. passed the caller's byte
    # pre-check: a broken line that could not have mattered is not worth a warning.
    bad_lines: int = 0  # not JSON or not an object (a truncated last line is counted apart)
    truncated: int = 0  # a file's last line cut short (the writer was still running or crashed)
    skimmed: int = 0  # longer than MAX_LINE: only its ends were looked at
    duplicates: int = 0  # records seen before (resume / fork / compaction copies)
    unreadable: int = 0  # files that could not be opened or read to the end
    examples: list[str] = field(default_factory=list)

    def note(self, path: Path, lineno: int, why: str) -> None:
        if len(self.examples) < 3:
            self.examples.append(f"{path}:{lineno}: {why}")


# -- files -------------------------------------------------------------------------------------

def _entries(path: Path) -> list[os.DirEntry]:
    try:
        with os.scandir(path) as it:
            return sorted(it, key=lambda e: e.name)
    except OSError:  # vanished, unreadable, not a directory: nothing to read there
        return []


def _jsonl_under(path: Path) -> Iterator[os.DirEntry]:
    for entry in _entries(path):
        if entry.is_dir(follow_symlinks=False):
            yield from _jsonl_under(Path(entry.path))
        elif entry.name.endswith(".jsonl") and entry.is_file():
            yield entry


def _file(entry: os.DirEntry, project: str, session: str, agent_id: str | None) -> TranscriptFile | None:
    try:
        st = entry.stat()
    except OSError:
        return None
    return TranscriptFile(Path(entry.path), project, session, agent_id, st.st_size, st.st_mtime)


def iter_files(root: Path | str, since: float | None = None, project: str | None = None) -> Iterator[TranscriptFile]:
    """Every transcript under `root`, each session's main file first and then its subagents'
    (sorted by name, so a scan is deterministic). `since` (epoch seconds) keeps the sessions
    with a file modified at or after it, whole; `project` keeps slugs containing it."""
    for slug in _entries(Path(root)):
        if not slug.is_dir() or (project and project not in slug.name):
            continue
        entries = _entries(Path(slug.path))
        mains = {e.name[:-6]: e for e in entries if e.name.endswith(".jsonl") and e.is_file()}
        dirs = {e.name: e for e in entries if e.is_dir(follow_symlinks=False)}
        for session in sorted(set(mains) | _session_dirs(dirs)):
            files: list[TranscriptFile | None] = []
            if session in mains:
                files.append(_file(mains[session], slug.name, session, None))
            if session in dirs:
                for entry in _jsonl_under(Path(dirs[session].path) / "subagents"):
                    stem = entry.name[:-6]
                    files.append(_file(entry, slug.name, session, stem[6:] if stem.startswith("agent-") else stem))
            found = [f for f in files if f is not None]
            if since is not None and not any(f.mtime >= since for f in found):
                continue
            yield from found


def _session_dirs(dirs: dict[str, os.DirEntry]) -> set[str]:
    """Session directories (they hold `subagents/`), not e.g. the `memory/` directory."""
    return {name for name, entry in dirs.items() if os.path.isdir(os.path.join(entry.path, "subagents"))}


# -- lines and records -------------------------------------------------------------------------

def iter_lines(path: Path | str, stats: Stats | None = None,
               max_line: int = MAX_LINE) -> Iterator[tuple[int, bytes, bytes | None]]:
    """(line number from 1, line, tail). A line is yielded with its newline (json.loads does
    not mind) and tail None. A line longer than `max_line` is read on in chunks and yielded
    as its first SKIM_KEEP bytes with its last SKIM_KEEP bytes as `tail`: memory stays
    bounded whatever the file holds. An unreadable file yields nothing (counted in stats)."""
    stats = stats if stats is not None else Stats()
    try:
        f = open(path, "rb", buffering=READ_BUFFER)  # noqa: SIM115 - only open's error is caught here; closed below
    except OSError as exc:
        stats.unreadable += 1
        stats.note(Path(path), 0, f"unreadable: {exc.strerror or exc}")
        return
    stats.files += 1
    try:
        yield from _lines(f, path, stats, max_line)
    finally:
        f.close()


def _lines(f: Any, path: Path | str, stats: Stats, max_line: int) -> Iterator[tuple[int, bytes, bytes | None]]:
    # readline(limit) on a buffered binary file: C speed, and never more than `limit` bytes
    readline = f.readline
    n = 0
    while True:
        try:
            line = readline(max_line)
        except OSError as exc:
            stats.unreadable += 1
            stats.note(Path(path), n + 1, f"read error: {exc.strerror or exc}")
            return
        if not line:
            return
        n += 1
        stats.lines += 1
        stats.bytes += len(line)
        if len(line) < max_line or line.endswith(b"\n"):
            yield n, line, None
            continue
        head, tail = line[:SKIM_KEEP], line[-SKIM_KEEP:]
        del line  # the rest is read in small chunks: at most one capped line is ever held
        while True:
            chunk = readline(SKIM_CHUNK)
            if not chunk:
                break
            stats.bytes += len(chunk)
            tail = (tail + chunk)[-SKIM_KEEP:]
            if chunk.endswith(b"\n"):
                break
        stats.skimmed += 1
        yield n, head, tail


def parse_line(line: bytes, path: Path, lineno: int, stats: Stats) -> dict[str, Any] | None:
    """The JSON object on one line, None (counted) when it is not one. A line without its
    newline can only be the last: a failure there is a truncated write, not a bad line."""
    try:
        record = bounded_json.loads(line)
    except (ValueError, RecursionError):
        record = None
    if isinstance(record, dict):
        stats.parsed += 1
        return record
    if not line.endswith(b"\n"):
        stats.truncated += 1
        stats.note(path, lineno, "truncated last line")
    elif line.strip():
        stats.bad_lines += 1
        stats.note(path, lineno, "not a JSON object")
    return None


def iter_records(path: Path | str, stats: Stats | None = None, needles: tuple[bytes, ...] | None = None,
                 seen: set[str] | None = None) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, record) for every line that contains one of `needles` (all lines when
    None) and parses as a JSON object. With `seen`, a record whose `uuid` is in it is
    dropped as a duplicate (and every uuid yielded is added): pass one set across files."""
    stats = stats if stats is not None else Stats()
    path = Path(path)
    for n, line, tail in iter_lines(path, stats):
        if tail is not None or (needles and not any(needle in line for needle in needles)):
            continue
        record = parse_line(line, path, n, stats)
        if record is None:
            continue
        if seen is not None:
            uuid = record.get("uuid")
            if isinstance(uuid, str):
                if uuid in seen:
                    stats.duplicates += 1
                    continue
                seen.add(uuid)
        yield n, record


# -- usage (for `system1 report`) --------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Usage:
    """One API response's usage, as the `assistant` records carry it."""

    key: str  # requestId when present, else message.id: what makes it one response
    model: str
    session_id: str
    agent_id: str | None
    timestamp: str
    input_tokens: int
    output_tokens: int
    cache_read_input_tokens: int
    cache_creation_input_tokens: int
    cache_5m_input_tokens: int
    cache_1h_input_tokens: int


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def iter_usage(tf: TranscriptFile, stats: Stats | None = None, seen: set[str] | None = None) -> Iterator[Usage]:
    """One Usage per API response in the file (its last record wins), in first-seen order;
    with `seen` (one set across files) a response copied into another file counts once.
    Claude Code's stand-in `<synthetic>` messages (API errors) are not responses."""
    latest: dict[str, Usage] = {}
    for _, record in iter_records(tf.path, stats, needles=(b'"type":"assistant"',)):
        message = record.get("message")
        if record.get("type") != "assistant" or not isinstance(message, dict):
            continue
        usage, model = message.get("usage"), message.get("model")
        request = record.get("requestId")
        key = request if isinstance(request, str) and request else message.get("id")
        if not isinstance(usage, dict) or not isinstance(model, str) or model == SYNTHETIC_MODEL \
                or not isinstance(key, str) or not key:
            continue
        cache = c if isinstance(c := usage.get("cache_creation"), dict) else {}
        latest[key] = Usage(key, model, _str(record.get("sessionId")) or tf.session_id, tf.agent_id,
                            _str(record.get("timestamp")), _int(usage.get("input_tokens")),
                            _int(usage.get("output_tokens")), _int(usage.get("cache_read_input_tokens")),
                            _int(usage.get("cache_creation_input_tokens")),
                            _int(cache.get("ephemeral_5m_input_tokens")), _int(cache.get("ephemeral_1h_input_tokens")))
    for key, usage in latest.items():
        if seen is not None:
            if key in seen:
                if stats is not None:
                    stats.duplicates += 1
                continue
            seen.add(key)
        yield usage


def model_family(model: str | None) -> str | None:
    """'haiku' / 'sonnet' / 'opus' / 'fable' for a Claude model id or alias, else the id itself."""
    if not model:
        return None
    lowered = model.lower()
    for family in ("haiku", "sonnet", "opus", "fable"):
        if family in lowered:
            return family
    return model


# -- spawns ------------------------------------------------------------------------------------

@dataclass(slots=True)
class SpawnCall:
    """An Agent (or Task) tool_use in an assistant record: the spawn as requested."""

    tool_use_id: str
    session_id: str
    context: str | None  # the spawning agent's id (None: the main loop)
    path: Path
    line: int
    timestamp: str
    message_id: str  # spawns in one API response ran in parallel: never a redo of each other
    description: str
    brief: str  # the prompt, head and tail only (TEXT_KEEP)
    subagent_type: str
    model: str | None  # the alias the orchestrator asked for; None: the default (inherit)
    background: bool | None
    parent_model: str | None  # the spawning loop's own model (what `inherit` resolves to)


@dataclass(slots=True)
class SpawnResult:
    """The tool_result of a spawn; `toolUseResult` carries Claude Code's own view of it."""

    tool_use_id: str
    timestamp: str
    is_error: bool
    status: str | None  # 'async_launched' (background), 'completed' (foreground), None (error)
    agent_id: str | None
    resolved_model: str | None
    text: str  # the error message or the foreground report (head + tail)


@dataclass(slots=True)
class TaskNotification:
    """`<task-notification>` of a background agent: a user turn, a `queued_command`
    attachment or a `queue-operation`, all with the same tags."""

    tool_use_id: str | None
    task_id: str | None  # the agent id
    status: str | None  # completed / failed / killed (RAN); stopped per the docs
    summary: str
    result: str  # the agent's report (head + tail); absent when it failed or was killed
    timestamp: str


@dataclass(slots=True)
class AgentModel:
    """The model a subagent really ran on: its file's first real assistant `message.model`."""

    agent_id: str
    model: str


SpawnEvent = Union[SpawnCall, SpawnResult, TaskNotification, AgentModel]

SPAWN_NEEDLES = (b'"name":"Agent"', b'"name":"Task"')
RESULT_NEEDLES = (b'"is_error":true', b'"resolvedModel"', b'"agentId"')
# a notification as a record's own string value (user turn, queued_command, queue-operation);
# quoted inside another string (a tool output) its quotes would be escaped
NOTIFICATION_NEEDLES = (b'"content":"<task-notification>', b'"prompt":"<task-notification>',
                        b'"text":"<task-notification>')
TOOL_USE_ID = re.compile(rb'"tool_use_id":"([^"\\]{1,200})"')
_TAGS = {name: re.compile(rf"<{name}>(.*?)</{name}>", re.S)
         for name in ("tool-use-id", "task-id", "status", "summary")}
_RESULT_TAG = re.compile(r"<result>(.*?)(?:</result>|\Z)", re.S)


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def clip(text: str, keep: int = TEXT_KEEP) -> str:
    """Head and tail of a long text (what reports put first and last is what matters)."""
    if len(text) <= keep:
        return text
    return text[: keep * 2 // 3] + "\n…\n" + text[-(keep // 3):]


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(b["text"] for b in content if isinstance(b, dict) and isinstance(b.get("text"), str))
    return ""


def parse_notification(text: str, timestamp: str = "") -> TaskNotification | None:
    start = text.find("<task-notification>")
    if start < 0:
        return None
    text = text[start:]
    tags = {name: (m.group(1).strip() if (m := rx.search(text)) else None) for name, rx in _TAGS.items()}
    result = _RESULT_TAG.search(text)
    return TaskNotification(tags["tool-use-id"], tags["task-id"], (tags["status"] or "").lower() or None,
                            (tags["summary"] or "")[:300], clip(result.group(1)) if result else "", timestamp)


def _notification_text(record: dict[str, Any]) -> str:
    """The notification a record delivers: a user turn's text, a `queued_command`
    attachment's prompt or a queue operation's content, when it *starts* with the tag (a
    tool result or a prompt that merely quotes one is not a notification)."""
    kind = record.get("type")
    texts: list[object] = []
    if kind == "user":
        message = record.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        texts = [content] if isinstance(content, str) else \
            [b.get("text") for b in content if isinstance(b, dict) and b.get("type") == "text"] \
            if isinstance(content, list) else []
    elif kind == "attachment":
        attachment = record.get("attachment")
        texts = [attachment.get("prompt")] if isinstance(attachment, dict) else []
    elif kind == "queue-operation":
        texts = [record.get("content")]
    # other types (api-request-blob, prompt_snapshot…) copy the conversation: not events
    return next((t for t in texts if isinstance(t, str) and t.lstrip().startswith("<task-notification>")), "")


def _calls(record: dict[str, Any], tf: TranscriptFile, n: int) -> Iterator[SpawnCall]:
    message = record.get("message")
    if record.get("type") != "assistant" or not isinstance(message, dict) \
            or not isinstance(message.get("content"), list):
        return
    for block in message["content"]:
        if not isinstance(block, dict) or block.get("type") != "tool_use" or block.get("name") not in AGENT_TOOLS:
            continue
        tool_id, given = block.get("id"), block.get("input")
        given = given if isinstance(given, dict) else {}
        if not isinstance(tool_id, str) or not tool_id:
            continue
        background = given.get("run_in_background")
        yield SpawnCall(tool_id, _str(record.get("sessionId")) or tf.session_id, tf.agent_id, tf.path, n,
                        _str(record.get("timestamp")), _str(message.get("id")) or _str(record.get("uuid")),
                        _str(given.get("description")), clip(_str(given.get("prompt"))),
                        _str(given.get("subagent_type")) or "general-purpose", _str(given.get("model")) or None,
                        background if isinstance(background, bool) else None, _str(message.get("model")) or None)


def _results(record: dict[str, Any], wanted: set[str]) -> Iterator[SpawnResult]:
    message = record.get("message")
    if record.get("type") != "user" or not isinstance(message, dict) \
            or not isinstance(message.get("content"), list):
        return
    blocks = [b for b in message["content"] if isinstance(b, dict) and b.get("type") == "tool_result"
              and b.get("tool_use_id") in wanted]
    extra = record.get("toolUseResult")
    extra = extra if isinstance(extra, dict) else {}  # an error's toolUseResult is a plain string
    for block in blocks:
        is_error = block.get("is_error") is True
        text = _text_of(block.get("content")) if is_error else _text_of(extra.get("content"))
        yield SpawnResult(block["tool_use_id"], _str(record.get("timestamp")), is_error,
                          None if is_error else (_str(extra.get("status")) or None),
                          _str(extra.get("agentId")) or None, _str(extra.get("resolvedModel")) or None, clip(text))


def iter_spawn_events(tf: TranscriptFile, stats: Stats | None = None) -> Iterator[SpawnEvent]:
    """The spawn facts of one file, in file order: SpawnCall for each Agent/Task tool_use,
    SpawnResult for the tool_result of a spawn made earlier in the same file (where Claude
    Code writes it), TaskNotification for each notification, and AgentModel once for a
    subagent file. Lines that cannot hold any of these are skipped before parsing."""
    stats = stats if stats is not None else Stats()
    spawned: set[str] = set()
    pending_agent = tf.agent_id  # a subagent file whose model is not yet known
    for n, line, tail in iter_lines(tf.path, stats):
        if tail is not None:
            yield from _salvage(line, tail, spawned)
            continue
        if any(needle in line for needle in NOTIFICATION_NEEDLES):
            record = parse_line(line, tf.path, n, stats)
            note = parse_notification(_notification_text(record), _str(record.get("timestamp"))) if record else None
            if note is not None:
                yield note
            continue
        if b'"type":"assistant"' in line:
            if any(needle in line for needle in SPAWN_NEEDLES) or pending_agent is not None:
                record = parse_line(line, tf.path, n, stats)
                if record is None:
                    continue
                if pending_agent is not None:
                    message = record.get("message")
                    model = message.get("model") if isinstance(message, dict) else None
                    if record.get("type") == "assistant" and isinstance(model, str) and model \
                            and model != SYNTHETIC_MODEL:
                        agent_id, pending_agent = pending_agent, None
                        yield AgentModel(agent_id, model)
                for call in _calls(record, tf, n):
                    spawned.add(call.tool_use_id)
                    yield call
            continue
        if spawned and b'"tool_result"' in line and any(needle in line for needle in RESULT_NEEDLES):
            wanted = {m.decode() for m in TOOL_USE_ID.findall(line)} & spawned
            if wanted:
                record = parse_line(line, tf.path, n, stats)
                if record is not None:
                    yield from _results(record, wanted)


_SALVAGE = {key: re.compile(rb'"%s":"([^"\\]{1,200})"' % key.encode())
            for key in ("tool_use_id", "resolvedModel", "agentId", "timestamp")}


def _salvage(head: bytes, tail: bytes, spawned: set[str]) -> Iterator[SpawnEvent]:
    """What an over-long line can still tell: a spawn's result (a foreground agent's huge
    report: tool_use_id in the head, resolvedModel in the tail) or a notification whose
    tags come before its huge <result>. The report text itself is lost."""
    if any(needle in head for needle in NOTIFICATION_NEEDLES) and b'"tool_result"' not in head:
        # Claude Code writes a record's timestamp after its message: in the tail
        when = _SALVAGE["timestamp"].search(tail) or _SALVAGE["timestamp"].search(head)
        note = parse_notification(head.decode("utf-8", "replace").replace("\\n", "\n"),
                                  when.group(1).decode() if when else "")
        if note is not None:
            note.result = ""
            yield note
        return
    found = _SALVAGE["tool_use_id"].search(head)
    if found and found.group(1).decode() in spawned and b'"tool_result"' in head:
        model = _SALVAGE["resolvedModel"].search(tail)
        agent = _SALVAGE["agentId"].search(tail) or _SALVAGE["agentId"].search(head)
        is_error = b'"is_error":true' in head
        yield SpawnResult(found.group(1).decode(), "", is_error,
                          None if is_error else ("completed" if model else None),
                          agent.group(1).decode() if agent else None,
                          model.group(1).decode() if model else None, "")
