"""What contexts that share their noise say about one another's spread: an empirical-Bayes prior.

A context with ten accepted nights knows its run-to-run spread with nine degrees of freedom:
its step test then needs t(0.999, 11) = 4.0 standard errors where a known spread would need
3.1, and a 3 % drop at 1 % spread is red within three nights in about 80 % of cases, not the
90 % the statistics allow.  The other contexts of the same board and scenario have nights of
their own, and on one board their spreads are alike (the same CPU, the same cables, the same
luck of the night).  Following limma (Smyth, 2004, "Linear models and empirical Bayes methods
for assessing differential expression"), their relative variances are taken as draws of one
scaled inverse chi-square law, fitted by the moments of their logarithms:

- the prior's variance ``s0^2`` (a share of the level, squared) and its worth ``d0`` in
  degrees of freedom: large when the contexts agree (as many as they have between them), small
  when they differ, 0 when they differ more than their own sampling says they should;
- a context's spread is then ``(d0 s0^2 level^2 + d s^2) / (d0 + d)`` with ``d0 + d`` degrees
  of freedom (:func:`moderated`): its own nights and the group's, each by its worth.

A context whose own spread the prior does not explain (its ratio to the prior outside the F
law's 1 % tails: a quiet half-duplex run among noisy routed ones) keeps its own
(:func:`applies`): the prior never widens a quiet context's band by the noise of its
neighbours, nor narrows a noisy one's.

The prior a night is judged with is part of that night (``standing.Night.prior``), fitted
from the standings before it and kept with it (record/store_priors.py), so a walk from a
context's first night gives every night the verdict it had.  Nothing here reads a store or
knows pytest.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from .stats import digamma, f_cdf, sample_variance, trigamma, trigamma_inverse

# Fewer contexts than this with a spread of their own: no prior (three moments of logarithms
# say nothing about a law).
FEWEST_CONTEXTS = 3
# A context's own spread is its own when the prior's F law puts it outside this two-sided share.
OUTLIER_SHARE = 0.01
# The prior is never worth more degrees of freedom than this: past it t is the normal quantile
# to three digits, and a very large worth would only hide a change of the board's noise.
MOST_DEGREES = 500.0


@dataclass(frozen=True)
class SpreadPrior:
    """The spread a group of contexts shares: relative variance and its worth."""

    variance: float  # (sd / level)^2, typical of the group's contexts
    degrees: float  # its worth, in degrees of freedom (0: none)
    contexts: int  # how many contexts it was fitted from
    # The contexts the night judges (their false alarms share one budget: baseline.night_budget);
    # 0: not known.
    family: int = 0

    @property
    def spread_pct(self) -> float:
        """The prior's spread, percent of the level."""
        return 100.0 * math.sqrt(self.variance)

    def text(self) -> str:
        """How it is kept: ``variance:degrees:contexts:family``."""
        return f"{self.variance!r}:{self.degrees!r}:{self.contexts}:{self.family}"

    @classmethod
    def parse(cls, text: str) -> SpreadPrior | None:
        """The prior kept as :meth:`text` ('' or a malformed text: none)."""
        parts = text.split(":")
        if len(parts) != 4:
            return None
        try:
            return cls(float(parts[0]), float(parts[1]), int(parts[2]), int(parts[3]))
        except ValueError:
            return None


def relative_spread(values: Sequence[float]) -> tuple[float, int] | None:
    """The relative variance of ``values`` (their variance over their mean squared) and its
    degrees of freedom; None for fewer than two values or a mean of 0."""
    if len(values) < 2:
        return None
    mean = statistics.fmean(values)
    if mean == 0:
        return None
    return sample_variance(values) / (mean * mean), len(values) - 1


