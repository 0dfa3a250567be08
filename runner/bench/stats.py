"""The statistics of the bench: percentiles, medians, ratios and a sample's summary (pure)."""

from __future__ import annotations

import math
from collections.abc import Sequence

from runner.core.outcomes import JsonValue


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0..100), linear between closest ranks (numpy's default, R's type 7)."""
    if not values:
        raise ValueError("a percentile needs at least one sample")
    if not 0 <= q <= 100:
        raise ValueError(f"percentile {q} is outside 0..100")
    ordered = sorted(values)
    position = (len(ordered) - 1) * q / 100
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def median(values: Sequence[float]) -> float:
    return percentile(values, 50)


def ratio(numerator: float | None, denominator: float | None) -> float | None:
    """``numerator / denominator``; None when either is missing or the denominator is not positive."""
    if numerator is None or denominator is None or denominator <= 0:
        return None
    return numerator / denominator


def summarise(values: Sequence[float], digits: int = 4) -> dict[str, float]:
    """n, p50, p95, min, max and mean of a sample (empty: n 0 and nothing else)."""
    if not values:
        return {"n": 0}
    return {
        "n": len(values),
        "p50": round(percentile(values, 50), digits),
        "p95": round(percentile(values, 95), digits),
        "min": round(min(values), digits),
        "max": round(max(values), digits),
        "mean": round(sum(values) / len(values), digits),
    }


def samples(values: Sequence[float], digits: int = 3) -> list[JsonValue]:
    """A sample as written into ``detail``: rounded, in the order taken."""
    return [round(v, digits) for v in values]
