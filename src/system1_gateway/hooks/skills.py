"""Which skills the model could load right now: the skill picker's candidates.

From the hook input when it carries a `skills` list ([{name, description}]), else from disk:
the user's `~/.claude/skills/*/SKILL.md`, the project's `.claude/skills/*/SKILL.md`, and every
enabled plugin's `skills/*/SKILL.md` (named `<plugin>:<skill>`), minus the skills marked
`disable-model-invocation` (the model cannot load those, so they are never suggested), and
minus names outside Claude Code's rule (`NAME`).
"""

from __future__ import annotations

import os
import re
import stat

from .. import bounded_json

TYPE_CHECKING = False  # no `typing` on the short-lived path (docs/architecture.md)
if TYPE_CHECKING:
    from typing import Any

# Claude Code's own rule for a skill's name (lowercase, digits, hyphens, at most 64), and for a
# plugin's skill `<plugin>:<skill>`. A name reaches the model word for word in the hint: one
# that breaks the rule (a repository's SKILL.md may say anything) is dropped, never shown.
NAME = re.compile(r"(?:[a-z0-9-]{1,64}:)?[a-z0-9-]{1,64}")
MAX_DESCRIPTION = 400  # characters of a description sent to the engine (the listing truncates too)
MAX_JSON_BYTES = 4 << 20  # a settings or plugin-list file; past this it is not one we read
TRUE_WORDS = {"true", "yes", "on", "1"}


def frontmatter(text: str) -> dict[str, str]:
    """The scalar keys of a SKILL.md's YAML frontmatter (the subset skills use: `key: value`,
    quoted values, and `>` / `|` block scalars). Not YAML in general, and not needed to be."""
    lines = text.splitlines()
    if not lines or lines[0].strip() != "---":
        return {}
    fields: dict[str, str] = {}
    key, block, parts = None, False, []
    for line in lines[1:]:
        if line.strip() == "---":
            break
        if block and (line.startswith((" ", "\t")) or not line.strip()):
            parts.append(line.strip())
            continue
        if key is not None and block:
            fields[key] = " ".join(p for p in parts if p)
        key, block, parts = None, False, []
        name, sep, value = line.partition(":")
        if not sep or line.startswith((" ", "\t", "#")):
            continue
        key, value = name.strip(), value.strip()
        if value in (">", "|", ">-", "|-", ">+", "|+"):
            block = True
            continue
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
            value = value[1:-1]
        fields[key] = value
        key = None
    if key is not None and block:
        fields[key] = " ".join(p for p in parts if p)
    return fields


def read_regular(path: str, limit: int) -> bytes | None:
    """The first `limit` bytes of a regular file; None for anything else. A repository is
    hostile: a FIFO named SKILL.md would block the read forever, a link to /dev/stdin would read
    the hook server's own JSON-RPC pipe. O_NONBLOCK opens a FIFO at once; fstat then refuses it."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        chunks, left = [], limit
        while left > 0 and (chunk := os.read(fd, min(left, 65536))):
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(fd)


def _skill_dir_entries(root: str, prefix: str = "") -> list[dict[str, str]]:
    found: list[dict[str, str]] = []
    try:
        names = sorted(os.listdir(root))
    except OSError:
        return found
    for name in names:
        data = read_regular(os.path.join(root, name, "SKILL.md"), 16384)
        try:
            meta = frontmatter(data.decode("utf-8")) if data is not None else None
        except UnicodeDecodeError:
            continue
        if meta is None:
            continue
        if meta.get("disable-model-invocation", "").lower() in TRUE_WORDS:
            continue
        description = " ".join((meta.get("description", "") + " " + meta.get("when_to_use", "")).split())
        if description:
            found.append({"name": prefix + (meta.get("name") or name), "description": description[:MAX_DESCRIPTION]})
    return found


def _read_json(path: str) -> Any:
    data = read_regular(path, MAX_JSON_BYTES)
    try:
        return bounded_json.file_loads(data) if data is not None else None
    except ValueError:
        return None


def _enabled_plugin_roots(claude_dir: str, project_dir: str) -> list[tuple[str, str]]:
    """(plugin name, install path) of each plugin enabled in user or project settings."""
    enabled: dict[str, bool] = {}
    for settings in (os.path.join(claude_dir, "settings.json"), os.path.join(project_dir, ".claude", "settings.json"),
                     os.path.join(project_dir, ".claude", "settings.local.json")):
        data = _read_json(settings)
        if isinstance(data, dict) and isinstance(data.get("enabledPlugins"), dict):
            enabled.update({k: bool(v) for k, v in data["enabledPlugins"].items()})
    installed = _read_json(os.path.join(claude_dir, "plugins", "installed_plugins.json"))
    plugins = installed.get("plugins") if isinstance(installed, dict) else None
    roots = []
    for key, on in enabled.items():
        records = plugins.get(key) if isinstance(plugins, dict) else None
        if not on or not isinstance(records, list) or not records:
            continue
        path = records[-1].get("installPath") if isinstance(records[-1], dict) else None
        if isinstance(path, str):
            roots.append((key.partition("@")[0], path))
    return roots


def candidates(payload: dict[str, Any], project_dir: str) -> list[dict[str, str]]:
    given = payload.get("skills")
    if isinstance(given, list):
        return [{"name": s["name"], "description": " ".join(str(s.get("description", "")).split())[:MAX_DESCRIPTION]}
                for s in given if isinstance(s, dict) and isinstance(s.get("name"), str) and NAME.fullmatch(s["name"])
                and s.get("description")]
    claude_dir = os.environ.get("CLAUDE_CONFIG_DIR") or os.path.join(os.path.expanduser("~"), ".claude")
    found = _skill_dir_entries(os.path.join(claude_dir, "skills"))
    found += _skill_dir_entries(os.path.join(project_dir, ".claude", "skills"))
    for plugin, root in _enabled_plugin_roots(claude_dir, project_dir):
        found += _skill_dir_entries(os.path.join(root, "skills"), prefix=plugin + ":")
    unique: dict[str, dict[str, str]] = {}
    for skill in found:
        if NAME.fullmatch(skill["name"]):
            unique.setdefault(skill["name"], skill)
    return list(unique.values())
