"""What the console scripts write: one JSON object per line (stdlib only).

Only the command-line faces import this (`system1`, `system1 daemon`, `jev-ask`).
"""

from __future__ import annotations

import argparse
import json
import sys

TYPE_CHECKING = False  # no `typing` on the short-lived path (docs/architecture.md)
if TYPE_CHECKING:
    from typing import Any, NoReturn, TextIO

from .model.errors import INVALID_REQUEST

EXIT_OK, EXIT_FAILED, EXIT_INVALID = 0, 1, 2


def emit(obj: dict[str, Any], pretty: bool, out: TextIO | None = None) -> None:
    """One JSON document and a newline, flushed; a lone surrogate from a request ("\\ud800")
    is escaped instead of crashing the writer."""
    out = out or sys.stdout
    text = json.dumps(obj, ensure_ascii=False, indent=2 if pretty else None)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = json.dumps(obj, ensure_ascii=True, indent=2 if pretty else None)
    out.write(text + "\n")
    out.flush()


def invalid(message: str) -> dict[str, Any]:
    """The `invalid_request` result of a command line or input the command refuses."""
    return {"status": "error", "error": {"code": INVALID_REQUEST, "message": message}}


def exit_code(result: dict[str, Any]) -> int:
    """0 answered, 2 invalid request, 1 any other error."""
    error = result.get("error")
    if not error:
        return EXIT_OK
    return EXIT_INVALID if isinstance(error, dict) and error.get("code") == INVALID_REQUEST else EXIT_FAILED


class JsonArgumentParser(argparse.ArgumentParser):
    """argparse that reports usage errors as a JSON `invalid_request` on stdout, exit 2."""

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        emit(invalid(f"command line: {message}"), pretty=False)
        sys.exit(EXIT_INVALID)
