"""Waiting for a condition: the one loop every wait of pinet uses (a place, a port, a lock, a
board's boot, a process's exit).

Each wait used to be its own deadline-and-sleep loop with its own interval, its own idea of
whether a zero timeout still tries once, and its own error. Here a wait is said once: what is
tried, how often, for how long, and what a timeout means, which is the caller's error, built
when it happens so it can carry the last state seen ("held by ...", "last error ...").

Two rules hold for every wait: the attempt runs at least once, even with a timeout of zero or
less (a bound of 0 means "try, do not wait"), and the deadline is checked after each attempt,
so an attempt that succeeds at the last moment counts.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

T = TypeVar("T")


@dataclass(frozen=True)
class Pace:
    """How often to try: the first pause, growing by ``backoff`` up to ``longest`` (a wait of
    minutes for a busy place need not ask twenty times a second)."""

    first: float
    backoff: float = 1.0
    longest: float | None = None

    def pauses(self) -> Callable[[], float]:
        """A function giving the next pause each time it is called."""
        state = [self.first]

        def next_pause() -> float:
            pause = state[0]
            grown = pause * self.backoff
            state[0] = grown if self.longest is None else min(grown, self.longest)
            return pause

        return next_pause


def poll_for(
    attempt: Callable[[], T | None],
    *,
    timeout: float,
    pace: Pace | float,
    on_timeout: Callable[[], BaseException] | None = None,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> T | None:
    """Call ``attempt`` until it returns something other than None, and return that.

    When ``timeout`` seconds have passed without it: raise ``on_timeout()`` if given, else
    return None (a caller that then acts anyway, such as killing what did not stop). The
    pause never runs past the deadline. ``clock`` and ``sleep`` are there for tests.
    """
    pace = pace if isinstance(pace, Pace) else Pace(pace)
    next_pause = pace.pauses()
    deadline = clock() + timeout
    while True:
        result = attempt()
        if result is not None:
            return result
        left = deadline - clock()
        if left <= 0:
            if on_timeout is not None:
                raise on_timeout()
            return None
        sleep(min(next_pause(), left))


def wait_until(
    condition: Callable[[], bool],
    *,
    timeout: float,
    pace: Pace | float,
    on_timeout: Callable[[], BaseException] | None = None,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> bool:
    """Wait until ``condition()`` holds: True when it did, False (or ``on_timeout()`` raised)
    when ``timeout`` passed first."""
    met = poll_for(
        lambda: True if condition() else None,
        timeout=timeout,
        pace=pace,
        on_timeout=on_timeout,
        clock=clock,
        sleep=sleep,
    )
    return met is True
