"""What a context's verdict can catch: its detection power, from its own accepted nights.

"0 regressions" says nothing unless a drop of the size that matters would have been seen.
The answer depends on the context: a Pi's full-duplex run wanders by percents, a
half-duplex run at line rate by tenths. This module asks the verdict's own rules
(:mod:`.baseline`'s band, :mod:`.pooled_step`'s test) how they would treat a persisting drop
of a given size on this context, with the context's accepted nights as the noise:

- **run-to-run spread**: the standard deviation of the last window of accepted nights, as a
  share of their median (what the band is built from);
- **one night**: the smallest drop that a single night flags in 90 % of nights, at the
  verdict's own false-alarm rate (the band is a 99.84 % prediction bound: the band plus 1.28
  times a night's chance distance from it);
- **nights to red**: for a persisting drop of 1 %, 3 % and the context's margin to its floor,
  the nights after the drop until it is red in 90 % of cases: on each night the band may
  flag it, and from the second night the pooled step test may (the nights since the drop
  against the accepted window before them, each length at its share of the budget);
- **blind**: the drop one night flags is larger than the margin to the floor: the context
  could fall below its floor before its baseline notices a thing.

No second model: the figures come from the same band, test and floor the verdict applies;
``pinet bench --noise-only`` puts them beside the rates the verdict really reaches.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from statistics import NormalDist

from .baseline import (
    NIGHT_FALSE_ALARMS,
    BaselinePolicy,
    band_confidence,
    night_budget,
    spread_band,
    window_spread,
)
from .drop_filter import joined_below, kept_below
from .pooled_step import critical_t, longest_step
from .spread_prior import SpreadPrior, applies
from .standing import HORIZON_NIGHTS, Night
from .stats import t_one_sided

POWER = 0.9  # "catches": in this share of cases
NIGHTS_HORIZON = 30  # nights to red beyond this are "not within a month"
PLANTED = (1.0, 3.0)  # the drops every context is asked about, percent
_NORMAL = NormalDist()
_Z_POWER = _NORMAL.inv_cdf(POWER)


@dataclass(frozen=True)
class DetectionPower:
    """One context's power to see a drop, from ``nights`` accepted nights."""

    nights: int
    level: float  # the accepted level (the window's median), in the figure's unit
    spread_pct: float  # run-to-run spread of the accepted nights, % of the level
    one_night_pct: float  # the smallest drop one night flags (90 % of nights), % of the level
    nights_to_red: dict[str, int | None]  # drop (% text) -> nights until red; None: not within a month
    # the accepted figures, oldest first: what the step tests will read again (not shown)
    accepted: tuple[float, ...] = field(repr=False, compare=False)
    floor_margin_pct: float | None = None  # how far the level is above its floor, %; None: no floor
    prior_worth: float = 0.0  # the degrees of freedom the group's spread adds (.spread_prior)
    budget: float = NIGHT_FALSE_ALARMS  # the context's share of its night's false alarms

    @property
    def blind(self) -> bool:
        """The context could fall below its floor before its baseline flags the drop."""
        return self.floor_margin_pct is not None and self.one_night_pct > self.floor_margin_pct

    def explain(self) -> str:
        """One line, in a lab engineer's words."""
        reds = ", ".join(
            f"{drop} %: {'not within a month' if n is None else f'{n} night' + ('s' if n > 1 else '')}"
            for drop, n in self.nights_to_red.items()
        )
        floor = ""
        if self.floor_margin_pct is not None:
            floor = f"; {self.floor_margin_pct:.1f} % above its floor"
            floor += " (BLIND: it could fall below its floor unnoticed)" if self.blind else ""
        catches = (
            f"a drop of {self.one_night_pct:.1f} %"
            if self.one_night_pct < 100
            else f"no drop at all ({self.one_night_pct:.0f} %: even a total loss is inside its noise)"
        )
        return (
            f"spread {self.spread_pct:.2f} % over {self.nights} nights; one night catches {catches}; "
            f"a persisting drop is red after {reds}{floor}"
        )


