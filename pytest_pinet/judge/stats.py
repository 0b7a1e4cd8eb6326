"""The statistics every verdict uses, in one place: Student's t for any degrees of freedom, the
intervals and bands built on it, and the robust spread (median and MAD).

Before this module the baseline carried a one-sided t table that stopped at 9 degrees of
freedom and jumped to the normal quantile (a window above 10 got a band 10-19 % narrower than
promised), and adaptive duration a two-sided table with another fallback. Here t is computed,
not looked up: the quantile inverts the distribution function, itself the regularized
incomplete beta function (Numerical Recipes' continued fraction), so any window, any
confidence and any run length get the same exact figure. Standard library only.
"""

from __future__ import annotations

import functools
import math
import statistics
from collections.abc import Sequence

# MAD times this is the standard deviation, for normal noise.
MAD_TO_SD = 1.4826


def _incomplete_beta_fraction(a: float, b: float, x: float) -> float:
    """The continued fraction of the regularized incomplete beta function (Lentz's method)."""
    tiny, qab, qap, qam = 1e-300, a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 300):
        m2 = 2 * m
        for numerator in (
            m * (b - m) * x / ((qam + m2) * (a + m2)),
            -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2)),
        ):
            d = 1.0 + numerator * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + numerator / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1.0) < 1e-15:
            break
    return h


def regularized_beta(a: float, b: float, x: float) -> float:
    """I_x(a, b), the regularized incomplete beta function, for 0 <= x <= 1."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    log_front = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    if x < (a + 1.0) / (a + b + 2.0):
        return math.exp(log_front) * _incomplete_beta_fraction(a, b, x) / a
    return 1.0 - math.exp(log_front) * _incomplete_beta_fraction(b, a, 1.0 - x) / b


def t_cdf(t: float, degrees: float) -> float:
    """P(T <= t) for Student's t with ``degrees`` degrees of freedom."""
    if degrees <= 0:
        raise ValueError("Student's t needs at least one degree of freedom")
    tail = 0.5 * regularized_beta(degrees / 2.0, 0.5, degrees / (degrees + t * t))
    return 1.0 - tail if t > 0 else tail


@functools.lru_cache(maxsize=1024)
def t_quantile(probability: float, degrees: float) -> float:
    """The t with P(T <= t) = ``probability``: bisection on :func:`t_cdf` to 1e-12 (kept per
    argument pair: every night of a year-long walk asks for the same few)."""
    if not 0.0 < probability < 1.0:
        raise ValueError(f"a quantile needs a probability strictly between 0 and 1, got {probability}")
    if probability < 0.5:
        return -t_quantile(1.0 - probability, degrees)
    low, high = 0.0, 1.0
    while t_cdf(high, degrees) < probability:
        high *= 2.0
    while high - low > 1e-12 * max(1.0, high):
        middle = (low + high) / 2.0
        if t_cdf(middle, degrees) < probability:
            low = middle
        else:
            high = middle
    return (low + high) / 2.0


def t_one_sided(confidence: float, degrees: float) -> float:
    """One-sided quantile: a fall of this many standard errors is rarer than 1 - confidence."""
    return t_quantile(confidence, degrees)


def t_two_sided(confidence: float, degrees: float) -> float:
    """Two-sided quantile: the half-width of a ``confidence`` interval, in standard errors."""
    return t_quantile(0.5 + confidence / 2.0, degrees)


def prediction_band(
    spread: float, count: int, confidence: float = 0.995, future: int = 1, degrees: int | None = None
) -> float:
    """How far below the mean of ``count`` earlier results the mean of ``future`` more may fall
    by noise alone at one-sided ``confidence``, with ``spread`` their standard deviation: the
    prediction bound t(n-1) * s * sqrt(1/m + 1/n); ``degrees``: the spread's, when it is known
    better than its ``count`` results tell (judge/spread_prior.py). No noise known, 0."""
    degrees = count - 1 if degrees is None else degrees
    if degrees < 1 or count < 1:
        return 0.0
    return t_one_sided(confidence, degrees) * spread * math.sqrt(1.0 / max(1, future) + 1.0 / count)


