"""The nights after a drop, as the verdict sees them until one is red: a Gaussian filter.

:func:`.detection.red_curve` asks how likely a persisting drop is red by night k.  Every
night the band may flag it and the step tests may flag the last nights pooled.  A night that
passed them all was, by that, not a low one, and the tests of the nights after share it:
taken as independent, the band's and the step tests' chances ran up to 17 points ahead of
the verdict on the second night (``pinet bench --noise-only``, 200 trials a setting).

So the sum of the drop nights' shortfalls on the paths that survived is carried as one
normal law (assumed density filtering): each test passed keeps its statistic below its edge,
and the law is replaced by the normal of the same mean and variance.  A test over the last
``j`` of ``k`` nights holds a share ``j / k`` of the sum and scatters by the rest.  A filter
over the last three nights one by one and the sum before them was tried: no closer to the
verdict (94.7 against 95.1 % of the noise grid's rates within 5 points, 1000 trials) and 25
times slower, and a morning page asks this of every context.  Nothing here reads a store or
knows pytest.
"""

from __future__ import annotations

import math

_HALF_ROOT = math.sqrt(0.5)
_DENSITY = 1.0 / math.sqrt(2.0 * math.pi)
# A statistic this many of its spreads below its edge passes on all paths but 1e-15 of them.
SURE = 8.0


def below(limit: float) -> tuple[float, float]:
    """A standard normal kept below ``limit``: its chance, and the inverse Mills ratio (how
    far, in its spread, the mean of what passed lies below the law's)."""
    passed = 0.5 * math.erfc(-limit * _HALF_ROOT)  # the normal law's, by erfc: this runs often
    if passed <= 1e-300:
        return 0.0, -limit
    return passed, math.exp(-0.5 * limit * limit) * _DENSITY / passed


def joined_below(mean: float, variance: float, edge: float, fresh: float = 0.0) -> tuple[float, float, float]:
    """The sum of ``mean`` and ``variance`` with tonight's shortfall added, a standard normal
    the band kept at or below ``edge``: the new mean and variance, and the chance it stayed.
    ``fresh``: the variance of a luck of the band's own that tonight's test adds to the
    shortfall (a window whose older nights left it), independent of the nights."""
    spread = math.sqrt(1.0 + fresh)
    alpha = edge / spread
    if alpha > SURE:
        return mean, variance + 1.0, 1.0
    passed, ratio = below(alpha)
    return (
        mean - ratio / spread,
        variance + max(1.0 - (alpha * ratio + ratio * ratio) / (1.0 + fresh), 0.0),
        passed,
    )


def kept_below(
    mean: float, variance: float, share: float, fresh: float, edge: float
) -> tuple[float, float, float]:
    """The sum of ``mean`` and ``variance`` where the test statistic ``share x sum + noise``
    (the noise independent, of variance ``fresh``) stayed at or below ``edge``: its new mean
    and variance, and the chance it stayed there."""
    spread = math.sqrt(share * share * variance + fresh)
    if spread <= 0:
        return mean, variance, 1.0 if share * mean <= edge else 0.0
    alpha = (edge - share * mean) / spread
    if alpha > SURE:
        return mean, variance, 1.0  # the test passes on every path: nothing learnt
    passed, ratio = below(alpha)
    tied = share * variance / spread  # how far the sum moves with the statistic, per its spread
    shrink = max(alpha * ratio + ratio * ratio, 0.0)
    return mean - tied * ratio, max(variance - tied * tied * shrink, 0.0), passed
