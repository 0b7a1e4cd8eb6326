"""The spread contexts of one group share (judge/spread_prior.py): fitted, applied, kept."""

from __future__ import annotations

import math
import random

import pytest

from pytest_pinet.judge.baseline import BaselinePolicy, judge_baseline
from pytest_pinet.judge.pooled_step import pooled_step
from pytest_pinet.judge.spread_prior import (
    SpreadPrior,
    applies,
    explains,
    fit,
    moderated,
    relative_spread,
)
from pytest_pinet.judge.standing import Night, judge_night, standing_of
from pytest_pinet.judge.stats import digamma, f_cdf, tetragamma, trigamma, trigamma_inverse


def test_the_polygamma_functions_match_their_closed_forms():
    euler = 0.5772156649015329
    assert digamma(1.0) == pytest.approx(-euler, abs=1e-10)
    assert digamma(0.5) == pytest.approx(-euler - 2 * math.log(2), abs=1e-10)
    assert trigamma(1.0) == pytest.approx(math.pi**2 / 6, rel=1e-9)
    assert trigamma(0.5) == pytest.approx(math.pi**2 / 2, rel=1e-9)
    assert tetragamma(1.0) == pytest.approx(-2 * 1.2020569031595942, rel=1e-9)
    for value in (0.01, 0.3, 1.0, 5.0, 100.0):
        assert trigamma(trigamma_inverse(value)) == pytest.approx(value, rel=1e-7)
    assert f_cdf(1.0, 5, 10) == pytest.approx(0.5349, abs=1e-4)  # R: pf(1, 5, 10)


def _spreads(sds: list[float], nights: int, rng: random.Random) -> list[tuple[float, int]]:
    found = []
    for sd in sds:
        values = [1000.0 * (1 + rng.gauss(0, sd)) for _ in range(nights)]
        spread = relative_spread(values)
        assert spread is not None
        found.append(spread)
    return found


def test_contexts_that_share_their_noise_give_a_prior_worth_many_nights():
    rng = random.Random(4)
    prior = fit(_spreads([0.01] * 200, 10, rng), family=200)
    assert prior is not None and prior.contexts == 200 and prior.family == 200
    assert prior.spread_pct == pytest.approx(1.0, rel=0.05)
    assert prior.degrees > 100  # 200 contexts of 9 degrees each, all alike


def test_contexts_that_differ_give_a_prior_worth_little():
    rng = random.Random(5)
    mixed = fit(_spreads([0.001, 0.003, 0.01, 0.03] * 25, 10, rng))
    assert mixed is not None and mixed.degrees < 3
    assert fit(_spreads([0.01, 0.01], 10, rng)) is None  # two contexts say nothing of a law
    assert fit(_spreads([0.01, 0.01], 10, rng), family=50) == SpreadPrior(0.0, 0.0, 2, 50)


def test_a_context_the_prior_does_not_explain_keeps_its_own_spread():
    prior = SpreadPrior(1e-4, 200.0, 40)  # 1 % between nights
    rng = random.Random(6)
    noisy = [1000 * (1 + rng.gauss(0, 0.01)) for _ in range(10)]
    quiet = [1000 * (1 + rng.gauss(0, 0.0005)) for _ in range(10)]
    assert applies(prior, noisy) is prior
    assert applies(prior, quiet) is None  # a half-duplex run at line rate among routed ones
    assert applies(prior, [1000.0 * (1 + rng.gauss(0, 0.05)) for _ in range(10)]) is None
    assert applies(None, noisy) is None and applies(SpreadPrior(0.0, 0.0, 2, 50), noisy) is None


def test_the_f_law_bounds_are_its_quantiles():
    prior = SpreadPrior(1e-4, 47.3, 40)
    for degrees in (1, 4, 9):
        inside = [r for r in (0.05 * n for n in range(1, 200)) if explains(prior, r * 1e-4, degrees)]
        low, high = min(inside), max(inside)
        assert f_cdf(low, degrees, 47.3) >= 0.005 and f_cdf(low - 0.05, degrees, 47.3) < 0.005
        assert f_cdf(high, degrees, 47.3) <= 0.995 and f_cdf(high + 0.05, degrees, 47.3) > 0.995


