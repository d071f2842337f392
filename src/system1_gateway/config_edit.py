"""`system1 order A B …`: rewrite `provider` and `fallback` in the config file, nothing else.

tomlkit keeps comments, formatting and every unrelated key byte for byte; only the two
values change (or are added under [gateway] when absent).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Callable

import tomlkit

from .config import load_config
from .errors import ConfigError
from .paths import config_path, state_dir
from .providers import KINDS

BILLED_KINDS = {"openai"}


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


BILLING_PRECAUTIONS = """Adding the OpenAI Decisions API (`{name}`) to the provider order: calls may be billed.
Before confirming, check on your OpenAI account that:
  - you claimed the included credits you mean to use,
  - there is no purchased (prepaid) balance that these calls could draw down,
  - auto-recharge is off.
This confirmation is consent to send decisions to OpenAI; it is not a spending cap."""


def _consents_path() -> Path:
    return state_dir() / "consents.json"


def _consents() -> dict[str, str]:
    try:
        data = json.loads(_consents_path().read_text())
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def _save_consents(consents: dict[str, str]) -> None:
    path = _consents_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(consents, indent=1))


def _gate(names: list[str], current: list[str], providers: dict, confirm: Callable[[str], bool] | None) -> None:
    """Billed rungs need an interactive yes when they join the order; leaving revokes it."""
    consents = _consents()
    billed = [n for n in names if str(providers.get(n, {}).get("kind", n)) in BILLED_KINDS]
    for name in list(consents):
        if name not in names:
            consents.pop(name)  # removed from the order: adding it again asks again
    for name in billed:
        if name in current and name in consents:
            continue  # reordering an approved rung does not ask again
        if confirm is None:
            _save_consents(consents)
            raise ConfigError(f"order: adding {name!r} needs an interactive confirmation of the billing "
                              f"precautions; run `system1 order {' '.join(names)}` in a terminal")
        if not confirm(BILLING_PRECAUTIONS.format(name=name)):
            _save_consents(consents)
            raise ConfigError(f"order: {name!r} not added (the billing precautions were not confirmed)")
        consents[name] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    _save_consents(consents)


def write_order(names: list[str], path: Path | None = None,
                confirm: Callable[[str], bool] | None = None) -> Path:
    """Rewrite the chain; `confirm` asks a person (None: headless, billed rungs refused)."""
    path = path or config_path()
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    try:
        doc = tomlkit.parse(text)
    except tomlkit.exceptions.ParseError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from None
    providers = doc.get("providers", {}).unwrap() if "providers" in doc else {}
    validate_order(names, providers)
    gw = doc.get("gateway", {})
    current = [gw.get("provider", "embedded"), *list(gw.get("fallback", []))] if gw else ["embedded"]
    _gate(names, [str(n) for n in current], providers, confirm)
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
