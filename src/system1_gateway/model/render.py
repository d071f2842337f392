"""Deterministic text rendering of structured instructions, descriptions and state.

Engines read text; callers may send objects or arrays. The same JSON value always renders
to the same text (object keys in the caller's order, which JSON preserves), so prompts and
their KV-cache prefixes are stable across calls.
"""

from __future__ import annotations

from typing import Any


def render(value: Any) -> str:
    if isinstance(value, str):
        return value
    return "\n".join(_lines(value, 0))


def _scalar(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _lines(value: Any, depth: int) -> list[str]:
    pad = "  " * depth
    if isinstance(value, dict):
        out = []
        for key, item in value.items():
            if isinstance(item, (dict, list)) and item:
                out.append(f"{pad}{key}:")
                out.extend(_lines(item, depth + 1))
            else:
                out.append(f"{pad}{key}: {_scalar(item) if not isinstance(item, (dict, list)) else '(empty)'}")
        return out
    if isinstance(value, list):
        out = []
        for item in value:
            if isinstance(item, (dict, list)) and item:
                sub = _lines(item, depth + 1)
                out.append(f"{pad}- {sub[0].lstrip()}")
                out.extend(sub[1:])
            else:
                out.append(f"{pad}- {_scalar(item) if not isinstance(item, (dict, list)) else '(empty)'}")
        return out
    return [pad + _scalar(value)]
