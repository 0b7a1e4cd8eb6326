"""The Gaussian filter judge.detection carries a drop's nights with (judge/drop_filter.py)."""

from __future__ import annotations

import math
import random
import statistics

import pytest

from pytest_pinet.judge.drop_filter import below, kept_below


def test_a_normal_kept_below_an_edge_has_the_truncated_laws_moments():
    rng = random.Random(3)
    mean, variance, share, fresh, edge = 0.4, 2.0, 0.5, 0.75, 0.3
    kept = []
    for _ in range(100_000):
        total = rng.gauss(mean, math.sqrt(variance))
        if share * total + rng.gauss(0.0, math.sqrt(fresh)) <= edge:
            kept.append(total)
    new_mean, new_variance, passed = kept_below(mean, variance, share, fresh, edge)
    assert passed == pytest.approx(len(kept) / 100_000, abs=0.005)
    assert new_mean == pytest.approx(statistics.fmean(kept), abs=0.02)
    assert new_variance == pytest.approx(statistics.variance(kept), rel=0.03)
    assert below(-40.0) == (0.0, 40.0)  # nothing passes: no division by a zero chance


def test_nights_a_band_and_a_pooled_test_judge_are_red_as_often_as_simulated():
    """Five nights: each night's own edge, and the sum of all nights so far against its edge.
    The filter (a night that passed makes its sum's test less likely) against 100 000 paths:
    the filter's normal law for what passed is an approximation, within 1.5 points here."""
    bands, sums = 1.2, [None, 1.5, 1.0, 0.5, 0.0]
    alive, mean, variance, curve = 1.0, 0.0, 0.0, []
    for k in range(5):
        passed, ratio = below(bands)
        alive, mean = alive * passed, mean - ratio
        variance += 1.0 - bands * ratio - ratio * ratio
        edge = sums[k]
        if edge is not None:
            mean, variance, passed = kept_below(mean, variance, 1.0, 0.0, edge)
            alive *= passed
        curve.append(1.0 - alive)
    rng, red = random.Random(4), [0] * 5
    for _ in range(100_000):
        total = 0.0
        for k in range(5):
            night = rng.gauss(0.0, 1.0)
            total += night
            edge = sums[k]
            if night > bands or (edge is not None and total > edge):
                for later in range(k, 5):
                    red[later] += 1
                break
    for k in range(5):
        assert curve[k] == pytest.approx(red[k] / 100_000, abs=0.015)  # 1.1 points apart at most
