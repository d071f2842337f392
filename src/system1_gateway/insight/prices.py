"""API list prices per model, for `system1 report` (shipped `prices.json`, user-overridable).

A model id is priced by the longest key it starts with at a separator, so a dated id
(`claude-sonnet-5-5-20261001`) finds its model and never a neighbour (`claude-sonnet-5`).
The user's `~/.system1-gateway/prices.json` (or `--prices FILE`) replaces the shipped table
whole; it is checked field by field.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import bounded_json
from ..paths import state_file

SHIPPED = Path(__file__).with_name("prices.json")
BUCKETS = ("input", "output", "cache_write_5m", "cache_write_1h", "cache_read")
TIERS = ("haiku", "sonnet", "opus", "fable")  # cheapest first (routing.TIERS); fable has no shipped price


class PriceError(ValueError):
    pass


@dataclass(frozen=True)
class Tokens:
    """Tokens of the five priced kinds (the four buckets, cache writes split by lifetime)."""

    input: int = 0
    output: int = 0
    cache_write_5m: int = 0
    cache_write_1h: int = 0
    cache_read: int = 0

    def __add__(self, other: "Tokens") -> "Tokens":
        return Tokens(*(getattr(self, b) + getattr(other, b) for b in BUCKETS))

    @property
    def total(self) -> int:
        return sum(getattr(self, b) for b in BUCKETS)

    def as_dict(self) -> dict[str, int]:
        return {b: getattr(self, b) for b in BUCKETS}


@dataclass(frozen=True)
class PriceTable:
    models: dict[str, dict[str, float]]
    tiers: dict[str, str]  # tier -> the model a tier alias means today (for repricing)
    date: str
    source: str
    note: str
    path: str

    def rates(self, model: str | None) -> dict[str, float] | None:
        if not model:
            return None
        best = None
        for key in self.models:
            if (model == key or model.startswith(key + "-") or model.startswith(key + "[")) and \
                    (best is None or len(key) > len(best)):
                best = key
        return self.models[best] if best else None

    def tier_rates(self, tier: str | None) -> dict[str, float] | None:
        return self.rates(self.tiers.get(tier)) if tier is not None else None

    @staticmethod
    def cost(tokens: Tokens, rates: dict[str, float] | None) -> float | None:
        if rates is None:
            return None
        return sum(getattr(tokens, b) * rates[b] for b in BUCKETS) / 1e6


def load(path: Path | None = None) -> PriceTable:
    """`path`, else the user's file when present, else the shipped table. PriceError names
    the file and the field."""
    if path is None:
        user = Path(state_file("prices.json"))
        path = user if user.exists() else SHIPPED
    try:
        raw = bounded_json.file_loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise PriceError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise PriceError(f"{path}: not JSON: {exc}") from None
    return _checked(raw, path)


def _checked(raw: Any, path: Path) -> PriceTable:
    if not isinstance(raw, dict):
        raise PriceError(f"{path}: expected an object with models, tiers, date, source")
    models = raw.get("models")
    if not isinstance(models, dict) or not models:
        raise PriceError(f"{path}: models: expected an object of model id -> rates")
    for model, rates in models.items():
        if not isinstance(rates, dict):
            raise PriceError(f"{path}: models.{model}: expected an object of rates")
        for bucket in BUCKETS:
            value = rates.get(bucket)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < 10_000:
                raise PriceError(f"{path}: models.{model}.{bucket}: expected a price in USD per million tokens, "
                                 f"got {value!r}")
    tiers = raw.get("tiers", {})
    if not isinstance(tiers, dict) or any(t not in TIERS or not isinstance(m, str) for t, m in tiers.items()):
        raise PriceError(f"{path}: tiers: expected {{\"haiku\"|\"sonnet\"|\"opus\"|\"fable\": model id}}")
    for tier, model in tiers.items():
        if not any(model == k or model.startswith(k + "-") for k in models):
            raise PriceError(f"{path}: tiers.{tier}: {model!r} has no price in models")
    return PriceTable({k: {b: float(v[b]) for b in BUCKETS} for k, v in models.items()}, dict(tiers),
                      str(raw.get("date", "?")), str(raw.get("source", "?")), str(raw.get("note", "")), str(path))
