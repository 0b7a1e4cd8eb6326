"""What a context's verdict can catch: its detection power, from its own accepted nights.

"0 regressions" says nothing unless a drop of the size that matters would have been seen.
The answer depends on the context: a Pi's full-duplex run wanders by percents, a
half-duplex run at line rate by tenths. This module asks the verdict's own rules
(:mod:`.baseline`'s band, :mod:`.pooled_step`'s test) how they would treat a persisting drop
of a given size on this context, with the context's accepted nights as the noise:

- **run-to-run spread**: the standard deviation of the last window of accepted nights, as a
  share of their median (what the band is built from);
- **one night**: the smallest drop that a single night flags in 90 % of nights, at the
  verdict's own false-alarm rate (the band is a 99.75 % prediction bound: the band plus 1.28
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
from dataclasses import dataclass
from statistics import NormalDist

from .baseline import BaselinePolicy, band_confidence, spread_band
from .pooled_step import critical_t, longest_step
from .standing import HORIZON_NIGHTS, Night
from .stats import t_cdf, t_one_sided

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
    floor_margin_pct: float | None = None  # how far the level is above its floor, %; None: no floor

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
class _Noise:
    """What the verdict reads of a context's accepted nights: the last window of them."""

    count: int
    level: float
    spread: float  # the standard deviation of their figures
    margin: float  # the newest night's own uncertainty
    history: int  # every accepted night kept: the step test's spread reads them all

    @classmethod
    def of(cls, accepted: Sequence[Night], policy: BaselinePolicy) -> _Noise | None:
        """None without the nights a baseline needs, or at a level of 0: nothing is judged."""
        recent = list(accepted)[-policy.window :]
        if len(recent) < policy.min_history:
            return None
        values = [night.value for night in recent]
        level = statistics.median(values)
        if level == 0:
            return None
        spread = statistics.stdev(values) if len(values) > 1 else 0.0
        return cls(len(values), level, spread, recent[-1].margin, len(accepted))

    def nights_to_red(self, drop_pct: float, policy: BaselinePolicy) -> int | None:
        """:func:`nights_to_red` for a drop of ``drop_pct`` % of the level."""
        scale = abs(self.level)
        drop = drop_pct / 100.0 * scale
        return nights_to_red(drop, self.spread, self.count, policy, scale, self.margin, self.history)


def detection_power(
    accepted: Sequence[Night], policy: BaselinePolicy | None = None, floor: float | None = None
) -> DetectionPower | None:
    """The detection power of a context whose accepted nights are ``accepted`` (oldest first)
    under ``policy``; ``floor``: its threshold in the figure's unit (goodput's), if any.
    None without the nights a baseline needs: nothing is judged against it yet."""
    policy = policy or BaselinePolicy()
    noise = _Noise.of(accepted, policy)
    if noise is None:
        return None
    scale = abs(noise.level)
    band = _band(noise.spread, noise.count, policy, scale, noise.margin)
    by_spread = spread_band(noise.spread, noise.count, policy.spread_factor)
    estimated = by_spread if by_spread >= band else 0.0  # a floor or a margin is no estimate
    scatter = _night_scatter(noise.spread, noise.count, estimated)
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
    )


def _band(spread: float, count: int, policy: BaselinePolicy, scale: float, margin: float) -> float:
    """The band one night is judged with (:func:`.baseline.judge_baseline`)."""
    return max(
        spread_band(spread, count, policy.spread_factor), policy.min_band_percent / 100.0 * scale, margin
    )


def _above(drop: float, threshold: float, sd: float, degrees: int) -> float:
    """P(a figure ``drop`` below the level on average is more than ``threshold`` below the
    level as estimated): the figure and the estimate scattered by ``sd`` together, Student's t
    of the estimate's ``degrees`` (the band's own t: a clean night crosses it once in 200)."""
    if sd <= 0 or degrees < 1:
        return 1.0 if drop > threshold else 0.0
    return t_cdf((drop - threshold) / sd, degrees)


