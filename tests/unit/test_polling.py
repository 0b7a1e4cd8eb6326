"""The one wait loop (pytest_pinet/polling.py) on a fake clock: no test here sleeps."""

from __future__ import annotations

import pytest

from pytest_pinet.errors import LabFault
from pytest_pinet.polling import Pace, poll_for, wait_until


class FakeClock:
    """A clock that moves only when the loop sleeps, recording each pause."""

    def __init__(self) -> None:
        self.now = 100.0
        self.pauses: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.pauses.append(round(seconds, 6))
        self.now += seconds


def test_the_attempt_runs_once_even_with_no_time_to_wait():
    clock, tries = FakeClock(), []
    got = poll_for(lambda: tries.append(1), timeout=0, pace=1.0, clock=clock, sleep=clock.sleep)
    assert got is None and tries == [1] and clock.pauses == []


def test_the_first_answer_is_returned_and_pauses_grow_to_their_cap():
    clock, answers = FakeClock(), iter([None, None, None, None, ("place", 3)])
    got = poll_for(
        lambda: next(answers),
        timeout=60,
        pace=Pace(0.1, backoff=2, longest=0.3),
        clock=clock,
        sleep=clock.sleep,
    )
    assert got == ("place", 3)
    assert clock.pauses == [0.1, 0.2, 0.3, 0.3]


def test_a_timeout_raises_the_callers_error_with_the_last_state_seen():
    clock, seen = FakeClock(), list[str]()

    def attempt() -> None:
        seen.append(f"busy {len(seen)}")

    with pytest.raises(LabFault, match=r"still busy 4 after 1 s") as info:
        poll_for(
            attempt,
            timeout=1.0,
            pace=0.3,
            on_timeout=lambda: LabFault("place-busy", f"still {seen[-1]} after 1 s"),
            clock=clock,
            sleep=clock.sleep,
        )
    assert info.value.category == "place-busy"
    # The last pause is cut at the deadline, and the attempt after it still counts.
    assert clock.pauses == [0.3, 0.3, 0.3, 0.1] and len(seen) == 5


def test_wait_until_says_whether_the_condition_held():
    clock, states = FakeClock(), iter([False, False, True])
    assert wait_until(lambda: next(states), timeout=5, pace=0.5, clock=clock, sleep=clock.sleep)
    assert clock.pauses == [0.5, 0.5]
    clock = FakeClock()
    assert not wait_until(lambda: False, timeout=1, pace=0.4, clock=clock, sleep=clock.sleep)
    assert sum(clock.pauses) == pytest.approx(1.0)
