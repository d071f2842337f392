"""JSON the gateway did not write in this process (files in the state dir, settings, engine
replies, request bodies), read so that nesting can never crash a reader.

`json.loads` raises RecursionError (not a ValueError) on a document nested about a thousand
levels deep, which every `except ValueError` let through: a crafted `calibration.json` made each
request an `internal_error`. Here it is a `json.JSONDecodeError` (a ValueError) like any other
malformed text; files that hold small records also bound the depth outright, so a document that
parses can still not be deeper than what reads it expects. Every failure is a ValueError
(JSONDecodeError; UnicodeDecodeError for bytes that are not UTF-8; the interpreter's integer
digit limit), never another exception. Stdlib only (the hooks use it).
"""

from __future__ import annotations

import json

TYPE_CHECKING = False
if TYPE_CHECKING:  # no `typing` on the short-lived path (docs/architecture.md)
    from typing import Any

FILE_DEPTH = 64  # far deeper than any record the gateway writes or reads from a file


def loads(text: str | bytes, max_depth: int | None = None, **kwargs: Any) -> Any:
    """`json.loads(text, **kwargs)`; json.JSONDecodeError when the text is nested deeper than
    the decoder can go, or than `max_depth` containers."""
    try:
        value = json.loads(text, **kwargs)
    except RecursionError:
        raise json.JSONDecodeError("nested too deeply to read", _doc(text), 0) from None
    if max_depth is not None and _deeper_than(value, max_depth):
        raise json.JSONDecodeError(f"nested deeper than {max_depth} levels", _doc(text), 0)
    return value


def _doc(text: str | bytes) -> str:
    return text if isinstance(text, str) else ""


def _deeper_than(value: Any, limit: int) -> bool:
    """Whether `value` holds containers more than `limit` deep (iterative: no recursion)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, (dict, list)):
            if depth > limit:
                return True
            stack.extend((child, depth + 1) for child in (item.values() if isinstance(item, dict) else item))
    return False


def file_loads(text: str | bytes, **kwargs: Any) -> Any:
    """`loads` for a file of small records (state, settings, markers): at most FILE_DEPTH deep."""
    return loads(text, max_depth=FILE_DEPTH, **kwargs)
