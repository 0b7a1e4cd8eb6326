"""Fairness of parallel streams: part of a verdict (a rule may set a Jain floor) and of a trend."""

from __future__ import annotations

from collections.abc import Sequence


def jain_fairness(values: Sequence[float]) -> float | None:
    """Jain's fairness index of per-stream goodputs: 1.0 = perfectly even, 1/n = one stream.

    None when there is nothing to compare (no streams, or all at zero): never a made-up 1.0.
    """
    if not values or sum(v * v for v in values) == 0:
        return None
    return sum(values) ** 2 / (len(values) * sum(v * v for v in values))


def min_max_ratio(values: list[float] | tuple[float, ...]) -> float | None:
    """Slowest stream over fastest (the seed's pfifo_fast: 16 kbit/s against 362 Mbit/s)."""
    return min(values) / max(values) if values and max(values) > 0 else None
