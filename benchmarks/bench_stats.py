"""The one percentile every benchmark script prints, so their p50s and p95s compare."""

from __future__ import annotations

import math


def pct(values: list[float], q: float) -> float:
    """The `q` quantile (0..1) of `values` by the nearest rank on the sorted values
    (index round(q * (n - 1))): an observed value, never an interpolation. NaN when empty."""
    if not values:
        return math.nan
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]
