"""A per-request chain override: `"jev,openai"` → `["jev", "openai"]`, one rung name or several.

Every face spells it the same way (CLI `--chain`/`--provider`, HTTP `?chain=`/`?provider=`,
`Gateway.judge(provider=...)`), so one parser says what is wrong with it, naming the flag or
parameter it came from. Only the order is the caller's: cooldowns, consent and the audit stay
the gateway's. Stdlib only: the CLI checks an override before it knows whether the daemon
answers (tests/test_imports.py).
"""

from __future__ import annotations

SEPARATOR = ","
EXAMPLE = "rung names separated by commas, e.g. jev,openai"
# Kinds a call may name without the owner configuring them, because their defaults send no
# credential anywhere the owner did not choose: `embedded` and `mock` hold none and reach no
# endpoint; `jev` and `openai` default to the vendor's own HTTPS service that their credential
# is for (and `openai` still needs the owner's consent). Every other kind built with its defaults
# would send its fixed credential (SYSTEM1_LAYA_API_KEY, …) and the evidence to whatever process
# listens on a local port (laya and von on 127.0.0.1:8000, ollama on :11434), or has no default.
UNBOUND_KINDS = frozenset({"embedded", "mock"})
HOSTED_KINDS = frozenset({"jev", "openai"})
FREE_KINDS = UNBOUND_KINDS | HOSTED_KINDS


def split(value: str, where: str) -> list[str]:
    """The ordered rung names of an override; ValueError naming `where` when an entry is
    empty or a rung is listed twice (a chain is duplicate-free, as the configured one)."""
    if not value.strip():
        raise ValueError(f"{where}: empty (expected {EXAMPLE})")
    names = [part.strip() for part in value.split(SEPARATOR)]
    for number, name in enumerate(names, start=1):
        if not name:
            raise ValueError(f"{where}: entry {number} of {value[:200]!r} is empty (expected {EXAMPLE})")
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise ValueError(f"{where}: lists {name[:100]!r} twice (expected each rung once)")
        seen.add(name)
    return names


def permitted(name: str, tables: dict[str, str], chain: list[str]) -> bool:
    """Whether a call may name rung `name`: one the owner configured (in the chain, or a
    [providers.<name>] table, `tables` mapping those names to their kinds) of a known kind, or
    a kind whose defaults send no credential anywhere the owner did not choose (FREE_KINDS).
    Never another kind with its defaults: a caller must not make the gateway send a key where
    the owner never pointed it."""
    from ..providers import KINDS  # the registry module is light (no provider is imported)

    configured = name in tables or name in chain
    return tables.get(name, name) in KINDS and (configured or name in FREE_KINDS)


def refused(where: str, name: str, tables: dict[str, str], chain: list[str]) -> str:
    """The message for a name a call may not use, listing the ones it may."""
    names = sorted({*chain, *tables, *FREE_KINDS})
    return (f"{where}: {name[:100]!r} is not a configured rung (a call may name only the rungs the owner "
            f"configured, in the chain or as a [providers.<name>] table, or a kind whose defaults send no "
            f"credential anywhere else; here: {', '.join(names)})")