@dataclass(frozen=True)
class Noise:
    """What the verdict reads of a context's accepted nights: the last window of them; what the
    detection model (:func:`red_curve`) takes of a context, in one value."""

    count: int
    level: float
    spread: float  # the standard deviation of their figures
    margin: float  # the newest night's own uncertainty
    accepted: tuple[float, ...]  # every accepted figure kept, oldest first: the step tests read them
    worth: float = 0.0  # the degrees of freedom the group's prior adds to the nights' own
    budget: float = NIGHT_FALSE_ALARMS  # the context's share of its night's false alarms

    @classmethod
    def of(cls, accepted: Sequence[Night], policy: BaselinePolicy, prior: SpreadPrior | None) -> Noise | None:
        """None without the nights a baseline needs, or at a level of 0: nothing is judged.
        ``prior``: the group's spread (:mod:`.spread_prior`), pooled in as the verdict does."""
        recent = list(accepted)[-policy.window :]
        if len(recent) < policy.min_history:
            return None
        values = [night.value for night in recent]
        level = statistics.median(values)
        if level == 0:
            return None
        spread, degrees = window_spread(values, level, applies(prior, values))
        worth = degrees - (len(values) - 1)
        figures = tuple(night.value for night in accepted)
        return cls(len(values), level, spread, recent[-1].margin, figures, worth, night_budget(prior))

    def nights_to_red(self, drop_pct: float, policy: BaselinePolicy) -> int | None:
        """:func:`nights_to_red` for a drop of ``drop_pct`` % of the level."""
        scale = abs(self.level)
        drop = drop_pct / 100.0 * scale
        return nights_to_red(drop, self, policy)


def detection_power(
    accepted: Sequence[Night], policy: BaselinePolicy | None = None, floor: float | None = None
) -> DetectionPower | None:
    """The detection power of a context whose accepted nights are ``accepted`` (oldest first)
    under ``policy``; ``floor``: its threshold in the figure's unit (goodput's), if any.
    None without the nights a baseline needs: nothing is judged against it yet. The group's
    prior is the newest night's: the one the next night is likeliest to be judged with."""
    policy = policy or BaselinePolicy()
    noise = Noise.of(accepted, policy, accepted[-1].prior if accepted else None)
    if noise is None:
        return None
    scale = abs(noise.level)
    band = _band(noise, policy, noise.count)
    # This context's band is known (its accepted nights made it): a night's distance from it
    # is the night's own scatter and the accepted level's error, not the band's.
    scatter = _night_scatter(noise.spread, noise.count, 0.0)
    floor_margin = 100.0 * (noise.level - floor) / scale if floor is not None and noise.level > 0 else None
    asked = {f"{d:g}": d for d in PLANTED}
    if floor_margin is not None and floor_margin > 0:
        asked[f"{floor_margin:.1f} (to the floor)"] = floor_margin
    return DetectionPower(
        nights=noise.count,
        level=noise.level,
        spread_pct=100.0 * noise.spread / scale,
        one_night_pct=100.0 * (band + _Z_POWER * scatter) / scale,
        nights_to_red={text: noise.nights_to_red(d, policy) for text, d in asked.items()},
        floor_margin_pct=floor_margin,
        prior_worth=noise.worth,
        budget=noise.budget,
        accepted=noise.accepted,
    )


def _band(noise: Noise, policy: BaselinePolicy, count: int) -> float:
    """The band one night is judged with (:func:`.baseline.judge_baseline`) when its window
    holds ``count`` nights: the prior's degrees of freedom (``noise.worth``) add to theirs, and
    the context's share of its night's false alarms (``noise.budget``) sets its width."""
    degrees = int(count - 1 + noise.worth) if noise.worth else None
    return max(
        spread_band(noise.spread, count, policy.spread_factor, degrees, noise.budget),
        policy.min_band_percent / 100.0 * abs(noise.level),
        noise.margin,
    )


# What the accepted nights leave unknown: the true spread (the window's estimate is that of
# a chi distribution: the thirds of it, z -0.967, 0, 0.967 of the Wilson-Hilferty transform)
# and the true level (off the mean of every accepted night by z of its standard error: 3-point
# Gauss-Hermite, 0 and +-sqrt(3), weights 2/3, 1/6, 1/6). The accepted figures themselves are
# known, and the step tests read them again night after night: the tests over the last
# accepted nights and the drop's are computed from those very figures, not drawn afresh. Drawn
# afresh (given the window's mean) every test and every night, the tests that share a low
# accepted night failed together less often than the verdict's do, and the model ran up to 6
# points ahead of the verdict by the fifth night after 20 nights of history (1000 trials a
# setting); with the figures it is within 5 points at every setting (``pinet bench
# --noise-only``). Every night after a drop is held against the same truth: given it the
# nights are independent, without it they are not (taken as independent, the model ran 10-17
# points ahead of the verdict from the third night on).
_LEVEL_LUCK = ((0.0, 2.0 / 3.0), (math.sqrt(3.0), 1.0 / 6.0), (-math.sqrt(3.0), 1.0 / 6.0))
_SPREAD_LUCK = (-0.967, 0.0, 0.967)