def test_a_prior_worth_a_fraction_of_a_degree_explains_what_its_f_law_does():
    """Its upper 0.5 % quantile is about 4e90: far past e^30, where the search once stopped,
    and past where the F law's x = nf / (nf + d) rounds to 1 (f_cdf then takes the complement)."""
    prior = SpreadPrior(1e-4, 0.05, 3)
    assert 0.6 < f_cdf(1e15, 9, 0.05) < 0.62  # 1.0 when x rounded to 1
    assert explains(prior, 1e-4 * 1e20, 9) is prior
    assert f_cdf(1e100, 9, 0.05) > 0.995 and explains(prior, 1e-4 * 1e100, 9) is None
    assert explains(SpreadPrior(0.0, 50.0, 3), 1e-4, 9) is None  # no spread to pool: a damaged row


def test_a_drop_night_the_band_let_pass_does_not_cost_the_step_test_its_prior():
    """A 0.8 % drop on a board whose nights differ by 0.2 %: the first night is inside a
    three-night band, and the window holding it spreads wider than the prior explains. The
    step test judges the prior on the window before the step and sees the drop the next night;
    judged on the last window, the context had its own four nights only, and stayed blind."""
    prior = SpreadPrior(4e-6, 47.0, 1000, 1000)
    clean = [1000.0, 1003.0, 997.0]
    window = [*clean, 992.0]
    assert judge_baseline(992.0, clean, prior=prior, budget=0.0008).status == "within"
    assert applies(prior, window) is None
    assert judge_baseline(991.0, window, budget=0.0008).status == "within"
    found = pooled_step([*window, 991.0], BaselinePolicy(), prior=prior, budget=0.0008)
    assert found is not None and found.nights == 2 and found.after == pytest.approx(991.5)
    assert pooled_step([*window, 991.0], BaselinePolicy(), budget=0.0008) is None


def test_the_moderated_spread_weighs_each_by_its_worth():
    prior = SpreadPrior(1e-4, 90.0, 40)
    variance, degrees = moderated(prior, squares=9 * 4.0, degrees=9, level=1000.0)  # own sd 2, prior 10
    assert degrees == 99 and variance == pytest.approx((36 + 90 * 100) / 99)
    assert moderated(None, 36.0, 9, 1000.0) == (4.0, 9.0)


def test_with_a_prior_two_nights_judge_as_many():
    """A new context of a board whose contexts agree: its band is the board's, not t(1)'s."""
    prior = SpreadPrior(1e-4, 300.0, 100)  # 1 % between nights, worth 300 degrees
    alone = judge_baseline(955.0, [990.0, 1000.0])
    pooled = judge_baseline(955.0, [990.0, 1000.0], prior=prior)
    assert alone.status == "within" and pooled.status == "regression"
    assert pooled.band is not None and alone.band is not None and pooled.band < alone.band / 5


def test_a_night_is_judged_with_the_prior_it_carries_and_a_walk_gives_the_same():
    prior = SpreadPrior(1e-4, 300.0, 100, family=100)
    rng = random.Random(7)
    clean = [Night(f"n{n}", float(n), 941.0 * (1 + rng.gauss(0, 0.01)), prior=prior) for n in range(10)]
    drop = [Night(f"d{n}", 10.0 + n, 941.0 * 0.97 * (1 + rng.gauss(0, 0.01)), prior=prior) for n in range(3)]
    standing = standing_of("k", clean)
    verdicts = []
    for night in drop:
        verdict = judge_night(standing, night, (), BaselinePolicy())
        verdicts.append(verdict.status)
        standing = verdict.after
    assert "new-regression" in verdicts  # the 3 % drop is red within three nights
    again = standing_of("k", [*clean, *drop])
    assert again == standing  # each night carried its prior: the walk from the first night agrees
