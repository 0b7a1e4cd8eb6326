"""The detection target checked: what ``--pinet-detect PERCENT`` buys, under the noise model.

``--pinet-detect 1`` asks one night to catch a 1 % drop. Adaptive duration then measures a
run until its per-second mean is known to :func:`~pytest_pinet.judge.detection.
night_precision_for` (within the maximum duration), and a context whose nights differ by
more than longer runs can average is reported blind, with the nights a persisting drop
needs (:func:`~pytest_pinet.judge.detection.cannot_catch`). Both claims are simulated here
with the lab's noise model and the nightly verdict's own rules:

- **seconds**: the noise is second to second only (run-to-run spread 0). Runs settle by the
  settle rule (:class:`~pytest_pinet.traffic.adaptive.SettleRule`), with and without the
  target; a night's figure is its seconds' mean. Each trial is ten clean nights, then one
  clean night (a false alarm?) and one night 1 % lower (caught on that night?);
- **runs**: the noise is the run's level only, which no run length averages. The target's
  verdict on each trial's history is read (blind? red after how many nights?), and the drop
  is then planted for a month of nights to see when the verdict really turns red in 90 % of
  the trials.
"""

from __future__ import annotations

import random
import statistics
from collections.abc import Callable
from functools import partial
from typing import Any

from ..judge.baseline import BaselinePolicy
from ..judge.detection import NIGHTS_HORIZON, POWER, cannot_catch, detection_power, night_precision_for
from ..judge.spread_prior import SpreadPrior
from ..judge.standing import Night, judge_night
from ..traffic.adaptive import SettleRule
from ..virtlab.jitter import NoiseModel
from .noise import RATE, boards, model_of

DETECT_PCT = 1.0
SECONDS_SPREAD_PCT = 1.0  # per second: a run of 16 s knows its mean to 0.5 %
RUNS_SPREAD_PCT = 0.3  # night to night: one night catches about 1.5 %
MIN_SECONDS, MAX_SECONDS = 3, 60  # the settle rule's minimum, --pinet-duration
DEFAULT_PRECISION = 0.5  # --pinet-adaptive-precision's default
HISTORY = 10


def _adaptive_night(
    model: NoiseModel,
    n: int,
    level: float,
    rule: SettleRule,
    rng: random.Random,
    prior: SpreadPrior | None = None,
) -> Night:
    """One run that stops once ``rule`` says its seconds settled (or at the maximum)."""
    luck = model.level(rng)
    rates: list[float] = []
    while len(rates) < MAX_SECONDS:
        rates.append(level * luck * model.second(rng))
        if rule.settled(rates):
            break
    return Night(f"n{n}", float(n), statistics.fmean(rates), tuple(rates), prior=prior)


def _seconds_case(trials: int, rule: SettleRule, rng: random.Random) -> dict[str, float]:
    model = model_of(SECONDS_SPREAD_PCT, "seconds")
    alarms = caught = 0
    policy = BaselinePolicy()
    contexts = boards(
        trials, HISTORY, lambda n, prior: partial(_adaptive_night, model, n, RATE, rule, rng, prior), policy
    )
    lengths = [len(night.samples) for standing, _ in contexts for night in standing.accepted]
    for standing, prior in contexts:
        alarms += judge_night(standing, _adaptive_night(model, HISTORY, RATE, rule, rng, prior)).regression
        low = _adaptive_night(model, HISTORY, RATE * (1 - DETECT_PCT / 100), rule, rng, prior)
        caught += judge_night(standing, low).regression
    return {
        "precision_pct": rule.precision_pct,
        "median_seconds": statistics.median(lengths),
        "detected": caught / trials,
        "false_alarms": alarms / trials,
    }


FUTURES = 100  # drops planted after each history of the runs case