def _spread_ratio(z: float, degrees: float) -> float:
    """The ratio of a spread estimated with ``degrees`` degrees of freedom to the true one at
    the normal quantile ``z`` (Wilson-Hilferty)."""
    if degrees < 1:
        return 1.0
    a = 2.0 / (9.0 * degrees)
    return math.sqrt(max(1.0 - a + z * math.sqrt(a), 0.05) ** 3)


def red_curve(
    drop: float, noise: Noise, policy: BaselinePolicy, nights: int, until: float = 1.0
) -> list[float]:
    """P(a persisting drop of ``drop`` (the figure's unit) is red by night 1, 2, ... ``nights``
    after it began), on a context whose accepted figures (``noise.accepted``, oldest first)
    spread by ``noise.spread``, ``noise.count`` of them in the window.

    Each night is flagged when it falls below the band; the pooled step test (:mod:`.pooled_step`)
    flags the last nights against the window before them (from the first night on: the last
    accepted nights and tonight; from the second, the drop's own nights). A drop night neither
    flagged joined the accepted nights, so the window the next night is held against has moved
    towards it. Given the true spread and level (:data:`_SPREAD_LUCK`, :data:`_LEVEL_LUCK`) the
    nights are independent, but the tests are not: a night the band let pass was not a low one,
    and the step tests share it; :mod:`.drop_filter` carries what passed. From the first night
    whose chance reaches ``until`` on, the curve holds that night's figure (all a question of
    "how many nights" needs). ``noise.worth``: the degrees of freedom the group's prior adds to
    the spread's own (:mod:`.spread_prior`)."""
    accepted, spread, count, worth = noise.accepted, noise.spread, noise.count, noise.worth
    floor = max(policy.min_band_percent / 100.0 * abs(noise.level), noise.margin)
    if spread <= 0:
        return [1.0 if drop > floor else 0.0] * nights
    longest = longest_step(policy)
    mean = math.fsum(accepted) / len(accepted)
    level = statistics.median(accepted[-count:])
    truths = _truths(spread, count, worth, len(accepted))
    # Per truth: the chance nothing was red so far, and the sum of the drop nights' shortfalls
    # (in spreads) on the paths that survived, carried as a normal (assumed density filtering:
    # a night the band let pass was not a low one, and the step tests share it).
    alive = [1.0] * len(truths)
    sums = [(0.0, 0.0)] * len(truths)  # mean, variance
    curve: list[float] = []
    for k in range(1, nights + 1):
        window = min(policy.window, count + k - 1)
        mixed = min(k - 1, window)  # the band's window: its drop nights
        band = _band(noise, policy, window)
        # a full window slides: its clean nights are the last of the accepted ones, whose
        # median has a luck of its own beyond the whole window's
        slid = (
            (math.pi / 2.0) * (1.0 / (window - mixed) - 1.0 / window)
            if count >= policy.window and mixed < window
            else 0.0
        )
        steps = _step_tests(k, accepted, mean, policy, spread, floor, longest, worth, noise.budget)
        for n, (_, sigma, luck) in enumerate(truths):
            # the band's centre: the window's median, off the truth by its own offset from
            # the accepted mean and the mean's luck, moved by the drop nights it took in
            clean = (level - mean + luck) / sigma
            centre = _mixed_median(clean, (drop / sigma) + sums[n][0] / max(k - 1, 1), mixed, window)
            edge = (band - drop) / sigma - centre
            shortfall, variance, survive = joined_below(*sums[n], edge, slid)
            survive *= alive[n]
            for test in steps:
                edge = (test.nights * test.threshold - test.offset - test.drop * (drop + luck)) / sigma
                shortfall, variance, passed = kept_below(shortfall, variance, test.share, test.fresh, edge)
                survive *= passed
            alive[n], sums[n] = survive, (shortfall, variance)
        curve.append(sum(t[0] * (1.0 - a) for t, a in zip(truths, alive, strict=True)))
        if curve[-1] >= until:
            break  # the nights after are at least as likely red
    return curve + [curve[-1]] * (nights - len(curve))


