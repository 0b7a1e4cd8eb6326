"""The verdict as a pure function: no lab, no pytest fixture, only a measurement, rules and
history; and the measurement's own id, which survives a copy."""

from __future__ import annotations

import dataclasses

from hypothesis import given
from hypothesis import strategies as st

from pytest_pinet.judge.baseline import BaselinePolicy
from pytest_pinet.judge.path_limit import PARTS
from pytest_pinet.judge.threshold_rules import thresholds_from_data
from pytest_pinet.judge.verdict import JudgePolicy, VerdictKind, judge_measurement
from pytest_pinet.model import Measurement, Observation, TcpDetail, TrafficContext

RULES = thresholds_from_data(
    {
        "rules": [
            {"id": "gbe", "match": {"scenario": "ethernet"}, "min_mbps": 940},
            {
                "id": "ax",
                "match": {"scenario": "ethernet", "driver": "ax"},
                "min_mbps": 940,
                "known_slow": "ax",
            },
        ]
    },
    "t.yaml",
)


def measured(goodput, scenario="ethernet", driver="", hot=None, precision=None):
    context = TrafficContext(
        "lab", scenario, "pi", "pc", "eth", "", "board->peer", "half", 2, 20, 2, 1000, 1500, driver=driver
    )
    observations = (Observation("pi", "eth0", temperature_c=(hot, hot)),) if hot else ()
    detail = TcpDetail(
        goodput, 4, (goodput / 2, goodput / 2), None, None, "iperf 3.12", precision_pct=precision
    )
    return Measurement(
        "t", context, goodput, 941.5, 0.0, 1.0, detail, observations=observations, measured_s=60
    )


def test_a_pass_has_nothing_to_remeasure():
    verdict = judge_measurement(measured(941.0), RULES, [])
    assert verdict.kinds == (VerdictKind.PASS,) and verdict.label == "pass"
    assert not verdict.failed and not verdict.remeasure and "no baseline yet" in verdict.reason


def test_below_threshold_and_regression_together_may_be_remeasured():
    verdict = judge_measurement(measured(900.0), RULES, [941.0, 941.2, 940.9])
    assert verdict.kinds == (VerdictKind.REGRESSION, VerdictKind.BELOW_THRESHOLD)
    assert verdict.label == "regression+below-threshold"
    assert verdict.failed and verdict.remeasure and len(verdict.failures) == 2
    assert "retransmits 4" in verdict.failures[0]


def test_a_link_no_rule_names_is_held_to_its_line_rate_and_says_so():
    """No speed or MTU is left without a floor: 90 % of the link's own line-rate limit."""
    passed = judge_measurement(measured(900.0, scenario="udp-sendto"), RULES, [])
    assert passed.kind is VerdictKind.PASS
    below = judge_measurement(measured(800.0, scenario="udp-sendto"), RULES, [])
    assert below.kind is VerdictKind.BELOW_THRESHOLD and "rule line-rate-fraction" in below.failures[0]
    assert "847.4" in below.failures[0]  # 0.9 x 941.5


def test_a_missing_rule_without_a_limit_cannot_be_cured_by_measuring_again():
    verdict = judge_measurement(
        dataclasses.replace(measured(941.0, scenario="udp-sendto"), limit_mbps=None), RULES, []
    )
    assert verdict.kind is VerdictKind.NO_RULE and verdict.failed and not verdict.remeasure
    assert "no rule in t.yaml" in verdict.failures[0]


def test_known_slow_and_too_hot_are_not_failures():
    slow = judge_measurement(measured(736.0, driver="ax"), RULES, [])
    assert slow.kind is VerdictKind.KNOWN_SLOW and not slow.failed and "ax" in slow.note
    hot = judge_measurement(measured(700.0, hot=85.0), RULES, [], JudgePolicy(max_temp_c=80.0))
    assert hot.kind is VerdictKind.INVALID_THERMAL and not hot.failed and "85.0 °C" in hot.note


