"""The judging policy without pytest: what a test's verdicts amount to, and when it measures again."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_pinet.errors import LabFault
from pytest_pinet.judge.verdict import Verdict, VerdictKind
from pytest_pinet.measure.goodput_judge import GoodputJudge, OutcomeKind

PASS = Verdict("m", (VerdictKind.PASS,), "pass")
NOISE = Verdict(
    "m", (VerdictKind.REGRESSION,), "regression", failures=("912.0 vs baseline 941.4",), remeasure=True
)
NO_RULE = Verdict(
    "m", (VerdictKind.NO_RULE,), "no rule", failures=("no threshold rule matches",), remeasure=False
)
HOT = Verdict("m", (VerdictKind.INVALID_THERMAL,), "hot", note="pi at 86.0 C")
SLOW = Verdict("m", (VerdictKind.KNOWN_SLOW,), "known slow", note="NetBSD raw frames with 2 threads")
VOID = Verdict(
    "m", (VerdictKind.LAB_FAULT,), "above", note="download: measured 966.0 Mbit/s above 941.5", remeasure=True
)
OPEN = Verdict("m", (VerdictKind.UNDECIDED,), "undecided", undecided=("940 inside 939.1..941.2",))


class Taken:
    """Measurements are opaque to the policy: tokens stand for them, a script gives their verdicts."""

    def __init__(self, *attempts: list[Verdict]) -> None:
        self.attempts = list(attempts)
        self.verdicts: dict[int, Verdict] = {}
        self.measured = 0

    def measure(self) -> list[object]:
        verdicts = self.attempts[self.measured]
        self.measured += 1
        tokens = [object() for _ in verdicts]
        self.verdicts.update({id(t): v for t, v in zip(tokens, verdicts, strict=True)})
        return tokens

    def verdict_of(self, token: object) -> Verdict:
        return self.verdicts[id(token)]


def judge(taken: Taken, remeasure: int, reasons: list[list[str]] | None = None):
    policy = GoodputJudge(taken.verdict_of, remeasure, (reasons if reasons is not None else []).append)
    return policy.judge(taken.measure(), taken.measure)  # type: ignore[arg-type]


def test_noise_is_confirmed_and_most_attempts_decide():
    taken = Taken([PASS, NOISE], [PASS, PASS], [PASS, PASS])
    reasons: list[list[str]] = []
    outcome = judge(taken, remeasure=2, reasons=reasons)
    # One red, one pass: a third attempt settles it; two of three passed.
    assert outcome.kind is OutcomeKind.PASSED and taken.measured == 3
    assert reasons[0] == ["912.0 vs baseline 941.4"] and reasons[1][0].startswith("confirming: 1 of 2")


def test_a_drop_one_lucky_attempt_hides_stays_red():
    taken = Taken([NOISE], [PASS], [NOISE])
    outcome = judge(taken, remeasure=2)
    assert outcome.kind is OutcomeKind.FAILED and taken.measured == 3
    assert outcome.message == (
        "912.0 vs baseline 941.4\n(earlier attempt: 912.0 vs baseline 941.4)\n(earlier attempt: passed)"
    )


def test_a_failure_that_persists_fails_with_every_attempt_quoted():
    taken = Taken([NOISE], [NOISE])
    outcome = judge(taken, remeasure=1)
    assert outcome.kind is OutcomeKind.FAILED and taken.measured == 2
    assert outcome.message == "912.0 vs baseline 941.4\n(earlier attempt: 912.0 vs baseline 941.4)"


@settings(max_examples=300, deadline=None)
@given(st.integers(min_value=0, max_value=6), st.lists(st.booleans(), min_size=7, max_size=7))
def test_red_is_a_majority_of_the_attempts_and_the_last_attempt_agrees(remeasure, script):
    """Over every remeasure count and every run of luck: a passing first attempt is never
    measured again; a suspect one is measured until most of ``1 + remeasure`` attempts agree,
    never further; the outcome is red exactly when most attempts were, and it is the final
    attempt's own verdict (so its measurements are the ones reported)."""
    taken = Taken(*[[NOISE if red else PASS] for red in script])
    outcome = judge(taken, remeasure=remeasure)
    seen = script[: taken.measured]
    total = 1 + remeasure
    assert taken.measured <= total
    if not script[0]:
        assert taken.measured == 1 and outcome.kind is OutcomeKind.PASSED
        return

    def settled(red: int, n: int) -> bool:
        return bool(2 * red > total or 2 * (red + total - n) <= total)

    assert settled(sum(seen), len(seen))  # it stopped once the majority was settled ...
    assert not any(settled(sum(seen[:n]), n) for n in range(1, len(seen)))  # ... and not before
    assert (outcome.kind is OutcomeKind.FAILED) == (2 * sum(seen) > total) == seen[-1]


def test_a_failure_measuring_cannot_change_is_not_measured_again():
    taken = Taken([NOISE, NO_RULE], [PASS, PASS])
    outcome = judge(taken, remeasure=3)
    assert outcome.kind is OutcomeKind.FAILED and taken.measured == 1
    assert "no threshold rule matches" in outcome.message and "912.0" in outcome.message


def test_precedence_failure_then_thermal_then_known_slow_then_undecided():
    assert judge(Taken([SLOW, NO_RULE, OPEN]), remeasure=0).kind is OutcomeKind.FAILED
    with pytest.raises(LabFault, match=r"too hot or throttled: pi at 86\.0 C") as fault:
        judge(Taken([SLOW, HOT, OPEN]), remeasure=0)
    assert fault.value.category == "thermal"
    assert judge(Taken([OPEN, SLOW]), remeasure=0).kind is OutcomeKind.KNOWN_SLOW
    undecided = judge(Taken([PASS, OPEN]), remeasure=0)
    assert undecided.kind is OutcomeKind.UNDECIDED and undecided.message == "940 inside 939.1..941.2"
    assert judge(Taken([PASS, PASS]), remeasure=0).kind is OutcomeKind.PASSED


def test_an_attempt_above_physics_counts_for_neither_side_and_a_lab_fault_if_it_stays():
    reasons: list[list[str]] = []
    taken = Taken([VOID, PASS], [PASS, PASS])
    assert judge(taken, remeasure=2, reasons=reasons).kind is OutcomeKind.PASSED
    assert taken.measured == 2 and reasons == [["download: measured 966.0 Mbit/s above 941.5"]]
    # A void attempt is not a red one: the drop still needs its majority of real attempts.
    taken = Taken([VOID], [NOISE], [PASS], [PASS])
    assert judge(taken, remeasure=2).kind is OutcomeKind.PASSED and taken.measured == 4
    stays = Taken([VOID, NOISE], [VOID], [VOID])
    with pytest.raises(LabFault, match=r"966\.0 Mbit/s above") as fault:
        judge(stays, remeasure=2)
    assert fault.value.category == "impossible-figure" and stays.measured == 3
