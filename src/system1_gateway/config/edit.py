"""`system1 order A B …`: rewrite `provider` and `fallback` in the config file, nothing else;
`system1 routing log|hint|set`: rewrite `[routing] mode` (and `enabled`), nothing else.

tomlkit keeps comments, formatting and every unrelated key byte for byte; only the two
values change (or are added under [gateway] when absent). The new text is validated as a
config file (without environment overrides: they are not what is written) before anything
touches the disk, then replaces the old file atomically — a rejected order leaves the file
as it was.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import tomlkit

from ..core import consent
from ..model.errors import ConfigError
from ..paths import config_path, write_atomic
from ..providers import KINDS
from .settings import parse_config_text

BILLED_KINDS = consent.BILLED_KINDS


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


def _gate(names: list[str], current: list[str], providers: dict, confirm: Callable[[str], bool] | None) -> None:
    """Billed rungs need an interactive yes when they join the order; leaving revokes it."""
    consents = consent.recorded()
    billed = [n for n in names if str(providers.get(n, {}).get("kind", n)) in BILLED_KINDS]
    for name in list(consents):
        if name not in names:
            consents.pop(name)  # removed from the order: adding it again asks again
    for name in billed:
        if name in current and name in consents:
            continue  # reordering an approved rung does not ask again
        if confirm is None:
            consent.save(consents)
            raise ConfigError(f"order: adding {name!r} needs an interactive confirmation of the billing "
                              f"precautions; run `system1 order {' '.join(names)}` in a terminal")
        if not confirm(BILLING_PRECAUTIONS.format(name=name)):
            consent.save(consents)
            raise ConfigError(f"order: {name!r} not added (the billing precautions were not confirmed)")
        consents[name] = consent.now()
    consent.save(consents)


def write_order(names: list[str], path: Path | None = None,
                confirm: Callable[[str], bool] | None = None) -> Path:
    """Rewrite the chain; `confirm` asks a person (None: headless, billed rungs refused)."""
    path = path or config_path()
    doc = _document(path)
    providers = doc.get("providers", {}).unwrap() if "providers" in doc else {}
    if not isinstance(providers, dict):
        raise ConfigError(f"{path}: 'providers' must contain one table per provider, [providers.<name>]")
    validate_order(names, {k: v for k, v in providers.items() if isinstance(v, dict)})
    gateway = doc.get("gateway")
    if gateway is not None and not isinstance(gateway, dict):
        raise ConfigError(f"{path}: 'gateway' must be a table")
    current = [gateway.get("provider", "embedded"), *list(gateway.get("fallback", []))] if gateway else ["embedded"]
    if gateway is None:
        gateway = tomlkit.table()
        doc.add("gateway", gateway)
    gateway["provider"] = names[0]
    fallback = tomlkit.array()
    fallback.extend(names[1:])
    gateway["fallback"] = fallback
    new_text = tomlkit.dumps(doc)
    parse_config_text(new_text, path)  # the file as written must load; raises ConfigError
    _gate(names, [str(n) for n in current], providers, confirm)
    _replace(path, new_text)
    return path


def _document(path: Path) -> tomlkit.TOMLDocument:
    """The config file as an editable TOML document (comments kept; empty when there is none)."""
    try:
        text = path.read_text(encoding="utf-8") if path.exists() else ""
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read: {exc}") from None
    try:
        return tomlkit.parse(text)
    except tomlkit.exceptions.ParseError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from None


def _replace(path: Path, text: str) -> None:
    """Write `text` to `path` atomically (a crash leaves the old file or the new one)."""
    try:
        mode = path.stat().st_mode & 0o777 if path.exists() else 0o600  # the user's file keeps its mode
        write_atomic(path, text, mode)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot write: {exc.strerror or exc}") from None


def write_routing_mode(mode: str, path: Path | None = None) -> Path:
    """Set `[routing] mode` (and `enabled = true` for "hint" and "set"; the older `hint` key is
    removed: the mode says it). Comments and every other key are kept; the result must load."""
    from .tables import ROUTING_MODES

    if mode not in ROUTING_MODES:
        raise ConfigError(f"routing: expected one of {', '.join(ROUTING_MODES)}, got {mode!r}")
    path = path or config_path()
    doc = _document(path)
    routing = doc.get("routing")
    if routing is not None and not isinstance(routing, dict):
        raise ConfigError(f"{path}: 'routing' must be a table")
    if routing is None:
        routing = tomlkit.table()
        doc.add("routing", routing)
    if mode in ("hint", "set"):
        routing["enabled"] = True
    routing["mode"] = mode
    if "hint" in routing:
        del routing["hint"]
    new_text = tomlkit.dumps(doc)
    parse_config_text(new_text, path)  # the file as written must load; raises ConfigError
    _replace(path, new_text)  # (write_atomic makes the folder, 0700, when there is none)
    return path