def _truths(spread: float, count: int, worth: float, kept: int) -> list[tuple[float, float, float]]:
    """(weight, true spread, the accepted mean's luck) of the truths ``count`` nights of spread
    ``spread`` in the window (the prior adding ``worth`` degrees) and ``kept`` accepted nights
    in all leave open. The luck is how far the mean of the kept nights lies above the truth."""
    truths = []
    for zs in _SPREAD_LUCK:
        sigma = spread / _spread_ratio(zs, count - 1 + worth)
        for z, w in _LEVEL_LUCK:
            truths.append((w / len(_SPREAD_LUCK), sigma, z * sigma / math.sqrt(kept)))
    return truths


def _mixed_median(clean: float, low: float, drop_nights: int, window: int) -> float:
    """The median of a window of ``window`` nights, ``drop_nights`` of them ``low`` spreads
    below the truth and the rest at ``clean``: the point where the mixed law's chance is a half.
    A median moves less than a mean: one drop night of ten moves it by a fraction of the tenth
    of the drop a mean would move, and taken as a mean's the band's centre ran away from the
    nights after a drop, and the model behind the verdict."""
    if drop_nights <= 0:
        return clean
    a = (window - drop_nights) / window
    b = drop_nights / window
    q = a * clean - b * low
    for _ in range(6):
        f = a * _NORMAL.cdf(q - clean) + b * _NORMAL.cdf(q + low) - 0.5
        d = a * _NORMAL.pdf(q - clean) + b * _NORMAL.pdf(q + low)
        if d <= 1e-12:
            break
        step = f / d
        q -= step
        if abs(step) < 1e-6:
            break
    return q


@dataclass(frozen=True)
class _StepTest:
    """One step test night ``k`` after a drop tries: the last ``nights`` against the window
    before them. Its statistic (how far their sum falls short of ``nights`` times the window's
    mean) is ``offset`` (what the accepted figures it reads give, against their mean), ``drop``
    times the drop and the mean's luck (the drop nights' share, less the window's), ``share``
    of the drop nights' shortfall sum, and a scatter of the drop nights' own (``fresh``: what
    of them the sum does not settle)."""

    nights: int
    threshold: float  # the shift the test needs, in the figure's unit
    share: float
    fresh: float
    drop: float
    offset: float


def _step_tests(
    k: int,
    accepted: Sequence[float],
    mean: float,
    policy: BaselinePolicy,
    spread: float,
    floor: float,
    longest: int,
    worth: float = 0.0,
    budget: float = NIGHT_FALSE_ALARMS,
) -> list[_StepTest]:
    """The step tests night ``k`` after a drop tries, each from the accepted spread and the
    test's share of the budget. A test of the last ``j`` nights reads ``m`` accepted nights
    among them (when ``j`` > ``k``) and, before them, ``early`` drop nights (when ``j`` < ``k``)
    and the accepted nights that fill the window; the drop nights lie at the truth less the
    drop, and ``mean`` of the accepted figures is the truth plus its luck."""
    history = len(accepted)
    tests = []
    for j in range(2, min(history + k - 2, longest) + 1):
        before = min(policy.window, history + k - j)
        if k - j >= before:
            continue  # the window before these nights is drop nights only
        degrees = int(min(history + k - j, HORIZON_NIGHTS) - 1 + (j - 1) + worth)
        error = spread * math.sqrt(1.0 / before + 1.0 / j)
        threshold = max(critical_t(j, longest, degrees, False, budget) * error, floor)
        m, early = max(j - k, 0), max(k - j, 0)
        r = j / before
        tested = accepted[history - m :]
        read = accepted[history - m - (before - early) : history - m]
        drops = (j - m) - r * early  # the drop nights' weight: tested, less the window's share
        offset = r * math.fsum(read) - math.fsum(tested) - drops * mean
        if j < k:  # the last j drop nights: a share of the k nights' sum; the earlier ones before
            share, fresh = j / k - r * (1.0 - j / k), (1.0 + r) ** 2 * j * (1.0 - j / k)
        else:
            share, fresh = 1.0, 0.0
        tests.append(_StepTest(j, threshold, share, fresh, drops, offset))
    return tests


