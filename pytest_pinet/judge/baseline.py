"""Baseline verdicts: is a result worse than the same context's recent history?

A threshold says "never below 940"; a baseline says "not worse than last week".  The band
around the baseline comes from the history's own spread, widened to a floor so that a
perfectly stable history does not turn 0.1 % of noise into an alarm.  Without enough
history the result is recorded, not failed.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class BaselinePolicy:
    """How history becomes an expectation."""

    window: int = 10  # the last N earlier measurements of the same context
    min_history: int = 2  # fewer: no baseline yet, recorded only
    spread_factor: float = 3.0  # band = factor x standard deviation ...
    min_band_percent: float = 1.0  # ... but at least this share of the baseline


@dataclass(frozen=True)
class BaselineVerdict:
    """The outcome of comparing one value with its history."""

    status: str  # "no-baseline", "within", "regression", "improvement"
    value: float
    baseline: float | None
    band: float | None
    history: int

    @property
    def regression(self) -> bool:
        """True when the value is below the baseline by more than the band."""
        return self.status == "regression"

    def explain(self) -> str:
        """One line: value, baseline, band, how much history."""
        if self.baseline is None or self.band is None:
            return f"{self.value:.1f} Mbit/s recorded; no baseline yet ({self.history} earlier results)"
        change = 100.0 * (self.value - self.baseline) / self.baseline
        return (
            f"{self.value:.1f} Mbit/s vs baseline {self.baseline:.1f} +- {self.band:.1f} "
            f"({change:+.1f} %, from {self.history} earlier results)"
        )


def judge_baseline(
    value: float, history: Sequence[float], policy: BaselinePolicy | None = None
) -> BaselineVerdict:
    """Compare ``value`` with the last ``policy.window`` values of ``history`` (oldest first)."""
    policy = policy or BaselinePolicy()
    recent = list(history)[-policy.window :]
    if len(recent) < policy.min_history:
        return BaselineVerdict("no-baseline", value, None, None, len(recent))
    baseline = statistics.median(recent)
    spread = statistics.stdev(recent) if len(recent) > 1 else 0.0
    band = max(policy.spread_factor * spread, policy.min_band_percent / 100.0 * baseline)
    if value < baseline - band:
        status = "regression"
    elif value > baseline + band:
        status = "improvement"
    else:
        status = "within"
    return BaselineVerdict(status, value, baseline, band, len(recent))
