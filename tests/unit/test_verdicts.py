"""Baselines and change points on constructed histories with known answers."""

from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_pinet.judge.baseline import BaselinePolicy, judge_baseline
from pytest_pinet.judge.changepoints import ChangePolicy, RunSeries, detect_change_points


def test_no_baseline_until_enough_history():
    verdict = judge_baseline(900.0, [941.0])
    assert verdict.status == "no-baseline" and not verdict.regression
    assert "no baseline yet (1 earlier results)" in verdict.explain()


def test_regression_beyond_band_and_noise_within_it():
    history = [942.0, 943.1, 941.7, 942.6, 943.0]
    assert judge_baseline(942.2, history).status == "within"
    drop = judge_baseline(915.0, history)
    assert drop.regression
    assert drop.band is not None and drop.band == pytest.approx(0.005 * 942.6, rel=1e-3)  # floor of 0.5 %
    assert "-2.9 %" in drop.explain()
    assert judge_baseline(960.0, history).status == "improvement"


def test_noisy_history_widens_the_band():
    noisy = [900.0, 940.0, 920.0, 945.0, 905.0]
    assert judge_baseline(880.0, noisy).status == "within"  # t(4) x stdev x 1.1 ~ 103
    assert judge_baseline(880.0, noisy, BaselinePolicy(spread_factor=0.5)).regression


def test_a_short_history_gives_a_wide_band_unless_it_is_steady():
    # measured on the virtual lab: a loop-device disk context ran 2148.7 then 1933.8 Mbit/s;
    # the third run's 1800 is that context's noise, not a regression
    assert judge_baseline(1800.0, [2148.7, 1933.8]).status == "within"
    # the shaped GbE link is steady: two runs are enough to catch a 3 % drop (t(1) x s x 1.22,
    # at 99.6 %: with two runs no step test can run, and the band has the whole budget)
    drop = judge_baseline(916.8, [945.2, 945.3])
    assert drop.regression and drop.band == pytest.approx(6.89, abs=0.01)
    # the band narrows as history grows: more runs, smaller t
    wide = judge_baseline(900.0, [940.0, 930.0]).band
    narrow = judge_baseline(900.0, [940.0, 930.0] * 5).band
    assert wide is not None and narrow is not None and narrow < wide / 5


@given(st.lists(st.floats(min_value=100, max_value=1000), min_size=2, max_size=20))
def test_the_median_of_history_is_never_a_regression(history):
    import statistics

    assert not judge_baseline(statistics.median(history[-10:]), history).regression


def _runs(means, seconds=20, noise=1.5, seed=1, meta=None):
    rng = random.Random(seed)
    return [
        RunSeries(
            f"run{n}",
            float(n),
            tuple(rng.gauss(m, noise) for _ in range(seconds)),
            (meta or {}).get(n, {"kernel": "6.1"}),
        )
        for n, m in enumerate(means)
    ]


def test_a_degraded_last_run_is_named_with_what_came_with_it():
    runs = _runs([942, 943, 914], meta={0: {"kernel": "6.1"}, 1: {"kernel": "6.1"}, 2: {"kernel": "6.6"}})
    (change,) = detect_change_points(runs)
    assert change.run_id == "run2"
    assert change.change_percent == pytest.approx(-2.9, abs=0.5)
    assert change.came_with == {"kernel": ("6.1", "6.6")}
    assert "run run2" in change.explain() and "kernel 6.1 -> 6.6" in change.explain()


def test_a_single_outlying_second_at_the_end_is_not_an_alarm():
    runs = _runs([942, 942, 942, 942])
    runs.append(RunSeries("tail", 99.0, (700.0,)))  # one bad sample, alone
    assert detect_change_points(runs) == []


def test_a_degraded_night_of_three_second_runs_is_a_change_point_two_odd_seconds_are_not():
    # the virtual lab's runs stop after three settled seconds
    runs = _runs([941.5, 941.6, 941.5], seconds=3, noise=0.05)
    (change,) = detect_change_points([*runs, RunSeries("degraded", 9.0, (913.2, 913.4, 913.3))])
    assert change.run_id == "degraded" and change.change_percent == pytest.approx(-3.0, abs=0.1)
    assert detect_change_points([*runs, RunSeries("tail", 9.0, (700.0, 700.0))]) == []


def test_stable_history_has_no_change_points():
    assert detect_change_points(_runs([942] * 8, seed=7)) == []


def test_two_shifts_are_both_found():
    changes = detect_change_points(_runs([942, 942, 900, 900, 930, 930]))
    assert [c.run_id for c in changes] == ["run2", "run4"]


def test_small_shifts_below_the_magnitude_floor_are_ignored():
    runs = _runs([942, 942, 940, 940], noise=0.2)
    assert detect_change_points(runs, ChangePolicy(min_change_percent=1.0)) == []
    assert detect_change_points(runs, ChangePolicy(min_change_percent=0.1))