def test_the_id_survives_a_copy_and_the_verdict_names_it():
    original = measured(941.0)
    copy = dataclasses.replace(original, goodput_mbps=942.0)
    assert copy.id == original.id and measured(941.0).id != original.id
    assert judge_measurement(copy, RULES, []).measurement_id == original.id


def test_an_interval_holding_the_floor_is_undecided_not_a_coin_toss():
    # the example: 940 inside 939.6-941.2 after 60 s
    verdict = judge_measurement(measured(940.4, precision=0.085), RULES, [])
    assert verdict.kinds == (VerdictKind.UNDECIDED,) and not verdict.failed and not verdict.remeasure
    assert verdict.undecided == ("board->peer threshold 940.0 inside 939.6-941.2 after 60 s: undecided",)
    # the same figure, either side, with an interval that clears the floor
    assert judge_measurement(measured(940.4, precision=0.02), RULES, []).kind is VerdictKind.PASS
    below = judge_measurement(measured(939.5, precision=0.02), RULES, [])
    assert below.kind is VerdictKind.BELOW_THRESHOLD and below.failed


def test_an_interval_holding_the_baseline_edge_is_undecided_the_floor_still_counts():
    history = [941.0, 941.2, 940.9, 941.1]  # band: the 1 % floor, edge 931.6
    one_percent = JudgePolicy(BaselinePolicy(min_band_percent=1.0))
    edge = judge_measurement(measured(931.0, precision=0.2), RULES, history, one_percent)
    assert VerdictKind.REGRESSION not in edge.kinds and VerdictKind.UNDECIDED in edge.kinds
    assert edge.kind is VerdictKind.BELOW_THRESHOLD and edge.failed  # 931 +- 1.9 is clearly under 940
    assert "baseline edge 931." in edge.undecided[0]
    clear = judge_measurement(measured(931.0, precision=0.01), RULES, history, one_percent)
    assert clear.kinds[0] is VerdictKind.REGRESSION and not clear.undecided


def test_a_floor_above_the_wire_is_missed_however_noisy_the_run():
    # a noisy 934.9 +- 11.6 once held 945 "inside 923.2-946.5": no run carries more than the
    # 941.5 the wire allows, so the interval stops there and the floor is missed
    above = thresholds_from_data(
        {"rules": [{"id": "above", "match": {"scenario": "ethernet"}, "min_mbps": 945}]}, "above.yaml"
    )
    verdict = judge_measurement(measured(934.9, precision=1.245), above, [])
    assert verdict.kinds == (VerdictKind.BELOW_THRESHOLD,) and verdict.failed and not verdict.undecided
    # the same run still leaves a floor inside its interval undecided
    inside = judge_measurement(measured(934.9, precision=1.245), RULES, [])
    assert inside.kinds == (VerdictKind.UNDECIDED,), inside


@given(
    part=st.sampled_from(PARTS),
    ratio=st.floats(0.5, 1.2),
    precision=st.one_of(st.none(), st.floats(0.05, 5.0)),
)
def test_a_figure_above_its_physical_limit_is_the_labs_fault_and_a_rate_target_never(part, ratio, precision):
    """Over every part of a path, figure and interval: a lab fault exactly when the whole
    interval (without one: the figure past 1 %) lies above a limit physics sets; the verdict
    may be measured again and keeps the figure and the part in its reason."""
    limit = 941.5
    measurement = dataclasses.replace(measured(limit * ratio, precision=precision), limit_mbps=limit)
    measurement = dataclasses.replace(
        measurement, context=dataclasses.replace(measurement.context, limited_by=part)
    )
    verdict = judge_measurement(measurement, RULES, [941.0] * 10)
    figure_low = limit * ratio * (1 - (precision or 0) / 100)
    physical = part != "rate-target"
    impossible = physical and (ratio > 1.01 if precision is None else figure_low > limit)
    assert (verdict.kind is VerdictKind.LAB_FAULT) is impossible, verdict
    if impossible:
        assert verdict.remeasure and not verdict.failed and verdict.label == "lab-fault"
        assert f"{limit * ratio:.1f} Mbit/s" in verdict.reason and f"its {part} carries" in verdict.reason