def sample_variance(values: Sequence[float]) -> float:
    """The sample variance (n - 1) of two or more figures, in floats.

    ``statistics.variance`` sums exact fractions: right to the last bit and some 40 times
    slower, which the adaptive duration's every-second check paid in the noise bench (169,000
    calls, 66 of a detect-target table's 78 s).  Two passes over floats keep the figures'
    own precision, far below any spread a link shows."""
    count = len(values)
    if count < 2:
        raise ValueError("a sample variance needs at least two figures")
    mean = math.fsum(values) / count
    return math.fsum((v - mean) ** 2 for v in values) / (count - 1)


def mean_half_width(values: Sequence[float], confidence: float = 0.95) -> float:
    """Half-width of the two-sided ``confidence`` interval of the mean of ``values`` (inf for
    fewer than two)."""
    if len(values) < 2:
        return math.inf
    spread = math.sqrt(sample_variance(values))
    return t_two_sided(confidence, len(values) - 1) * spread / math.sqrt(len(values))


def mad(values: Sequence[float]) -> float:
    """The median absolute deviation from the median."""
    middle = statistics.median(values)
    return statistics.median(abs(v - middle) for v in values)


def robust_sd(values: Sequence[float]) -> float:
    """A standard deviation from the MAD: one wild second does not widen it."""
    return MAD_TO_SD * mad(values)


def difference_standard_error(a: Sequence[float], b: Sequence[float]) -> float:
    """Standard error of the difference of two samples' means (Welch's: unequal spreads)."""
    return math.sqrt(sample_variance(a) / len(a) + sample_variance(b) / len(b))


def median_standard_error(scale: float, count: int) -> float:
    """Standard error of a median of ``count`` values with spread ``scale``: sqrt(pi/2) times
    that of a mean, for normal noise."""
    return math.sqrt(math.pi / 2.0) * scale / math.sqrt(count)


# The polygamma functions an empirical-Bayes prior of spreads needs (judge/spread_prior.py):
# the recurrence moves the argument up to SERIES_FROM, where the asymptotic series is exact to
# double precision.
SERIES_FROM = 6.0


def digamma(x: float) -> float:
    """psi(x), the logarithmic derivative of the gamma function, for x > 0."""
    result = 0.0
    while x < SERIES_FROM:
        result -= 1.0 / x
        x += 1.0
    inv = 1.0 / (x * x)
    series = inv * (1.0 / 12 - inv * (1.0 / 120 - inv * (1.0 / 252 - inv * (1.0 / 240 - inv / 132))))
    return result + math.log(x) - 0.5 / x - series


def trigamma(x: float) -> float:
    """psi'(x), for x > 0: the variance of log of a chi-square variable over 4 (of 2x degrees)."""
    result = 0.0
    while x < SERIES_FROM:
        result += 1.0 / (x * x)
        x += 1.0
    inv = 1.0 / (x * x)
    series = 1.0 / 6 - inv * (1.0 / 30 - inv * (1.0 / 42 - inv / 30))
    return result + 1.0 / x + inv / 2.0 + inv / x * series


def tetragamma(x: float) -> float:
    """psi''(x), for x > 0: the slope :func:`trigamma_inverse` follows."""
    result = 0.0
    while x < SERIES_FROM:
        result -= 2.0 / (x * x * x)
        x += 1.0
    inv = 1.0 / (x * x)
    series = 0.5 - inv * (1.0 / 6 - inv * (1.0 / 6 - inv * 3.0 / 10))
    return result - inv - inv / x - inv * inv * series


def trigamma_inverse(value: float) -> float:
    """The x > 0 with psi'(x) = ``value`` (> 0): Newton's method from below (Smyth, 2004)."""
    if value > 1e7:
        return 1.0 / math.sqrt(value)
    if value < 1e-6:
        return 1.0 / value
    x = 0.5 + 1.0 / value
    for _ in range(50):
        tri = trigamma(x)
        step = tri * (1.0 - tri / value) / tetragamma(x)
        x += step
        if -step / x < 1e-8:
            break
    return x


def f_cdf(f: float, numerator: float, denominator: float) -> float:
    """P(F <= f) for the F distribution with ``numerator`` and ``denominator`` degrees."""
    if f <= 0.0:
        return 0.0
    total = numerator * f + denominator
    if numerator * f > denominator:
        # x near 1 rounds to 1 (a prior worth a fraction of a degree has such quantiles): the
        # complement, from 1 - x computed as itself
        return 1.0 - regularized_beta(denominator / 2.0, numerator / 2.0, denominator / total)
    return regularized_beta(numerator / 2.0, denominator / 2.0, numerator * f / total)