def red_curve(
    drop: float,
    spread: float,
    count: int,
    policy: BaselinePolicy,
    scale: float,
    margin: float,
    nights: int,
    history: int | None = None,
    until: float = 1.0,
) -> list[float]:
    """P(a persisting drop of ``drop`` (the figure's unit) is red by night 1, 2, ... ``nights``
    after it began), on a context whose accepted nights spread by ``spread``: ``count`` of them
    in the window, ``history`` in all (the step test's spread reads them all; default ``count``).

    Each night alone is flagged when it falls below the band. From the second night on, the
    step test (:mod:`.pooled_step`) flags the nights since the drop, pooled, against the window
    before them. A drop night neither flagged joined the accepted nights, so the window the
    next night is held against has moved towards it: a drop not caught in its first nights is
    caught ever less likely. Within one night the step tests count by the strongest; the
    nights count as if independent, which overstates a short history's power (they share its
    luck): ``pinet bench --noise-only`` shows by how much. The curve stops early at the
    first night whose chance reaches ``until`` (all a question of "how many nights" needs)."""
    history = max(history or count, count)
    floor = max(policy.min_band_percent / 100.0 * scale, margin)
    longest = longest_step(policy)
    curve, missed = [], 1.0
    for k in range(1, nights + 1):
        # The band of night k: its window holds the k - 1 drop nights before it, accepted.
        window = min(policy.window, count + k - 1)
        band = _band(spread, window, policy, scale, margin)
        shift = drop * (1.0 - (k - 1) / window) if k - 1 < window else 0.0
        one = _above(shift, band, spread * math.sqrt(1.0 + 1.0 / window), window - 1)
        step = 0.0
        for j in range(2, min(k, longest) + 1):
            before = min(policy.window, count + k - j)
            if k - j >= before:
                continue  # the window before these nights is drop nights only: nothing to see
            shift = drop * (1.0 - (k - j) / before)
            degrees = min(history + k - j, HORIZON_NIGHTS) - 1 + (j - 1)
            error = spread * math.sqrt(1.0 / before + 1.0 / j)
            step = max(step, _step_fires(shift, error, critical_t(j, longest, degrees), degrees, floor))
        missed *= (1.0 - one) * (1.0 - step)
        curve.append(1.0 - missed)
        if curve[-1] >= until:
            break
    return curve


def _step_fires(shift: float, error: float, critical: float, degrees: int, floor: float) -> float:
    """P(the step test passes its t and the floor) for a true ``shift`` whose estimate scatters
    by ``error``: the non-central t by its normal approximation."""
    if error <= 0:
        return 1.0 if shift > floor else 0.0
    spread_of_t = math.sqrt(1.0 + critical * critical / (2.0 * degrees))
    by_t = _NORMAL.cdf((shift / error - critical) / spread_of_t)
    return min(by_t, _NORMAL.cdf((shift - floor) / error))


def nights_to_red(
    drop: float,
    spread: float,
    count: int,
    policy: BaselinePolicy,
    scale: float,
    margin: float = 0.0,
    history: int | None = None,
) -> int | None:
    """The nights after a persisting drop of ``drop`` until it is red in :data:`POWER` of
    cases; None when not within :data:`NIGHTS_HORIZON`."""
    curve = red_curve(drop, spread, count, policy, scale, margin, NIGHTS_HORIZON, history, until=POWER)
    return next((night for night, p in enumerate(curve, 1) if p >= POWER), None)


def predicted_red(
    accepted: Sequence[Night], drop_pct: float, nights: int, policy: BaselinePolicy | None = None
) -> list[float]:
    """P(a persisting drop of ``drop_pct`` % is red by night 1, 2, ... ``nights``) on a context
    whose accepted nights are ``accepted`` (all 0 without a baseline: nothing is judged)."""
    policy = policy or BaselinePolicy()
    noise = _Noise.of(accepted, policy)
    if noise is None:
        return [0.0] * nights
    scale = abs(noise.level)
    drop = drop_pct / 100.0 * scale
    return red_curve(drop, noise.spread, noise.count, policy, scale, noise.margin, nights, noise.history)


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
    ``window`` such nights (the 99.75 % prediction bound) plus 1.28 of a night's chance
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
    nights = nights_to_red(
        detect_pct / 100.0 * scale, power.spread_pct / 100.0 * scale, power.nights, policy, scale
    )
    needs = (
        f"a persisting {detect_pct:g} % drop is red after {nights} nights"
        if nights
        else (f"not even a persisting {detect_pct:g} % drop turns red within a month")
    )
    return (
        f"one night catches {power.one_night_pct:.1f} %, not {detect_pct:g} %: its nights differ by "
        f"{power.spread_pct:.2f} % (longer runs do not average that away); {needs}"
    )
