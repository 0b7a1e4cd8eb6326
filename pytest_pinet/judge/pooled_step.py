"""The standing rule's step test: the nights since a suspected change, pooled, against the
accepted nights before them.

One night is the band's to judge (:mod:`.baseline`).  A drop smaller than the band shows
only in several nights together: the mean of the last ``j`` nights (tonight and the ``j - 1``
accepted before it) against the mean of the window of accepted nights before them, over the
standard error of that difference: a two-sample t test.  Its spread is pooled from every
accepted night before the step (the standing keeps up to two months of them, so an
established context knows its noise far better than ten nights tell) and from the scatter
of the ``j`` nights about their own mean, and from the spread the board's other contexts share
(:mod:`.spread_prior`, by its worth); its degrees of freedom are counted accordingly.

Every length ``j`` from two nights up to a window is tried, each at its own share of the
night's false-alarm budget: the band spends :data:`.baseline.BAND_SHARE` of it, two and three
nights most of the rest (a drop seen within three nights), the longer lengths what is left (a
slow slide); a step up a fiftieth of a step down's share.  A clean night of a context then
starts a regression with a chance of at most its budget (:func:`.baseline.night_budget`:
Bonferroni over the tests, which overlap, so less in fact): the lab's contexts share
:data:`.baseline.FALSE_PER_NIGHT` false regressions a clean night, whatever their number, and
the budget is the same however many nights a context has.

A step must also clear the band's floor (a share of the level; the night's own margin): on a
nearly noiseless cable a t test finds steps of hundredths of a percent, which no lab calls a
regression.  Nothing here reads a store or knows pytest.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from .baseline import BAND_SHARE, NIGHT_FALSE_ALARMS, BaselinePolicy
from .spread_prior import SpreadPrior, explains, moderated, usable
from .stats import t_cdf, t_one_sided

# The step tests' share of the budget: two and three nights share most of it (a drop within
# three nights), every longer length up to a window an equal part of the rest (a slow slide).
SHORT_STEP_NIGHTS = (2, 3)
SHORT_SHARE = 0.9
# A step up restarts the baseline at it (no accept needed), so a false one costs the context
# its history: the nights since are a few lucky ones, and the next ordinary night looks like
# a drop from them, and the context stays red until someone accepts it (at a tenth of a step
# down's share, such contexts were the longest false regressions under the noise model, 12 to
# 19 nights with 20 nights of history). Steps up are held to a fiftieth of it.
UP_SHARE = 0.02


@dataclass(frozen=True)
class PooledStep:
    """The most significant step over a context's last nights: where, how large, how sure."""

    nights: int  # the nights since the step, tonight included
    before: float  # mean of the window of accepted nights before it
    after: float  # mean of the nights since
    t: float  # (after - before) over the difference's standard error
    degrees: int
    p_value: float  # one-sided, of the step's direction


def step_alpha(nights: int, longest: int, night_budget: float = NIGHT_FALSE_ALARMS) -> float:
    """The false-alarm share of the test over the last ``nights`` nights, when lengths up to
    ``longest`` are tried: the step tests' share of the context's ``night_budget``, per
    direction."""
    budget = night_budget * (1.0 - BAND_SHARE)
    short = [n for n in SHORT_STEP_NIGHTS if n <= longest]
    longer = max(0, longest - max(SHORT_STEP_NIGHTS))
    share = SHORT_SHARE if longer else 1.0
    if nights in short:
        return budget * share / len(short)
    return budget * (1.0 - share) / longer


@lru_cache(maxsize=4096)
def critical_t(
    nights: int, longest: int, degrees: int, up: bool = False, budget: float = NIGHT_FALSE_ALARMS
) -> float:
    """The t a step over ``nights`` nights must pass: down, or ``up`` (:data:`UP_SHARE`)."""
    return t_one_sided(1.0 - step_alpha(nights, longest, budget) * (UP_SHARE if up else 1.0), degrees)


def longest_step(policy: BaselinePolicy) -> int:
    """The longest run of nights a step is tried over: a window."""
    return max(policy.window, max(SHORT_STEP_NIGHTS))


def pooled_step(
    values: Sequence[float],
    policy: BaselinePolicy,
    margin: float = 0.0,
    prior: SpreadPrior | None = None,
    budget: float = NIGHT_FALSE_ALARMS,
) -> PooledStep | None:
    """The most significant step at the end of ``values`` (accepted nights, oldest first, then
    tonight) that passes its test and clears the floor; None when none does. ``prior``: the
    spread the context's group shares (:mod:`.spread_prior`), pooled in by its worth where it
    explains the window before the step. That window, not the last one: a drop night the band
    let pass joins the accepted nights, and a window holding it spreads wider than the board's
    nights do, so the prior judged on the last window would leave the context, mid-drop, with
    its own few nights' spread (under the noise model, 15 % of 1 % drops were then never red,
    with three nights of history).

    Prefix sums make each length O(1): a year's walk asks this for every night of every
    context."""
    count = len(values)
    longest = longest_step(policy)
    sums, squares = [0.0], [0.0]
    for value in values:
        sums.append(sums[-1] + value)
        squares.append(squares[-1] + value * value)

    def moments(lo: int, hi: int) -> tuple[int, float, float]:
        n = hi - lo
        mean = (sums[hi] - sums[lo]) / n
        return n, mean, max(0.0, squares[hi] - squares[lo] - n * mean * mean)

    best: PooledStep | None = None
    for j in range(2, min(longest, count - policy.min_history) + 1):
        start = count - j
        _, after, after_ss = moments(start, count)
        n_window, before, window_ss = moments(max(0, start - policy.window), start)
        shift = after - before
        if abs(shift) <= max(policy.min_band_percent / 100.0 * abs(before), margin):
            continue  # inside the band's floor: no regression whatever the test says
        n_spread, _, spread_ss = moments(0, start)
        # the prior where it explains the window before the step (the docstring says why)
        own = window_ss / (n_window - 1) / (before * before) if n_window > 1 and before else None
        pooled = usable(prior) if own is None else explains(prior, own, n_window - 1)
        variance, worth = moderated(pooled, spread_ss + after_ss, (n_spread - 1) + (j - 1), before)
        degrees, spread = int(worth), math.sqrt(variance)
        error = spread * math.sqrt(1.0 / n_window + 1.0 / j)
        t = shift / error if error > 0 else math.copysign(math.inf, shift)
        if abs(t) <= critical_t(j, longest, degrees, t > 0, budget):
            continue
        p = 1.0 - t_cdf(abs(t), degrees) if math.isfinite(t) else 0.0
        if best is None or p < best.p_value or (p == best.p_value and abs(t) > abs(best.t)):
            best = PooledStep(j, before, after, t, degrees, p)
    return best
