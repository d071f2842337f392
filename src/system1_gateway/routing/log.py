"""The routing log, `<state>/logs/routing.jsonl`: one JSON object per line, appended by the hooks
(a prompt's routing features, a guarded command, a spawn's brief), read by `label`,
`calibrate`, `evaluate`, `report` and SessionStart, and rewritten in place only by
`outcomes --apply`.

Record shapes (every record has `ts`, `source`, `session_id`, `prompt_id`, `repo`, `cwd`):
  source "prompt": `prompt`, `features` ({name: {"answer": bool, "confidence": float}}),
                   `rule_tier`, `hinted`
  source "agent":  `prompt` (the brief), `features`, `tool_use_id`, `rule_tier`, …, and the
                   outcome fields `outcome`, `outcome_reason`, `outcome_tier`, `outcome_source`,
                   `outcome_doubtful` once `outcomes --apply` or a person set them
  source "guard":  `command`, `features` ({"destructive": …}), `tool_use_id`, `mode` (Claude
                   Code's permission mode, null when the input had none), `decision` ("ask",
                   "deny", "context" or null) and `asked` (decision == "ask")

Stdlib only (the hooks append on every prompt). The file and its directory are the owner's
only (0600 / 0700).
"""

from __future__ import annotations

import json
import os
import time

TYPE_CHECKING = False  # no `typing` on the short-lived path (docs/architecture.md)
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any, Callable, Iterator

from .. import bounded_json
from ..paths import private_dir, state_file


def path() -> str:
    return state_file("logs", "routing.jsonl")


def append(record: dict[str, Any], where: str | None = None) -> str:
    """Appends one record (one write on an O_APPEND descriptor, so concurrent hooks never
    interleave lines; after a torn last line, on a line of its own); returns the file's path."""
    where = where or path()
    if not os.path.isdir(os.path.dirname(where)):  # one stat on the hooks' path; made 0700 once
        private_dir(os.path.dirname(where))
    line = (json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")
    fd = os.open(where, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        size = os.fstat(fd).st_size
        if size:
            os.lseek(fd, size - 1, os.SEEK_SET)  # (writes go to the end whatever the offset: O_APPEND)
            if os.read(fd, 1) != b"\n":  # a torn last line: ours starts a line of its own
                line = b"\n" + line
        os.write(fd, line)
    finally:
        os.close(fd)
    return where


def record(source: str, session_id: str | None, prompt_id: str | None, repo: str | None,
           cwd: str) -> dict[str, Any]:
    """The fields every record starts with."""
    return {"ts": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "source": source,
            "session_id": session_id or None, "prompt_id": prompt_id or None, "repo": repo, "cwd": cwd}


def features(answers: dict[str, tuple[bool, float]]) -> dict[str, Any]:
    """The `features` field: {name: {"answer": yes, "confidence": p}}."""
    return {name: {"answer": yes, "confidence": round(conf, 4)} for name, (yes, conf) in answers.items()}


def entries(where: str | Path | None = None, only: str | None = None) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, record) of each readable JSON-object line, streamed; other lines are
    skipped, and a missing or unreadable file has none. `only`: a text a line must contain to be
    parsed at all (a cheap filter, e.g. '"source":"prompt"' for the prompt records)."""
    try:
        handle = open(where or path(), encoding="utf-8", errors="replace")  # noqa: SIM115 - closed by the with below
    except OSError:
        return
    with handle:
        for number, line in enumerate(handle, start=1):
            if only is not None and only not in line:
                continue
            try:
                entry = bounded_json.loads(line)
            except (ValueError, RecursionError):
                continue
            if isinstance(entry, dict):
                yield number, entry


def rewrite(log: Path, revise: Callable[[bytes], bytes | None]) -> bool:
    """Rewrites the log line by line (`revise` returns the new line, or None to keep it byte
    for byte): a new file in the same directory, then one rename, the old content kept as
    `<log>.bak`. Nothing is written when no line changes; returns whether the file was replaced.

    Concurrency: the hooks append without a lock (one O_APPEND write per line), so instead of
    locking them out this copies what they append during the rewrite: bytes past the point read
    are copied before the rename, and once more after it (a hook that opened the old name just
    before the rename writes into the old file, which is still open here). Two rewrites are
    serialised by an flock on `<log>.lock`, which hooks never take."""
    written = False
    with _Lock(log), open(log, "rb") as src:
        tmp, bak = log.with_name(f".{log.name}.{os.getpid()}.tmp"), log.with_name(log.name + ".bak")
        bak_tmp = bak.with_name(f".{bak.name}.{os.getpid()}.tmp")
        try:
            changed = False
            with _private(tmp) as out, _private(bak_tmp) as old:
                for line in src:
                    old.write(line)
                    new = revise(line)
                    changed = changed or new is not None
                    out.write(line if new is None else new)
                if changed:
                    rest = src.read()  # appended while we read
                    old.write(rest)
                    out.write(rest)
                    out.flush()
                    os.fsync(out.fileno())
            if changed:
                os.replace(bak_tmp, bak)
                os.replace(tmp, log)
                written = True
        finally:
            for leftover in (tmp, bak_tmp):
                leftover.unlink(missing_ok=True)
        if written:
            time.sleep(0.05)  # a hook that opened the old name just before the rename
            late = src.read()
            if late:
                fd = os.open(log, os.O_WRONLY | os.O_APPEND)
                try:
                    os.write(fd, late)
                finally:
                    os.close(fd)
    return written


def _private(where: Path) -> Any:
    return os.fdopen(os.open(where, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "wb")


class _Lock:
    def __init__(self, log: Path):
        self.path = log.with_name(log.name + ".lock")
        self.fd: int | None = None

    def __enter__(self) -> None:
        try:
            import fcntl
        except ImportError:  # Windows: no flock; a concurrent second rewrite is the user's doing
            return
        self.fd = os.open(self.path, os.O_WRONLY | os.O_CREAT, 0o600)
        fcntl.flock(self.fd, fcntl.LOCK_EX)

    def __exit__(self, *exc: Any) -> None:
        if self.fd is not None:
            os.close(self.fd)  # closing releases the flock
