"""The Pi extension's settings file, `$PI_CODING_AGENT_DIR/system1.json` (docs/pi.md):
which backends answer a judgment, in which order.

    {"waterfall": ["jev", "openai-decisions"], "backend": "jev"}

- A missing file means Jev alone.
- `waterfall` is authoritative: when the key is there it must be a non-empty array of unique
  backend names, or the file is an error — even when `backend` is valid, because running
  some other order than the one the user wrote would be a silent surprise.
- Without `waterfall`, a string `backend` is the legacy one-backend setting; with neither, Jev
  alone; a `backend` of another type is an error. (With a `waterfall`, `backend` only mirrors
  its first entry for older readers and is not checked.)
- `openai` is an alias of `openai-decisions` (the Pi name of the OpenAI Decisions backend);
  every other name is passed on as a gateway rung name, which the gateway checks itself. A
  name must be non-empty, without commas or whitespace, since the order travels to the
  gateway as one comma-separated chain.

The TypeScript extension implements the same rules; both are tested against one table,
tests/data/pi_settings_cases.json. Stdlib only: `jev-ask` and `system1 install-pi` read it
before anything heavy is imported.
"""

from __future__ import annotations

import os
from pathlib import Path

from . import bounded_json

JEV = "jev"
OPENAI = "openai-decisions"
DEFAULT_ORDER = (JEV,)
ALIASES = {"openai": OPENAI}  # what users type → the Pi backend name
GATEWAY_NAMES = {OPENAI: "openai"}  # Pi backend name → the gateway's rung name


class PiSettingsError(ValueError):
    """The settings file is unusable; the message names the file and the problem."""


def agent_dir() -> Path:
    """Pi's agent directory: `$PI_CODING_AGENT_DIR` (with `~` expanded, as Pi does), else
    `~/.pi/agent`."""
    override = os.environ.get("PI_CODING_AGENT_DIR")
    return Path(override).expanduser() if override else Path.home() / ".pi" / "agent"


def settings_path() -> Path:
    return agent_dir() / "system1.json"


def read_order(path: str | os.PathLike[str]) -> list[str]:
    """The backend order the file sets (Pi names, aliases resolved); PiSettingsError when the
    file cannot be read or breaks a rule above."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return list(DEFAULT_ORDER)
    except UnicodeDecodeError as exc:
        raise PiSettingsError(f"{path}: not UTF-8 text (byte {exc.start})") from None
    except OSError as exc:
        raise PiSettingsError(f"{path}: cannot read: {exc.strerror or exc}") from None
    try:
        data = bounded_json.file_loads(text)
    except (ValueError, RecursionError) as exc:
        raise PiSettingsError(f"{path}: invalid JSON ({str(exc)[:200]})") from None
    if not isinstance(data, dict):
        raise PiSettingsError(f"{path}: expected a JSON object, got {_json_type(data)}")
    if "waterfall" in data:
        return _waterfall(path, data["waterfall"])
    if "backend" not in data:
        return list(DEFAULT_ORDER)
    backend = data["backend"]
    if not isinstance(backend, str):
        raise PiSettingsError(f"{path}: backend must be a string (got {_json_type(backend)}); "
                              f"or set waterfall, e.g. [\"jev\"]")
    return [_name(path, "backend", backend)]


def gateway_chain(order: list[str]) -> list[str]:
    """The order as gateway rung names (`openai-decisions` is the gateway's `openai`)."""
    return [GATEWAY_NAMES.get(name, name) for name in order]


def _waterfall(path: Path, value: object) -> list[str]:
    if not isinstance(value, list):
        raise PiSettingsError(f"{path}: waterfall must be a non-empty array of backend names "
                              f"(got {_json_type(value)})")
    if not value:
        raise PiSettingsError(f"{path}: waterfall is empty (expected at least one backend, e.g. [\"jev\"])")
    order: list[str] = []
    for index, entry in enumerate(value):
        where = f"waterfall[{index}]"
        if not isinstance(entry, str):
            raise PiSettingsError(f"{path}: {where} must be a string (got {_json_type(entry)})")
        name = _name(path, where, entry)
        if name in order:
            alias = " (openai is an alias of openai-decisions)" if name == OPENAI else ""
            raise PiSettingsError(f"{path}: waterfall lists {name!r} twice{alias} (expected each backend once)")
        order.append(name)
    return order


def _name(path: Path, where: str, value: str) -> str:
    if not value or "," in value or any(c.isspace() for c in value):
        raise PiSettingsError(f"{path}: {where} {value[:100]!r} is not a backend name (expected jev, "
                              f"openai-decisions or a gateway rung name: non-empty, no commas or spaces)")
    return ALIASES.get(value, value)


def _json_type(value: object) -> str:
    """The JSON name of a parsed value's type (the file's words, not Python's)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    names: dict[type, str] = {str: "string", list: "array", dict: "object"}
    return names.get(type(value), type(value).__name__)
