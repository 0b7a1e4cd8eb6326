"""How well one run knows its own percentile: the margin a tail figure adds to its band.

A p99 of 100 probes is, give or take interpolation, the run's second-largest probe: one
late reply (a scheduler hiccup on the prober, an ARP refresh) moves it by milliseconds, and
the next run will not repeat it.  A baseline band built from a few earlier p99s that
happened to agree (three nights within 0.2 ms of each other, seen on a namespace link)
then called such a night a regression although the queue did nothing different.  The
latency baseline therefore follows the p90 (:data:`..model.latency.BASELINE_SHARE`), and
even a p90 knows itself only as well as its probes allow.

That uncertainty is known without any assumption about the RTT distribution: the number of
probes below the true percentile is binomial, so an order statistic is a one-sided lower
confidence bound for it.  The distance from the measured figure down to that bound is the
night's *margin*, and the band it is judged with is at least that wide: a short history's
band cannot be narrower than what one night's figure knows of itself.  A long history's own
spread already holds that noise (a band wider than the margin is kept as it is), and a
whole tail that moved (a deeper queue) is still called.  ``pinet bench --noise-only``
measures both sides (``bench.latency_noise``).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence

from ..model.latency import BASELINE_SHARE

CONFIDENCE = 0.995  # one-sided, as the baseline's own prediction bound


def _log_binomial_pmf(n: int, k: int, p: float) -> float:
    return (
        math.lgamma(n + 1)
        - math.lgamma(k + 1)
        - math.lgamma(n - k + 1)
        + k * math.log(p)
        + (n - k) * math.log1p(-p)
    )


def quantile_lower_bound(
    values: Sequence[float], share: float, confidence: float = CONFIDENCE
) -> float | None:
    """The largest order statistic of ``values`` that lies at or below their true ``share``
    quantile with probability ``confidence`` (None for no values).

    The k-th smallest of n values exceeds the quantile exactly when fewer than k values fall
    below it, which happens with probability ``P(Binomial(n, share) <= k - 1)``.
    """
    ordered = sorted(values)
    if not ordered:
        return None
    best = _lower_rank(len(ordered), share, confidence)
    return ordered[best - 1] if best else ordered[0]


@functools.lru_cache(maxsize=4096)
def _lower_rank(n: int, share: float, confidence: float) -> int:
    """The rank k (1-based; 0: none) of :func:`quantile_lower_bound` among ``n`` values: it
    depends on the count alone, so each count is summed once."""
    alpha = 1.0 - confidence
    below = 0.0  # P(Binomial(n, share) <= k - 1), summed as k grows
    best = 0
    for k in range(1, n + 1):
        below += math.exp(_log_binomial_pmf(n, k - 1, share))
        if below > alpha:
            break
        best = k
    return best


def tail_margin(figure: float, values: Sequence[float], share: float = BASELINE_SHARE) -> float:
    """How far ``figure``, the measured ``share`` percentile of ``values``, may lie above the
    true one (0 for no values)."""
    low = quantile_lower_bound(values, share)
    return max(0.0, figure - low) if low is not None else 0.0
