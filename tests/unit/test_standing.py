"""A regression stays red until accepted: the walk over nights in judge/standing.py."""

from __future__ import annotations

import random

from pytest_pinet.judge.standing import EVERY_CONTEXT, Acceptance, Night, judge_night, standing_of

DAY = 86400.0
KEY = "board=pi|direction=board->peer"


def night(n: int, level: float, noise: float = 0.05, seed: int = 0) -> Night:
    """Night ``n`` at ``level`` Mbit/s: five seconds spread by ``noise``, its median the figure."""
    rng = random.Random(seed * 1000 + n)
    samples = tuple(level + rng.uniform(-noise, noise) for _ in range(5))
    return Night(f"run{n}", 1_700_000_000 + n * DAY, sorted(samples)[2], samples)


def accept(run: str, key: str = KEY, ident: int = 1) -> Acceptance:
    return Acceptance(ident, run, key, "new kernel is slower, known", "lab", 1_700_900_000.0)


CLEAN, DEGRADED = 941.4, 913.2


def test_a_regression_persists_until_accepted_and_returns_when_the_accept_is_undone():
    nights = [night(1, CLEAN), night(2, CLEAN), night(3, DEGRADED), night(4, DEGRADED)]
    before_3 = standing_of(KEY, nights[:2])
    third = judge_night(before_3, nights[2])
    assert third.status == "new-regression" and third.since_text() == ""
    fourth = judge_night(standing_of(KEY, nights[:3]), nights[3])
    assert fourth.status == "persisting"
    assert fourth.baseline.baseline is not None and abs(fourth.baseline.baseline - CLEAN) < 0.1
    assert fourth.since_text().startswith("regression since run run3 (2 nights, first seen 2023-")
    fifth = night(5, DEGRADED)
    accepted = standing_of(KEY, nights, [accept("run3")])
    assert accepted.accepted_by is not None and [n.run_id for n in accepted.accepted] == ["run3", "run4"]
    assert judge_night(accepted, fifth).status == "within"
    undone = standing_of(KEY, nights, [])
    again = judge_night(undone, fifth)
    assert again.status == "persisting" and "(3 nights" in again.since_text()


def test_an_acceptance_of_a_run_covers_every_context_that_regressed_in_it():
    nights = [night(1, CLEAN), night(2, CLEAN), night(3, DEGRADED), night(4, DEGRADED)]
    other_context = Acceptance(2, "run3", "board=pi|direction=peer->board", "x", "lab", 0.0)
    assert standing_of(KEY, nights, [other_context]).since is not None
    assert standing_of(KEY, nights, [accept("run3", EVERY_CONTEXT)]).since is None


def test_a_regressed_night_stays_out_of_the_baseline_and_one_figure_counts_per_night():
    nights = [night(1, CLEAN), night(2, CLEAN), night(3, DEGRADED), night(4, DEGRADED), night(5, DEGRADED)]
    standing = standing_of(KEY, nights)
    assert [n.run_id for n in standing.accepted] == ["run1", "run2"]
    assert [n.run_id for n in standing.regressed] == ["run3", "run4", "run5"]


def test_the_level_coming_back_ends_the_regression():
    nights = [night(1, CLEAN), night(2, CLEAN), night(3, DEGRADED), night(4, CLEAN)]
    standing = standing_of(KEY, nights)
    assert standing.since is None and [n.run_id for n in standing.accepted] == ["run1", "run2", "run4"]


def test_a_slow_slide_inside_the_band_is_a_regression_first_seen_at_its_change_point():
    # Each night 0.4 % below the one before: inside the band of its predecessors (which widens
    # as they spread), yet the last nights sit more than 1 % below the first four.
    levels = [CLEAN] * 4 + [CLEAN * (1 - 0.004 * k) for k in range(1, 6)]
    nights = [night(n, level, noise=0.02) for n, level in enumerate(levels, 1)]
    verdicts = []
    standing = standing_of(KEY, [])
    for each in nights:
        verdict = judge_night(standing, each)
        verdicts.append(verdict.status)
        standing = verdict.after
    # Nights 5 to 7 each sit inside the band (0.4 to 1.2 % down); on night 8 the nights since
    # run6, pooled, are called against the accepted nights before them (the t test of
    # judge/pooled_step.py, at its share of the night's false-alarm budget): first seen at
    # night 6, judged against nights 1-5 (night 5, 0.4 % down, was inside the floor).
    assert verdicts[:7] == ["no-baseline"] * 2 + ["within"] * 5, verdicts
    assert verdicts[7:] == ["new-regression", "persisting"], verdicts
    assert standing.since is not None and standing.since.run_id == "run6"
    assert [n.run_id for n in standing.accepted] == ["run1", "run2", "run3", "run4", "run5"]


def test_no_slide_is_called_from_fewer_nights_than_a_baseline_needs():
    # One clean night, then two 1 % lower with steady seconds: the change-point test sees a
    # step, but one night before it says nothing of how much nights differ.
    nights = [
        night(1, CLEAN, noise=0.02),
        night(2, CLEAN * 0.99, noise=0.02),
        night(3, CLEAN * 0.99, noise=0.02),
    ]
    assert judge_night(standing_of(KEY, nights[:2]), nights[2]).status == "within"
    # With two clean nights before it, the same drop is red.
    more = [night(0, CLEAN, noise=0.02), *nights]
    assert judge_night(standing_of(KEY, more[:3]), more[3]).regression


