"""Baseline verdicts: is a result worse than the same context's recent history?

A threshold says "never below 940"; a baseline says "not worse than last week".  The band
around the baseline comes from the history's own spread, widened to a floor so that a
perfectly stable history does not turn 0.1 % of noise into an alarm.  Without enough
history the result is recorded, not failed.

The spread of a short history is itself uncertain: two runs that happen to agree say little
about how much the next one may differ.  The band is therefore a one-sided 99.84 %
prediction bound for one more run, ``t(n-1) x s x sqrt(1 + 1/n)`` with Student's t, so it is
wide while history is short and narrows as it grows (measured: a second run of loop-device
disk and loopback UDP contexts differs from the first by 5-30 %, and a 3-sigma band from two
runs flagged 32 of them as regressions).  The other contexts of the board know the noise
too: with their prior (:mod:`.spread_prior`) the spread and its degrees of freedom are
theirs and the context's together, and a young context's band is the board's, not t(1)'s.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from .spread_prior import SpreadPrior, moderated
from .stats import prediction_band, sample_variance


@dataclass(frozen=True)
class BaselinePolicy:
    """How history becomes an expectation."""

    window: int = 10  # the last N earlier measurements of the same context
    min_history: int = 2  # fewer: no baseline yet, recorded only
    # band = factor x standard deviation; None: the prediction bound of the module docstring
    spread_factor: float | None = None
    min_band_percent: float = 0.5  # ... but at least this share of the baseline


# The false regressions a clean night of a whole lab may start, on average, whatever its size:
# the night's contexts share this budget (:func:`night_budget`), so a lab of 400 contexts holds
# each to half of what one of 200 does. The few that last into a second night (a context whose
# next night is still low by chance) bring what a clean night shows to under one on average
# (``pinet bench --noise-only``: 0.44 % of 200 contexts' clean nights, 2026-11-29).
FALSE_PER_NIGHT = 0.8
# A clean night of one context is called a regression at most this often: a lab of up to 200
# contexts. The band spends BAND_SHARE of it, the standing rule's step tests the rest
# (judge/pooled_step.py): a drop of three nights is the step tests' to see (pooled, three
# nights say more than one), and they need the larger share.
NIGHT_FALSE_ALARMS = 0.004
BAND_SHARE = 0.4
BAND_CONFIDENCE = 1.0 - NIGHT_FALSE_ALARMS * BAND_SHARE
# A step needs two accepted nights before it and two nights since: with fewer than three
# accepted nights none can be tried, and the band spends the whole budget. (Two nights that
# agree closely still catch a 3 % drop of a steady link; at a smaller share t(1) grows fast.)
FEWEST_FOR_STEPS = 3


def night_budget(prior: SpreadPrior | None) -> float:
    """One context's share of its night's false-alarm budget: :data:`NIGHT_FALSE_ALARMS`, or
    :data:`FALSE_PER_NIGHT` over the contexts the night judges (``prior.family``) when more."""
    if prior is None or prior.family <= 0:
        return NIGHT_FALSE_ALARMS
    return min(NIGHT_FALSE_ALARMS, FALSE_PER_NIGHT / prior.family)


def band_confidence(count: int, budget: float = NIGHT_FALSE_ALARMS) -> float:
    """The band's one-sided confidence with ``count`` accepted nights: its share of the
    night's false-alarm ``budget`` (all of it while no step test can run)."""
    return 1.0 - budget * BAND_SHARE if count >= FEWEST_FOR_STEPS else 1.0 - budget


def spread_band(
    spread: float,
    count: int,
    factor: float | None,
    degrees: int | None = None,
    budget: float = NIGHT_FALSE_ALARMS,
) -> float:
    """How far below the baseline one more run may fall by noise alone; ``degrees``: the
    spread's, when a prior adds to its ``count`` nights' own; ``budget``: the context's share
    of its night's false alarms."""
    if factor is not None:
        return factor * spread
    # One earlier result: its noise is unknown, only the floor applies (the band is 0).
    return prediction_band(spread, count, band_confidence(count, budget), degrees=degrees)


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
    value: float,
    history: Sequence[float],
    policy: BaselinePolicy | None = None,
    margin: float = 0.0,
    prior: SpreadPrior | None = None,
    budget: float = NIGHT_FALSE_ALARMS,
) -> BaselineVerdict:
    """Compare ``value`` with the last ``policy.window`` values of ``history`` (oldest first).

    ``margin`` is the value's own uncertainty (a p99 of a hundred probes: :mod:`.tail`): the
    band is at least that wide.  A long history's spread already holds the nights' sampling
    noise; a short one whose few figures happened to agree does not (three p99s within
    0.2 ms, then a night with two late replies of a hundred).

    ``prior``: the spread the context's group shares (:mod:`.spread_prior`, already checked to
    explain this context's own): the band's spread is the two, each by its worth. ``budget``:
    the context's share of its night's false alarms (:func:`night_budget`)."""
    policy = policy or BaselinePolicy()
    recent = list(history)[-policy.window :]
    if len(recent) < policy.min_history:
        return BaselineVerdict("no-baseline", value, None, None, len(recent))
    baseline = statistics.median(recent)
    spread, degrees = window_spread(recent, baseline, prior if policy.spread_factor is None else None)
    band = max(
        spread_band(spread, len(recent), policy.spread_factor, int(degrees), budget),
        # abs: a lower-is-better figure is judged mirrored (judge.latency_verdict), its baseline negative
        policy.min_band_percent / 100.0 * abs(baseline),
        margin,
    )
    if value < baseline - band:
        status = "regression"
    elif value > baseline + band:
        status = "improvement"
    else:
        status = "within"
    return BaselineVerdict(status, value, baseline, band, len(recent))


def window_spread(recent: Sequence[float], level: float, prior: SpreadPrior | None) -> tuple[float, float]:
    """The band's spread of the ``recent`` nights at ``level`` and its degrees of freedom: their
    own, with ``prior`` (already checked to explain them) pooled in by its worth. The band and
    judge.detection's figures both read it."""
    own = sample_variance(recent) if len(recent) > 1 else 0.0
    variance, degrees = moderated(prior, own * max(len(recent) - 1, 0), max(len(recent) - 1, 0), level)
    return variance**0.5, degrees
