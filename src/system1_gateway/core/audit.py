"""One metadata-only audit record per request (docs/configuration.md).

Records go to the log at INFO and are appended to `<state dir>/logs/audit.jsonl` (local
only), which later feeds reports (status counts come from the shared state). State, questions and answers are added
only when `log_level = "DEBUG"`. A failing write never fails a request.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from pathlib import Path
from typing import Any, TextIO

from ..logs import LOGGER
from ..paths import private_dir, state_file

_log = logging.getLogger(LOGGER + ".audit")
_lock = threading.Lock()
_warned = False


def audit_path() -> Path:
    return Path(state_file("logs", "audit.jsonl"))


_handle: tuple[str, TextIO] | None = None  # kept open: one append per request, no open/close


def _file() -> TextIO:
    global _handle
    path = state_file("logs", "audit.jsonl")
    if _handle is None or _handle[0] != path:
        if _handle is not None:
            _handle[1].close()
        private_dir(os.path.dirname(path))
        # The owner's only, whatever the umask: with DEBUG logging a record holds the evidence.
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        if os.name != "nt":
            os.fchmod(fd, 0o600)
        _handle = (path, os.fdopen(fd, "a", encoding="utf-8"))
    return _handle[1]


def record(entry: dict[str, Any], debug: dict[str, Any] | None = None) -> None:
    global _warned
    line = {"time": time.strftime("%Y-%m-%dT%H:%M:%S%z"), **entry}
    if debug is not None:
        line["debug"] = debug
    # ASCII escapes: a lone surrogate or any other odd character can never fail the write.
    text = json.dumps(line, ensure_ascii=True, default=str)
    if _log.isEnabledFor(logging.INFO):
        _log.info("audit %s", text)
    try:
        with _lock:
            fh = _file()
            fh.write(text + "\n")
            fh.flush()  # one write(2) per record: lines from concurrent processes never interleave
    except OSError as exc:
        if not _warned:
            _warned = True
            _log.warning("audit log not writable (%s); continuing without it", exc)
