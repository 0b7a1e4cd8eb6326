"""Adaptive duration: stop a run once its per-second goodput has settled.

The seeds measure for a fixed 65 s.  On a link whose per-second figures barely move, most of
those seconds add nothing: the mean is known to a fraction of a percent after a few.  The
rule here stops a run when the 95 % confidence half-width of the mean per-second rate, after
the omitted warm-up, is within ``precision_pct`` of the mean, but never before
``min_seconds`` of measured traffic; a run that does not settle ends at the configured
maximum (iperf3's own ``-t``).  Each measurement records which rule ended it.

iperf3 3.12 (Debian bookworm, Raspberry Pi OS) has no live JSON output (``--json-stream``
came with 3.17), so the rate is sampled where every OS keeps it: the receiving interface's
byte counter, read together with the receiver's own clock so that SSH latency does not add
jitter to the rates.  The figure reported is still iperf3's receiver count, never this one.
"""

from __future__ import annotations

import itertools
import math
import statistics
from dataclasses import dataclass

# Two-sided 95 % quantiles of Student's t for 1..10 degrees of freedom; beyond that the
# Cornish-Fisher expansion below is within 0.1 %.
T95 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228)
Z95 = 1.959964

SETTLED = "settled"
MAX_DURATION = "max-duration"
FIXED = "fixed"


def t95(degrees: int) -> float:
    """Two-sided 95 % quantile of Student's t with ``degrees`` degrees of freedom."""
    if degrees < 1:
        raise ValueError("at least one degree of freedom is needed")
    if degrees <= len(T95):
        return T95[degrees - 1]
    z = Z95
    return z + (z**3 + z) / (4 * degrees) + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * degrees**2)


def half_width_pct(rates: list[float]) -> float:
    """95 % confidence half-width of the mean of ``rates``, in percent of the mean."""
    if len(rates) < 2:
        return math.inf
    mean = statistics.fmean(rates)
    if mean <= 0:
        return math.inf
    spread = statistics.stdev(rates)
    return 100.0 * t95(len(rates) - 1) * spread / math.sqrt(len(rates)) / mean


@dataclass(frozen=True)
class SettleRule:
    """When a run may stop early.  ``min_seconds`` counts measured (non-omitted) seconds."""

    min_seconds: int = 5
    precision_pct: float = 0.5

    def __post_init__(self) -> None:
        if self.min_seconds < 2:
            raise ValueError(f"adaptive minimum must be at least 2 s, got {self.min_seconds}")
        if not 0 < self.precision_pct <= 50:
            raise ValueError(f"adaptive precision must be in (0, 50] %, got {self.precision_pct}")

    def settled(self, rates: list[float]) -> bool:
        """True once enough measured seconds agree closely enough."""
        return len(rates) >= self.min_seconds and half_width_pct(rates) <= self.precision_pct


@dataclass(frozen=True)
class CounterSample:
    """A receiver's byte counter read at the receiver's own clock (seconds)."""

    clock: float
    rx_bytes: int


def per_second_rates(samples: list[CounterSample], skip_until: float) -> list[float]:
    """Bytes/s between consecutive samples taken after ``skip_until`` (receiver clock).

    A counter that went backwards (interface reset) ends nothing silently: that pair is left
    out, so the rule simply waits for more seconds.
    """
    rates = []
    kept = [s for s in samples if s.clock >= skip_until]
    for old, new in itertools.pairwise(kept):
        span = new.clock - old.clock
        if span > 0.2 and new.rx_bytes >= old.rx_bytes:
            rates.append((new.rx_bytes - old.rx_bytes) / span)
    return rates


def parse_counter_sample(text: str) -> CounterSample | None:
    """Parse ``date +%s.%N`` then the counter, one per line; ``None`` if either is missing."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if len(lines) < 2:
        return None
    try:
        return CounterSample(float(lines[0]), int(lines[1]))
    except ValueError:
        return None
