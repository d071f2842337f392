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


def unknown(where: str, name: str) -> str:
    """The message for a name that is neither a configured rung nor a provider kind."""
    from .providers import KINDS  # the registry module is light (no provider is imported)

    return (f"{where}: unknown provider {name[:100]!r} (expected a provider kind: {', '.join(sorted(KINDS))}, "
            f"or a [providers.<name>] table with a kind)")