def test_a_step_up_moves_the_baseline_without_an_accept():
    nights = [night(n, CLEAN) for n in range(1, 5)] + [night(5, 960.0), night(6, 960.0)]
    standing = standing_of(KEY, nights)
    assert standing.since is None and standing.accepted[0].run_id == "run5"
    assert judge_night(standing, night(7, CLEAN)).status == "new-regression"


def test_noisy_nights_are_no_change_points():
    # A board whose runs differ by 2 % night to night, seconds steady within a run: the
    # change-point test alone would call most pairs of nights a step.
    rng = random.Random(7)
    nights = [night(n, CLEAN * (1 + rng.gauss(0, 0.02)), noise=0.2) for n in range(1, 13)]
    statuses = []
    standing = standing_of(KEY, [])
    for each in nights:
        verdict = judge_night(standing, each)
        statuses.append(verdict.status)
        standing = verdict.after
    assert statuses.count("new-regression") + statuses.count("persisting") <= 1, statuses


def test_the_verdict_names_a_persisting_regression_and_the_acceptance_behind_its_baseline():
    import dataclasses

    from pytest_pinet.judge.threshold_rules import thresholds_from_data
    from pytest_pinet.judge.verdict import VerdictKind, judge_measurement

    from .test_store import _measurement

    rules = thresholds_from_data(
        {"rules": [{"id": "floor", "match": {"scenario": "*"}, "min_mbps": 500}]}, "t.yaml"
    )
    nights = [night(1, CLEAN), night(2, CLEAN), night(3, DEGRADED)]
    tonight = dataclasses.replace(
        _measurement(DEGRADED, started=1_700_000_000 + 9 * DAY), interval_mbps=(DEGRADED,) * 5
    )
    persisting = judge_measurement(tonight, rules, [], standing=standing_of(KEY, nights))
    assert persisting.kind is VerdictKind.REGRESSION
    (line,) = persisting.failures
    assert line.startswith(
        "regression against baseline (persisting): board->peer 913.2 Mbit/s vs baseline 941.4"
    )
    assert "; regression since run run3 (2 nights, first seen 2023-11-17)" in line
    accepted = standing_of(KEY, [*nights, night(4, DEGRADED)], [accept("run3")])
    passed = judge_measurement(tonight, rules, [], standing=accepted)
    assert passed.kind is VerdictKind.PASS
    assert "baseline level from accept #1: run run3 (one context) by lab at " in passed.reason


def test_a_step_dated_before_tonight_must_hold_without_tonight():
    # Seconds tight within each night, nights several Mbit/s apart.  The change-point test
    # dated a step at night 2; nights 2-4 clear the 0.5 % floor below night 1 (941.55 against
    # 946.50: 0.52 %) only with night 4 in them: nights 2 and 3 alone sit 0.49 % below.  That
    # called night 4 a regression "since run2", a night that had been judged fine.
    def tight(n: int, value: float) -> Night:
        samples = tuple(value + d for d in (-0.002, -0.001, 0.0, 0.001, 0.002))
        return Night(f"run{n}", 1_700_000_000 + n * DAY, value, samples)

    nights = [tight(1, 946.50), tight(2, 940.07), tight(3, 943.64)]
    verdict = judge_night(standing_of(KEY, nights), tight(4, 941.55))
    assert verdict.status == "within" and verdict.after.since is None, verdict
    assert [n.run_id for n in verdict.after.accepted] == ["run1", "run2", "run3", "run4"]


def _exact(n: int, level: float) -> Night:
    """Night ``n`` exactly at ``level``, its seconds tight around it."""
    return Night(
        f"run{n}", 1_700_000_000 + n * DAY, level, tuple(level + d for d in (-0.05, -0.02, 0, 0.02, 0.05))
    )


def test_a_slide_through_an_accepted_run_is_the_accepted_level():
    # Three clean nights spread by 1 %, then a 7 % lower level: each lower night stays inside
    # the band of three, so no regression is pending when run4 is accepted (of every context:
    # another context went red in it); the third lower night finds the slide since run4.
    clean = [_exact(1, 100.0), _exact(2, 101.0), _exact(3, 99.0)]
    lower = [_exact(4, 93.0), _exact(5, 93.0)]
    tonight = _exact(6, 93.0)
    plain = judge_night(standing_of(KEY, [*clean, *lower]), tonight)
    assert plain.status == "new-regression" and plain.change is not None and plain.change.run_id == "run4"
    taken = accept("run4", EVERY_CONTEXT)
    verdict = judge_night(standing_of(KEY, [*clean, *lower], [taken]), tonight)
    assert verdict.status == "within", verdict
    assert verdict.after.accepted_by == taken
    assert [n.run_id for n in verdict.after.accepted] == ["run4", "run5", "run6"]
    # The accept of a run before the step does not cover the slide.
    older = accept("run2", EVERY_CONTEXT)
    assert judge_night(standing_of(KEY, [*clean, *lower], [older]), tonight).status == "new-regression"