def nights_to_red(drop: float, noise: Noise, policy: BaselinePolicy) -> int | None:
    """The nights after a persisting drop of ``drop`` until it is red in :data:`POWER` of
    cases, on a context of ``noise``; None when not within :data:`NIGHTS_HORIZON`."""
    curve = red_curve(drop, noise, policy, NIGHTS_HORIZON, POWER)
    return next((night for night, p in enumerate(curve, 1) if p >= POWER), None)


def predicted_red(
    accepted: Sequence[Night],
    drop_pct: float,
    nights: int,
    policy: BaselinePolicy | None = None,
    prior: SpreadPrior | None = None,
) -> list[float]:
    """P(a persisting drop of ``drop_pct`` % is red by night 1, 2, ... ``nights``) on a context
    whose accepted nights are ``accepted`` (all 0 without a baseline: nothing is judged), its
    nights judged with ``prior``."""
    policy = policy or BaselinePolicy()
    noise = Noise.of(accepted, policy, prior)
    if noise is None:
        return [0.0] * nights
    scale = abs(noise.level)
    drop = drop_pct / 100.0 * scale
    return red_curve(drop, noise, policy, nights)


# A run the settle rule stops as soon as its half-width reaches a target stops when its
# seconds happen to agree: its mean then scatters about 1.3 times what the half-width says
# (1.23-1.31 over targets of 0.5-0.25 % under second-to-second noise, pinet bench).
STOPPED_EARLY = 1.3


def _night_scatter(spread: float, count: int, estimated: float) -> float:
    """How far a night falls from the band's edge by chance, beyond its own ``spread``: the
    accepted level is a median of ``count`` nights (pi/2 over count of a night's variance),
    and a band ``estimated`` from their spread is itself uncertain (its t times the spread
    over sqrt(2 (count - 1)); 0 when a floor or a margin, not the spread, sets the band)."""
    variance = 1.0 + (math.pi / 2.0) / count
    if spread > 0 and count > 1:
        ratio = estimated / spread
        variance += ratio * ratio / (2.0 * (count - 1))
    return spread * math.sqrt(variance)


def night_precision_for(detect_pct: float, window: int) -> float:
    """The 95 % half-width of a run's mean, in percent, that lets one night catch a drop of
    ``detect_pct`` when the nights differ by nothing but each run's own scatter: the band of
    ``window`` such nights (the 99.84 % prediction bound) plus 1.28 of a night's chance
    distance from it (:func:`_night_scatter`; caught 9 times in 10) must fit in the drop, the
    scatter being :data:`STOPPED_EARLY` times what a run stopped at that half-width states. A
    lab's run-to-run spread comes on top, and longer runs cannot average it away: that
    context is reported blind (:func:`cannot_catch`)."""
    count = max(window, 2)
    band = t_one_sided(band_confidence(count), count - 1) * math.sqrt(1.0 + 1.0 / count)
    spreads = band + _Z_POWER * _night_scatter(1.0, count, band)
    return 1.96 * detect_pct / (spreads * STOPPED_EARLY)


def cannot_catch(
    power: DetectionPower, detect_pct: float, policy: BaselinePolicy | None = None
) -> str | None:
    """Why ``power``'s context cannot catch a ``detect_pct`` drop in one night (None: it can):
    what it catches instead and the nights a persisting drop of that size needs."""
    if power.one_night_pct <= detect_pct:
        return None
    policy = policy or BaselinePolicy()
    scale = abs(power.level)
    spread = power.spread_pct / 100.0 * scale
    drop = detect_pct / 100.0 * scale
    noise = Noise(power.nights, power.level, spread, 0.0, power.accepted, power.prior_worth, power.budget)
    nights = nights_to_red(drop, noise, policy)
    needs = (
        f"a persisting {detect_pct:g} % drop is red after {nights} nights"
        if nights
        else (f"not even a persisting {detect_pct:g} % drop turns red within a month")
    )
    return (
        f"one night catches {power.one_night_pct:.1f} %, not {detect_pct:g} %: its nights differ by "
        f"{power.spread_pct:.2f} % (longer runs do not average that away); {needs}"
    )
