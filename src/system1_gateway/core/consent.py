"""Consent to billed engines (docs/waterfall.md): a rung of a billed kind runs only after a person
confirmed the billing precautions for it (`system1 order`, interactively).

The record lives in the state directory (`consents.json`, rung name → when). It is checked
where the chain runs, so every way a billed rung can enter the order — `system1 order`, a
hand edit, `SYSTEM1_FALLBACK`, `--provider` — is covered: without a record the rung is
skipped, never called.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from .. import bounded_json
from ..paths import state_dir, write_atomic

BILLED_KINDS = frozenset({"openai"})


def _path() -> Path:
    return state_dir() / "consents.json"


def recorded() -> dict[str, str]:
    try:
        data = bounded_json.file_loads(_path().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else {}


def save(consents: dict[str, str]) -> None:
    write_atomic(_path(), json.dumps(consents, indent=1))


def now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S%z")


def missing(name: str, kind: str) -> str | None:
    """Why rung `name` may not run, or None when it needs no consent or has one."""
    if kind not in BILLED_KINDS or name in recorded():
        return None
    return (f"no billing consent recorded for {name!r} (kind {kind}); run `system1 order …` with it in a "
            f"terminal to confirm the billing precautions")