def _runs_case(trials: int, rng: random.Random) -> dict[str, Any]:
    """Histories of run-to-run noise: each one's report (blind? red after how many nights?),
    then :data:`FUTURES` persisting drops planted after that same history, to see the night by
    which 90 % of them are red: the prediction is about this context, so it is checked
    against this context's futures."""
    model = model_of(RUNS_SPREAD_PCT, "runs")
    rule = SettleRule(MIN_SECONDS, min(DEFAULT_PRECISION, night_precision_for(DETECT_PCT, HISTORY)))
    histories = max(1, trials // 10)
    blind = 0
    pairs: list[tuple[int, int]] = []  # (predicted, reached), a month and one for "not within"
    policy = BaselinePolicy()
    # The histories are contexts of boards: walked together, each night with their prior.
    contexts = boards(
        histories,
        HISTORY,
        lambda n, prior: partial(_adaptive_night, model, n, RATE, rule, rng, prior),
        policy,
    )
    for standing, prior in contexts:
        power = detection_power(standing.accepted, policy)
        if power is None or cannot_catch(power, DETECT_PCT) is None:
            continue
        blind += 1
        predicted = power.nights_to_red.get(f"{DETECT_PCT:g}")
        reached = _nights_for_power([_red_on(standing, model, rule, rng, prior) for _ in range(FUTURES)])
        month = NIGHTS_HORIZON + 1  # "not within a month" counts as the month after
        pairs.append((month if predicted is None else predicted, month if reached is None else reached))
    within = sum(1 for p, r in pairs if abs(p - r) <= 1)
    return {
        "spread_pct": RUNS_SPREAD_PCT,
        "histories": histories,
        "reported_blind": blind / histories,
        "predicted_nights": statistics.median(p for p, _ in pairs) if pairs else None,
        "observed_nights": statistics.median(r for _, r in pairs) if pairs else None,
        "within_one_night": within / len(pairs) if pairs else None,
    }


def _red_on(
    standing: Any, model: NoiseModel, rule: SettleRule, rng: random.Random, prior: SpreadPrior | None
) -> int | None:
    """The night a persisting drop of :data:`DETECT_PCT` turns red, or None within a month."""
    for night in range(1, NIGHTS_HORIZON + 1):
        low = _adaptive_night(model, HISTORY + night, RATE * (1 - DETECT_PCT / 100), rule, rng, prior)
        verdict = judge_night(standing, low)
        if verdict.regression:
            return night
        standing = verdict.after
    return None


def _nights_for_power(red_on: list[int | None]) -> int | None:
    """The first night by which :data:`POWER` of the trials were red; None: not within a month."""
    for night in range(1, NIGHTS_HORIZON + 1):
        if sum(1 for n in red_on if n is not None and n <= night) >= POWER * len(red_on):
            return night
    return None


def detect_target(trials: int, say: Callable[[str], None] = print, seed: int = 7) -> dict[str, Any]:
    """Both cases: the seconds case with and without the target, and the runs case."""
    rng = random.Random(seed)  # noqa: S311 - simulated noise
    say(f"detect target: {DETECT_PCT:g} %, noise second to second, without and with the target")
    without = _seconds_case(trials, SettleRule(MIN_SECONDS, DEFAULT_PRECISION), rng)
    target = min(DEFAULT_PRECISION, night_precision_for(DETECT_PCT, HISTORY))
    with_target = _seconds_case(trials, SettleRule(MIN_SECONDS, target), rng)
    say(f"detect target: {DETECT_PCT:g} %, noise run to run")
    return {
        "trials": trials,
        "detect_pct": DETECT_PCT,
        "max_seconds": MAX_SECONDS,
        "seconds": {"spread_pct": SECONDS_SPREAD_PCT, "without": without, "with": with_target},
        "runs": _runs_case(trials, rng),
    }


def format_detect_target(table: dict[str, Any]) -> list[str]:
    """The check, for people."""
    seconds, runs = table["seconds"], table["runs"]
    lines = [
        f"--pinet-detect {table['detect_pct']:g} under the noise model ({table['trials']} trials, "
        f"10 nights of history, runs up to {table['max_seconds']} s):"
    ]
    for name in ("without", "with"):
        case = seconds[name]
        lines.append(
            f"  second-to-second noise {seconds['spread_pct']:g} %, {name} the target: settles within "
            f"{case['precision_pct']:.2f} % after {case['median_seconds']:g} s (median); one night catches a "
            f"{table['detect_pct']:g} % drop in {100 * case['detected']:.0f} %, false alarms "
            f"{100 * case['false_alarms']:.1f} %"
        )
    predicted, observed = runs["predicted_nights"], runs["observed_nights"]
    within = runs.get("within_one_night")
    lines.append(
        f"  run-to-run noise {runs['spread_pct']:g} %: reported blind for one night after "
        f"{100 * runs['reported_blind']:.0f} % of {runs.get('histories', table['trials'])} histories; a "
        f"persisting {table['detect_pct']:g} % drop red after {_nights(predicted)} (predicted, median), "
        f"{_nights(observed)} (reached by 90 % of {FUTURES} drops planted after each history, median)"
        + (f"; within one night for {100 * within:.0f} % of the histories" if within is not None else "")
    )
    return lines


def _nights(nights: float | None) -> str:
    if nights is None or nights > NIGHTS_HORIZON:
        return "not within a month"
    return f"{nights:g} nights"
