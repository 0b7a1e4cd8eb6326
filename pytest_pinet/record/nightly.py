"""A context's stored rows as nights: one figure per context per run, and its standing.

A run may hold several rows of one context: a test measured again after a failing attempt,
or two tests that both measure the context (a throttled full-duplex test's free direction).
Counting each as a sample lets one night outvote the others (a re-measured degraded night
entered the baseline twice and made the degraded level the baseline at once).  So each test
gives the attempt that stands for it (the middle one, :func:`confirmed_attempt`), and the
night's figure is the median of its tests' figures;
lab faults, hot boards, unjudged rows and excluded runs never count.

Latency under load has nights of its own (:data:`LATENCY`): the night's p90 RTT under load
(:data:`..model.latency.BASELINE_SHARE`, read from the stored probes) and every probe's RTT,
*mirrored* (negated, :func:`..judge.latency.mirrored_night`) so that the same
standing (bands, change points, acceptances) calls a rise the regression; everything shown
to people is the figure itself, in ms.  A latency night carries its p90's own margin
(:mod:`..judge.tail`), as tonight's does when it is judged, so the walk over stored nights
gives each the verdict it had.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ..judge.spread_prior import SpreadPrior
from ..judge.standing import Night, Standing
from ..judge.tail import tail_margin
from ..judge.verdict import NOT_A_BASELINE_SAMPLE, VerdictKind
from ..model.latency import BASELINE_SHARE, percentile
from .store import StoredMeasurement

NOT_THE_BOARDS = (VerdictKind.LAB_FAULT.value, VerdictKind.INVALID_THERMAL.value)


@dataclass(frozen=True)
class Metric:
    """A figure the standing follows: its name, unit, and which way is better (``sign`` 1:
    higher; -1: lower, its nights mirrored)."""

    name: str
    unit: str
    sign: float
    short_unit: str = ""  # in a one-line figure ("941.4 -> 894.3 Mbit/s"): the unit, if empty

    def value(self, row: StoredMeasurement) -> float | None:
        """The row's figure (None: the row has none, or it is no sample of this metric)."""
        if self.sign > 0:
            return None if row.verdict in NOT_A_BASELINE_SAMPLE else row.goodput_mbps
        if (
            not row.latency_rtt_ms  # a row stored before its probes were: no p90 to follow
            or row.verdict in NOT_THE_BOARDS
            or row.latency_verdict in NOT_THE_BOARDS
        ):
            return None
        # Judged for latency, or (a row stored before latency verdicts) judged at all.
        return percentile(row.latency_rtt_ms, BASELINE_SHARE) if row.latency_verdict or row.verdict else None

    def samples(self, row: StoredMeasurement) -> tuple[float, ...]:
        """The row's per-second goodputs, or every probe's RTT under load."""
        if self.sign > 0:
            return row.intervals or (row.goodput_mbps,)
        return row.latency_rtt_ms

    def shown(self, value: float) -> float:
        """A night's figure as people read it (a mirrored one un-negated)."""
        return self.sign * value


GOODPUT = Metric("goodput", "Mbit/s", 1.0)
LATENCY = Metric("latency", "ms (RTT under load p90, lower is better)", -1.0, "ms RTT p90 under load")
METRICS = {metric.name: metric for metric in (GOODPUT, LATENCY)}


def nights_of(
    rows: Sequence[StoredMeasurement],
    metric: Metric = GOODPUT,
    priors: Mapping[str, SpreadPrior | None] | None = None,
) -> list[Night]:
    """One :class:`Night` per run of one context's ``rows``, oldest first (mirrored for a
    lower-is-better ``metric``); ``priors``: the spread prior each run judged the context's
    group with (record/store_priors.py), by run."""
    attempts: dict[str, dict[str, list[StoredMeasurement]]] = {}
    for row in sorted(rows, key=lambda r: (r.started, r.id)):
        if metric.value(row) is None:
            continue
        attempts.setdefault(row.run_id, {}).setdefault(row.test_id, []).append(row)
    nights = []
    for run_id, by_test in attempts.items():
        final = [confirmed_attempt(tried, metric) for tried in by_test.values()]
        samples = tuple(metric.sign * x for row in final for x in metric.samples(row))
        meta = {"kernel": final[-1].kernel, "os": final[-1].os, "adapter": final[-1].adapter}
        value = metric.sign * float(statistics.median(metric.value(row) or 0.0 for row in final))
        margin = tail_margin(-value, [-x for x in samples]) if metric.sign < 0 else 0.0  # of the p90
        prior = (priors or {}).get(run_id)
        nights.append(Night(run_id, min(row.started for row in final), value, samples, meta, margin, prior))
    return sorted(nights, key=lambda n: n.started)


def confirmed_attempt(tried: Sequence[StoredMeasurement], metric: Metric) -> StoredMeasurement:
    """The attempt of a confirmed test that stands for it: the middle one by figure, the
    better of the middle two when they are even (judge.confirmation: red takes most attempts,
    so with two of four red the test passed).  Its verdict is the majority's; the last
    attempt's figure would be the luckiest of a disagreeing lot, and a night taken as a lucky
    attempt hides the drop the next nights' step test should see."""
    ranked = sorted(tried, key=lambda row: metric.sign * (metric.value(row) or 0.0))
    return ranked[len(ranked) // 2]


@dataclass(frozen=True)
class Persisting:
    """A context whose latest night is in an unaccepted regression."""

    key: str
    standing: Standing
    metric: Metric = GOODPUT

    @property
    def first(self) -> Night:
        """The first regressed night."""
        return self.standing.regressed[0]

    @property
    def last_good(self) -> Night | None:
        """The last accepted night before it: what "what changed" compares the first red one with."""
        before = [n for n in self.standing.accepted if n.started < self.first.started]
        return before[-1] if before else None

    @property
    def before(self) -> float:
        """The accepted level: the median of the accepted nights."""
        if not self.standing.accepted:
            return 0.0
        return self.metric.shown(float(statistics.median(self.standing.history)))

    @property
    def now(self) -> float:
        """The regressed level: the median of the regressed nights."""
        return self.metric.shown(float(statistics.median(n.value for n in self.standing.regressed)))

    @property
    def change_pct(self) -> float:
        """The regressed level against the accepted one, percent."""
        return 100.0 * (self.now - self.before) / self.before if self.before else 0.0

    @property
    def worse_pct(self) -> float:
        """How much worse, percent, whichever way is better (negative: worse): the order
        regressions are listed in, the worst first."""
        return self.metric.sign * self.change_pct

    def explain(self) -> str:
        """One line: since when, how many nights, the change."""
        day = time.strftime("%Y-%m-%d", time.gmtime(self.first.started))
        return (
            f"regression since run {self.first.run_id} ({len(self.standing.regressed)} nights, first seen "
            f"{day}): {self.before:.1f} -> {self.now:.1f} {self.metric.short_unit or self.metric.unit} "
            f"({self.change_pct:+.1f} %)"
        )
