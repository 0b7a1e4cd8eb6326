"""The start-up bench's arithmetic: what each plugin set adds, round by round, and its target."""

from __future__ import annotations

from pytest_pinet.bench.pytest_startup import PLUGIN_SETS, StartupCost, startup_lines


def _cost(bare: float, wheel: float, extra: float, both: float) -> StartupCost:
    cost = StartupCost()
    for workers in (0, 2):
        for name, seconds in zip(PLUGIN_SETS, (bare, wheel, extra, both), strict=True):
            cost.seconds[name, workers] = [seconds, seconds + 0.01, seconds - 0.01]
    return cost


def test_the_wheel_is_judged_against_bare_pytest_and_pinets_share_against_the_extras_plugins():
    lines = startup_lines(_cost(bare=0.200, wheel=0.230, extra=0.550, both=0.580))
    by_name = {name.split(" (")[0].split(", ratio")[0]: (samples, met) for name, samples, _t, met in lines}
    wheel, met = by_name["pytest start: the wheel vs bare pytest"]
    assert [round(s) for s in wheel] == [30, 30, 30] and met is True
    own, met = by_name["pytest start: pinet's own share beside its lab extra's plugins"]
    assert [round(s) for s in own] == [30, 30, 30] and met is True
    extra = next(line for line in lines if line[0].startswith("pytest start: labgrid's"))
    assert "ratio 2.75" in extra[0] and extra[3] is None


def test_a_wheel_that_costs_a_start_more_than_100_ms_misses_the_target():
    lines = startup_lines(_cost(bare=0.200, wheel=0.450, extra=0.550, both=0.560))
    wheel = next(line for line in lines if line[0].startswith("pytest start -n 2: the wheel"))
    assert wheel[3] is False and "ratio 2.25" in wheel[0]
