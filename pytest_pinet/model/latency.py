"""Latency under load: what the queue under test did to round-trip time while TCP ran.

Goodput says how much got through; these figures say how long a packet of someone else's
(a video call, a DNS lookup) waited behind it.  Probes run idle first, then under load
(after the warm-up the goodput also omits); the difference of the medians is the latency
the load induced.  A probe that could not run leaves ``not_measured`` with the reason and
every figure ``None``: a missing latency is never 0 ms.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

# The figure a latency baseline follows: the p90 under load.  The p99 of 100 probes is set by
# its one or two late replies, which the next run does not repeat (``pinet bench --noise-only``:
# a queue 25 % deeper caught within 3 nights in 50-77 % of trials by the p99, 99 % on the first
# night by the p90).  The p99 keeps the ceiling rules (queue physics) and the tables.
BASELINE_SHARE = 0.90


def percentile(values: Sequence[float], share: float) -> float:
    """The ``share`` (0..1) percentile, linear between the closest ranks (numpy's default)."""
    ordered = sorted(values)
    if not ordered:
        raise ValueError("percentile of nothing")
    rank = share * (len(ordered) - 1)
    low, high = math.floor(rank), math.ceil(rank)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


@dataclass(frozen=True)
class ProbeFigures:
    """One probe series summarized: replies, loss and RTT percentiles (milliseconds)."""

    sent: int
    received: int
    loss_pct: float | None  # None when nothing was sent
    median_ms: float | None  # None when nothing came back
    p90_ms: float | None = None
    p99_ms: float | None = None
    send_median_ms: float | None = None  # irtt only: one-way, prober -> far end
    receive_median_ms: float | None = None  # irtt only: one-way, far end -> prober
    one_way_withheld: str = ""  # why the one-way delays are not given ('' : given, or ping)


@dataclass(frozen=True)
class BacklogSample:
    """The qdisc's queue on one board interface at one moment of the run."""

    seconds: float  # since the load started
    interface: str
    bytes: int
    packets: int


@dataclass(frozen=True)
class LatencyUse:
    """Latency under load of one run, with the probe and the queue that explain it."""

    tool: str  # irtt, ping, or "" when not measured
    prober: str  # host that sent the probes
    target: str  # address probed, through the board
    interval_ms: float
    idle: ProbeFigures | None
    load: ProbeFigures | None
    not_measured: str | None = None  # why no figure exists (no tool, ICMP filtered, ...)
    backlog: tuple[BacklogSample, ...] = ()
    backlog_not_reported: str | None = None  # e.g. a BSD board: no per-qdisc backlog
    load_rtt_ms: tuple[float | None, ...] = ()  # every probe under load, in order (None = lost)

    @property
    def induced_ms(self) -> float | None:
        """Under-load median minus idle median: what the load added to a round trip."""
        if self.idle is None or self.load is None:
            return None
        if self.idle.median_ms is None or self.load.median_ms is None:
            return None
        return self.load.median_ms - self.idle.median_ms

    @property
    def induced_p99_ms(self) -> float | None:
        """Under-load p99 minus idle median: the worst the load added (seen by 1 in 100)."""
        if self.idle is None or self.load is None:
            return None
        if self.idle.median_ms is None or self.load.p99_ms is None:
            return None
        return self.load.p99_ms - self.idle.median_ms

    @property
    def baseline_ms(self) -> float | None:
        """The figure the latency baseline follows (:data:`BASELINE_SHARE` of the probes under
        load that came back), None when none did."""
        got = [v for v in self.load_rtt_ms if v is not None]
        if got:
            return percentile(got, BASELINE_SHARE)
        return self.load.p90_ms if self.load is not None else None

    def max_backlog(self, interface: str) -> tuple[int, int] | None:
        """The deepest queue seen on ``interface`` (bytes, packets), if sampled."""
        seen = [s for s in self.backlog if s.interface == interface]
        if not seen:
            return None
        deepest = max(seen, key=lambda s: s.bytes)
        return deepest.bytes, deepest.packets