def fit(spreads: Sequence[tuple[float, int]], family: int = 0) -> SpreadPrior | None:
    """The prior of contexts whose relative variances and degrees are ``spreads``, for a night
    that judges ``family`` contexts; with fewer than :data:`FEWEST_CONTEXTS` non-zero spreads,
    one that pools nothing (worth 0) and only carries the night's size.

    Each ``log s^2`` is, about the log of the true variance, a log chi-square over its degrees:
    its mean ``digamma(d/2) - log(d/2)`` and variance ``trigamma(d/2)`` are removed, and what
    variance is left is the true variances' own, ``trigamma(d0/2)``."""
    usable = [(v, d) for v, d in spreads if v > 0 and d > 0]
    if len(usable) < FEWEST_CONTEXTS:
        return SpreadPrior(0.0, 0.0, len(usable), family) if family else None
    logs = [math.log(v) - digamma(d / 2.0) + math.log(d / 2.0) for v, d in usable]
    mean = statistics.fmean(logs)
    excess = statistics.variance(logs) - statistics.fmean(trigamma(d / 2.0) for _, d in usable)
    most = min(MOST_DEGREES, float(sum(d for _, d in usable)))
    # No excess: the contexts agree as closely as their own sampling allows.
    degrees = min(2.0 * trigamma_inverse(excess), most) if excess > 0 else most
    variance = math.exp(mean + digamma(degrees / 2.0) - math.log(degrees / 2.0))
    return SpreadPrior(variance, degrees, len(usable), family)


def applies(prior: SpreadPrior | None, values: Sequence[float]) -> SpreadPrior | None:
    """``prior`` when it explains the spread of a context's accepted ``values``: their relative
    variance inside the central share of F(d, d0) about the prior's; None otherwise (or without
    a prior, or fewer than two values: one night has no spread to compare)."""
    if usable(prior) is None:
        return None
    own = relative_spread(values)
    if own is None:
        return prior
    return explains(prior, *own)


def usable(prior: SpreadPrior | None) -> SpreadPrior | None:
    """``prior`` when it has a spread and a worth to pool (one fitted from fewer contexts than
    :data:`FEWEST_CONTEXTS`, or read from a damaged store row, has not)."""
    return prior if prior is not None and prior.degrees > 0 and prior.variance > 0 else None


def explains(prior: SpreadPrior | None, variance: float, degrees: int) -> SpreadPrior | None:
    """:func:`applies` for a context whose relative ``variance`` has ``degrees`` of freedom."""
    if prior is None or usable(prior) is None:
        return None
    low, high = _explained(degrees, prior.degrees)
    return prior if low <= variance / prior.variance <= high else None


@lru_cache(maxsize=1024)
def _explained(degrees: int, prior_degrees: float) -> tuple[float, float]:
    """The ratios of a spread of ``degrees`` to a prior of ``prior_degrees`` that the F law
    puts inside its central share: its quantiles, found once by halving (the step test asks
    for every split of every night, :mod:`.pooled_step`)."""

    def below(log_ratio: float, share: float) -> bool:
        return f_cdf(math.exp(log_ratio), degrees, prior_degrees) < share

    def quantile(share: float) -> float:
        # A prior worth a fraction of a degree has quantiles far out: the search reaches
        # e^+-300, and a quantile past it is 0 or infinity (every ratio that side explained).
        low, high = -300.0, 300.0  # log of the ratio
        if below(high, share):
            return math.inf
        if not below(low, share):
            return 0.0
        for _ in range(100):
            middle = (low + high) / 2.0
            low, high = (middle, high) if below(middle, share) else (low, middle)
        return math.exp((low + high) / 2.0)

    return quantile(OUTLIER_SHARE / 2.0), quantile(1.0 - OUTLIER_SHARE / 2.0)


def moderated(prior: SpreadPrior | None, squares: float, degrees: int, level: float) -> tuple[float, float]:
    """The variance and degrees of freedom of a context whose own nights give ``squares`` (the
    sum of squared deviations) with ``degrees``, at ``level``: its own alone without a prior."""
    if prior is None:
        return (squares / degrees if degrees > 0 else 0.0), float(degrees)
    worth = prior.degrees
    return (squares + worth * prior.variance * level * level) / (degrees + worth), degrees + worth
