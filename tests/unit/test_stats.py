"""One statistics module for every verdict (pytest_pinet/judge/stats.py), against the tables."""

from __future__ import annotations

import math
import statistics

import pytest

from pytest_pinet.judge.baseline import BAND_CONFIDENCE, BaselinePolicy, judge_baseline, spread_band
from pytest_pinet.judge.stats import mad, mean_half_width, robust_sd, t_one_sided, t_two_sided

# Student's t, one-sided 99.5 %, from published tables (NIST/SEMATECH e-Handbook, 1.3.6.7.2).
T_995 = {2: 9.925, 9: 3.250, 19: 2.861, 49: 2.680, 100: 2.626}
T_975 = {1: 12.706, 10: 2.228, 30: 2.042, 120: 1.980}
# One-sided 99.75 %, the two-sided 99.5 % column of the same tables.
T_9975 = {2: 14.089, 9: 3.690, 19: 3.174, 49: 2.940}


@pytest.mark.parametrize(("degrees", "table"), T_9975.items())
def test_one_sided_t_matches_the_table_far_in_the_tail(degrees, table):
    assert t_one_sided(0.9975, degrees) == pytest.approx(table, rel=5e-4)


@pytest.mark.parametrize(("degrees", "table"), T_995.items())
def test_one_sided_t_matches_the_table_for_any_degrees_of_freedom(degrees, table):
    assert t_one_sided(0.995, degrees) == pytest.approx(table, rel=2e-4)


@pytest.mark.parametrize(("degrees", "table"), T_975.items())
def test_two_sided_t_matches_the_table(degrees, table):
    assert t_two_sided(0.95, degrees) == pytest.approx(table, rel=3e-4)


@pytest.mark.parametrize("window", [3, 10, 20, 50])
def test_the_baseline_band_of_any_window_is_students_prediction_bound(window):
    """A window above 10 once got the normal quantile (a band 10-19 % too narrow)."""
    history = [940.0 + (i % 5) * 0.4 for i in range(window)]
    spread = statistics.stdev(history)
    expected = t_one_sided(BAND_CONFIDENCE, window - 1) * spread * math.sqrt(1 + 1 / window)
    assert spread_band(spread, window, None) == pytest.approx(expected, rel=5e-3)
    verdict = judge_baseline(900.0, history, BaselinePolicy(window=window, min_band_percent=0.0))
    assert verdict is not None and verdict.regression


def test_the_robust_spread_ignores_one_wild_second():
    seconds = [100.0, 101.0, 99.0, 100.5, 99.5, 20.0]
    assert mad(seconds) == pytest.approx(0.75)
    assert robust_sd(seconds) == pytest.approx(1.4826 * 0.75)
    assert statistics.stdev(seconds) > 20 * robust_sd(seconds)
    assert mean_half_width([1.0]) == math.inf
