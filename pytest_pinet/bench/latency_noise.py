"""Latency verdicts under probe noise: false alarms and caught queues, with and without the
p99's own margin (``judge.tail``).

A night's RTT under load is drawn from a model read off a real run of CI's namespace link
(``fixtures/corpus/lab-outputs``, 100 irtt probes under 10 TCP streams): the queue's delay
(11.1 ms there) varied run to run by ``spread`` percent, each probe within 1.5 % of it, and
about 1 in 100 replies late by an exponential few milliseconds (there: 13.9 and 16.6 ms
in one run, none in three runs before it).  The
p99 of such a night is set by its late replies, which the next night does not repeat.

Each trial judges, by the nightly verdict's own rules (the accepted standing, mirrored), one
clean night after ``history`` clean ones (a false alarm if red) and nights whose queue is
deeper by each of :data:`DEEPER` (caught within 1..3 nights?).  The same draws are judged
with the margin and with the margin set to zero, so the table shows what it costs in
sensitivity and what it saves in false alarms.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any

from ..judge.latency import mirrored_night
from ..judge.standing import Night, standing_of
from ..traffic.latency_parse import percentile
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


@dataclass(frozen=True)
class LatencyCell:
    """One setting's rates, with the margin and without it."""

    spread_pct: float
    history: int
    trials: int
    false_alarms: float
    false_alarms_without_margin: float
    detected: dict[str, list[float]]  # deeper percent -> share caught within 1..NIGHTS_AFTER
    detected_without_margin: dict[str, list[float]]


def probe_night(n: int, queue_ms: float, rng: random.Random, probes: int = PROBES) -> Night:
    """Night ``n``: ``probes`` RTTs around ``queue_ms``, a few of them late; mirrored as the
    standing reads latency, with its margin."""
    rtts = []
    for _ in range(probes):
        rtt = rng.gauss(queue_ms, PROBE_JITTER * queue_ms)
        if rng.random() < LATE_SHARE:
            rtt += rng.expovariate(1.0 / LATE_MEAN_MS)
        rtts.append(rtt)
    return mirrored_night(f"n{n}", float(n), percentile(rtts, 0.99), rtts)


def _without_margin(nights: Sequence[Night]) -> list[Night]:
    return [replace(night, margin=0.0) for night in nights]


def _with_margin(nights: Sequence[Night]) -> list[Night]:
    return list(nights)


SHAPES: tuple[Callable[[Sequence[Night]], list[Night]], ...] = (_with_margin, _without_margin)


def simulate_latency(
    spread_pct: float, history: int, trials: int, seed: int = 1, probes: int = PROBES
) -> LatencyCell:
    """``trials`` histories of clean nights, each judged against a clean night and against
    :data:`NIGHTS_AFTER` nights of each deeper queue, with and without the margin."""
    rng = random.Random(seed)  # noqa: S311 - simulated noise
    alarms = [0, 0]
    caught = [{deeper: [0] * NIGHTS_AFTER for deeper in DEEPER} for _ in range(2)]

    def level(scale: float) -> float:
        return QUEUE_MS * scale * (1 + rng.gauss(0, spread_pct / 100))

    for _ in range(trials):
        clean = [probe_night(n, level(1.0), rng, probes) for n in range(history)]
        tonight = [probe_night(history, level(1.0), rng, probes)]
        after = {
            deeper: [
                probe_night(history + k, level(1 + deeper / 100), rng, probes) for k in range(NIGHTS_AFTER)
            ]
            for deeper in DEEPER
        }
        for way, shape in enumerate(SHAPES):
            standing = standing_of("simulated", shape(clean))
            alarms[way] += caught_within(standing, shape(tonight)) is not None
            for deeper, nights in after.items():
                night = caught_within(standing, shape(nights))
                for k in range(NIGHTS_AFTER):
                    caught[way][deeper][k] += night is not None and night <= k + 1

    def rates(way: int) -> dict[str, list[float]]:
        return {f"{deeper:g}": [c / trials for c in counts] for deeper, counts in caught[way].items()}

    return LatencyCell(
        spread_pct, history, trials, alarms[0] / trials, alarms[1] / trials, rates(0), rates(1)
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
    """The grid, for people: with the margin, then (in brackets) without it."""
    lines = [
        f"latency verdicts under probe noise ({table['trials']} simulated trials per setting, "
        f"{table['probes']} probes a night, ~1 % of replies late): false alarms per clean night, "
        f"a deeper queue caught within 1/2/{NIGHTS_AFTER} nights; [without the p99's own margin]"
    ]
    for cell in table["cells"]:

        def shown(detected: dict[str, list[float]]) -> str:
            return "  ".join(
                f"+{deeper} %: " + "/".join(f"{100 * r:3.0f}" for r in rates)
                for deeper, rates in detected.items()
            )

        lines.append(
            f"  spread {cell['spread_pct']:g} %, history {cell['history']:2d}: false alarms "
            f"{100 * cell['false_alarms']:4.1f} % [{100 * cell['false_alarms_without_margin']:4.1f} %]; "
            f"caught {shown(cell['detected'])} [{shown(cell['detected_without_margin'])}]"
        )
    return lines
