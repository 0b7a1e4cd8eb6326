"""Latency verdicts under probe noise: false alarms and caught queues of the figure the
latency baseline follows (the p90, with its own margin: ``judge.tail``), beside the p90
without the margin and the p99 with it (what the verdict followed before).

A night's RTT under load is drawn from a model read off a real run of CI's namespace link
(``fixtures/lab-outputs``, 100 irtt probes under 10 TCP streams): the queue's delay
(11.1 ms there) varied run to run by ``spread`` percent, each probe within 1.5 % of it, and
about 1 in 100 replies late by an exponential few milliseconds (there: 13.9 and 16.6 ms in
one run, none in the three runs before it).  The p99 of such a night is set by its late
replies, which the next night does not repeat; the p90 is not.

Each trial judges, by the nightly verdict's own rules (the accepted standing, mirrored), one
clean night after ``history`` clean ones (a false alarm if red) and nights whose queue is
deeper by each of :data:`DEEPER` (caught within 1..3 nights?).  The same probes are judged
each way (:data:`WAYS`), so the table compares the ways, not their luck.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any

from ..judge.latency_verdict import mirrored_night
from ..judge.standing import Night, standing_of
from ..model.latency import BASELINE_SHARE, percentile
from .noise import caught_within

QUEUE_MS = 11.1  # the queue's delay under load, CI's namespace link
PROBE_JITTER = 0.015  # each probe's spread around it (relative)
LATE_SHARE = 0.01  # replies that come back late (CI: 2 of 100 one night, none in three others)
LATE_MEAN_MS = 4.0  # ... by an exponential this long on average
PROBES = 100  # a 5 s run at one probe per 50 ms
SPREADS = (1.0, 5.0)  # percent, the queue's delay run to run
HISTORIES = (3, 10)
DEEPER = (10.0, 25.0)  # percent deeper queue
NIGHTS_AFTER = 3


def _p90_night(n: int, rtts: Sequence[float]) -> Night:
    """A night as the verdict reads it: the p90, with its margin."""
    return mirrored_night(f"n{n}", float(n), percentile(rtts, BASELINE_SHARE), rtts)


def _p90_night_without_margin(n: int, rtts: Sequence[float]) -> Night:
    return replace(_p90_night(n, rtts), margin=0.0)


def _p99_night(n: int, rtts: Sequence[float]) -> Night:
    """A night as the verdict read it before it followed the p90: the p99, with its margin."""
    return mirrored_night(f"n{n}", float(n), percentile(rtts, 0.99), rtts, share=0.99)


# How a night of probes is judged: the verdict's way first.
WAYS: dict[str, Callable[[int, Sequence[float]], Night]] = {
    "p90": _p90_night,
    "p90 without margin": _p90_night_without_margin,
    "p99": _p99_night,
}


@dataclass(frozen=True)
class LatencyCell:
    """One setting's rates, per way of judging (:data:`WAYS`)."""

    spread_pct: float
    history: int
    trials: int
    false_alarms: dict[str, float]  # way -> share of clean nights called red
    detected: dict[str, dict[str, list[float]]]  # way -> deeper percent -> caught within 1..3


def probe_rtts(queue_ms: float, rng: random.Random, probes: int = PROBES) -> list[float]:
    """``probes`` RTTs around ``queue_ms``, a few of them late."""
    rtts = []
    for _ in range(probes):
        rtt = rng.gauss(queue_ms, PROBE_JITTER * queue_ms)
        if rng.random() < LATE_SHARE:
            rtt += rng.expovariate(1.0 / LATE_MEAN_MS)
        rtts.append(rtt)
    return rtts


def _drawn(night: Night) -> Callable[[], Night]:
    """A night drawn beforehand, as the noise bench's attempts are drawn: its probes are this
    bench's figure, so it is judged once (the suite's confirmation of a latency failure is
    the goodput bench's to model)."""
    return lambda: night


def simulate_latency(
    spread_pct: float, history: int, trials: int, seed: int = 1, probes: int = PROBES
) -> LatencyCell:
    """``trials`` histories of clean nights, each judged against a clean night and against
    :data:`NIGHTS_AFTER` nights of each deeper queue, every way of :data:`WAYS`."""
    rng = random.Random(seed)  # noqa: S311 - simulated noise
    alarms = dict.fromkeys(WAYS, 0)
    caught = {way: {deeper: [0] * NIGHTS_AFTER for deeper in DEEPER} for way in WAYS}

    def level(scale: float) -> float:
        return QUEUE_MS * scale * (1 + rng.gauss(0, spread_pct / 100))

    for _ in range(trials):
        clean = [probe_rtts(level(1.0), rng, probes) for _ in range(history)]
        tonight = probe_rtts(level(1.0), rng, probes)
        after = {
            deeper: [probe_rtts(level(1 + deeper / 100), rng, probes) for _ in range(NIGHTS_AFTER)]
            for deeper in DEEPER
        }
        for way, night in WAYS.items():
            standing = standing_of("simulated", [night(n, rtts) for n, rtts in enumerate(clean)])
            alarms[way] += caught_within(standing, [_drawn(night(history, tonight))], 1) is not None
            for deeper, series in after.items():
                when = caught_within(
                    standing, [_drawn(night(history + k, rtts)) for k, rtts in enumerate(series)], 1
                )
                for k in range(NIGHTS_AFTER):
                    caught[way][deeper][k] += when is not None and when <= k + 1
    return LatencyCell(
        spread_pct,
        history,
        trials,
        {way: count / trials for way, count in alarms.items()},
        {
            way: {f"{deeper:g}": [c / trials for c in counts] for deeper, counts in by_deeper.items()}
            for way, by_deeper in caught.items()
        },
    )


def latency_sensitivity(trials: int, say: Callable[[str], None] = print) -> dict[str, Any]:
    """Every cell of the grid (spreads x histories)."""
    cells = []
    for spread in SPREADS:
        for history in HISTORIES:
            say(f"latency noise: spread {spread:g} %, {history} nights of history")
            cells.append(simulate_latency(spread, history, trials))
    return {"trials": trials, "probes": PROBES, "cells": [asdict(cell) for cell in cells]}


def format_latency_noise(table: dict[str, Any]) -> list[str]:
    """The grid, for people: a line per setting and way of judging."""
    lines = [
        f"latency verdicts under probe noise ({table['trials']} simulated trials per setting, "
        f"{table['probes']} probes a night, ~1 % of replies late): false alarms per clean night, "
        f"a deeper queue caught within 1/2/{NIGHTS_AFTER} nights, by the figure judged"
    ]
    for cell in table["cells"]:
        for way, alarms in cell["false_alarms"].items():
            caught = "  ".join(
                f"+{deeper} %: " + "/".join(f"{100 * r:3.0f}" for r in rates)
                for deeper, rates in cell["detected"][way].items()
            )
            lines.append(
                f"  spread {cell['spread_pct']:g} %, history {cell['history']:2d}, {way:18}: "
                f"false alarms {100 * alarms:4.1f} %; caught {caught}"
            )
    return lines
