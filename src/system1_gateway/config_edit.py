"""`system1 order A B …`: rewrite `provider` and `fallback` in the config file, nothing else.

tomlkit keeps comments, formatting and every unrelated key byte for byte; only the two
values change (or are added under [gateway] when absent).
"""

from __future__ import annotations

from pathlib import Path

import tomlkit

from .config import load_config
from .errors import ConfigError
from .paths import config_path
from .providers import KINDS


def validate_order(names: list[str], providers: dict) -> None:
    if not names:
        raise ConfigError("order: give at least one provider")
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise ConfigError(f"order: {', '.join(dupes)} listed twice (the chain must be duplicate-free)")
    for name in names:
        kind = str(providers.get(name, {}).get("kind", name))
        if kind not in KINDS:
            raise ConfigError(f"order: unknown provider {name!r} (kinds: {', '.join(sorted(KINDS))}, "
                              f"or a [providers.{name}] table with a kind)")


def write_order(names: list[str], path: Path | None = None) -> Path:
    path = path or config_path()
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    try:
        doc = tomlkit.parse(text)
    except tomlkit.exceptions.ParseError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from None
    validate_order(names, doc.get("providers", {}).unwrap() if "providers" in doc else {})
    gateway = doc.get("gateway")
    if gateway is None:
        gateway = tomlkit.table()
        doc.add("gateway", gateway)
    gateway["provider"] = names[0]
    fallback = tomlkit.array()
    fallback.extend(names[1:])
    gateway["fallback"] = fallback
    new_text = tomlkit.dumps(doc)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(new_text, encoding="utf-8")
    tmp.replace(path)
    load_config(path)  # the result must load (env overrides may still apply on top)
    return path
