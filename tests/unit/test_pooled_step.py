"""The standing rule's step test (judge/pooled_step.py): the nights since a change, pooled
against the accepted window before them, within the night's false-alarm budget."""

from __future__ import annotations

import math
import random
import statistics

import pytest

from pytest_pinet.judge.baseline import (
    BAND_CONFIDENCE,
    BAND_SHARE,
    FALSE_PER_NIGHT,
    NIGHT_FALSE_ALARMS,
    BaselinePolicy,
    night_budget,
)
from pytest_pinet.judge.pooled_step import critical_t, longest_step, pooled_step, step_alpha
from pytest_pinet.judge.spread_prior import SpreadPrior
from pytest_pinet.judge.standing import Night, judge_night, standing_of
from pytest_pinet.judge.stats import t_one_sided

POLICY = BaselinePolicy()


def _direct(values: list[float], j: int) -> float:
    """The t of the last ``j`` nights against the window before them, written out."""
    after, rest = values[-j:], values[:-j]
    before = rest[-POLICY.window :]
    spread_ss = sum((x - statistics.fmean(rest)) ** 2 for x in rest)
    after_ss = sum((x - statistics.fmean(after)) ** 2 for x in after)
    spread = math.sqrt((spread_ss + after_ss) / (len(rest) - 1 + j - 1))
    return (statistics.fmean(after) - statistics.fmean(before)) / (
        spread * math.sqrt(1 / len(before) + 1 / j)
    )


def test_the_prefix_sums_give_the_t_written_out():
    rng = random.Random(3)
    for _ in range(200):
        values = [100 * (1 + rng.gauss(0, 0.01)) for _ in range(rng.randint(4, 40))]
        values += [v * 0.95 for v in values[-rng.randint(2, 3) :]]
        found = pooled_step(values, POLICY)
        if found is not None:
            assert found.t == pytest.approx(_direct(values, found.nights), rel=1e-9)


def test_the_step_tests_spend_what_the_band_leaves_of_the_nights_budget():
    longest = longest_step(POLICY)
    spent = sum(step_alpha(j, longest) for j in range(2, longest + 1))
    assert spent == pytest.approx(NIGHT_FALSE_ALARMS * (1 - BAND_SHARE))
    assert step_alpha(2, longest) > step_alpha(longest, longest)  # a drop within three nights first
    assert critical_t(2, longest, 9) > t_one_sided(BAND_CONFIDENCE, 9)  # stricter than the band's own t
    # A lab of 400 contexts holds each to half of what one of 200 does (baseline.night_budget).
    big = night_budget(SpreadPrior(1e-4, 50.0, 20, family=400))
    assert big == pytest.approx(FALSE_PER_NIGHT / 400) and night_budget(None) == NIGHT_FALSE_ALARMS
    assert sum(step_alpha(j, longest, big) for j in range(2, longest + 1)) == pytest.approx(spent / 2)


def test_a_clean_night_is_a_new_regression_at_most_once_in_200():
    # Steady state: 12 clean nights of 1 % spread accepted, the 13th judged; 4000 contexts.
    rng = random.Random(17)
    called = 0
    for _ in range(4000):
        nights = [Night(f"n{n}", float(n), 941.0 * (1 + rng.gauss(0, 0.01))) for n in range(13)]
        standing = standing_of("k", nights[:-1])
        called += judge_night(standing, nights[-1]).status == "new-regression"
    # Expected at most 20 (0.5 %); walks that flagged a history night count too.
    assert called <= 28, called


def test_a_3_percent_drop_no_night_alone_shows_is_caught_pooled_and_stays_red_inside_the_band():
    nights = [Night(f"n{n}", float(n), 941.0 * (1 + 0.01 * ((-1) ** n))) for n in range(20)]
    low = [Night(f"d{n}", 20.0 + n, 941.0 * 0.97 * (1 + 0.002 * ((-1) ** n))) for n in range(4)]
    statuses = []
    standing = standing_of("k", nights)
    for each in low:
        verdict = judge_night(standing, each)
        statuses.append(verdict.status)
        standing = verdict.after
    # Each night inside the band of +-4 %; the first two pooled are 3 % down: red from then on,
    # first seen at d0, though the band alone would let every one of them pass.
    assert statuses == ["within", "new-regression", "persisting", "persisting"], statuses
    assert standing.since is not None and standing.since.run_id == "d0"
