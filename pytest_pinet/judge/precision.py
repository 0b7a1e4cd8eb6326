"""Deciding by precision: a figure whose confidence interval holds the line it is judged
against is *undecided*, neither passed nor failed.

The seed's 940 Mbit/s floor sits 0.16 % under GbE's 941.5 Mbit/s limit.  A run that measures
940.3 +- 0.5 % has not shown that the board reaches 940: another run of the same board may
measure 939.8.  Passing or failing it would toss a coin, so the runner keeps such a run going
(adaptive duration, up to its maximum) until its interval clears the line, and the verdict
says "undecided" with the interval when it never did.

The interval is the 95 % confidence interval of the mean per-second goodput that the
adaptive rule measured on the receiver (``TcpDetail.precision_pct``).  Runs without it
(fixed duration, UDP, disks) are judged by their figure alone, as before.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..model import Measurement
from .baseline import BaselinePolicy, judge_baseline
from .threshold_rules import Thresholds


@dataclass(frozen=True)
class GoodputInterval:
    """The 95 % confidence interval of a goodput, and how many seconds it took."""

    low: float
    high: float
    seconds: float | None

    def holds(self, line: float) -> bool:
        """True when ``line`` lies inside the interval: the run cannot tell which side it is on."""
        return self.low <= line <= self.high

    def explain(self, line: float) -> str:
        """'940.0 inside 939.6-941.2 after 60 s'."""
        after = f" after {self.seconds:.0f} s" if self.seconds else ""
        return f"{line:.1f} inside {self.low:.1f}-{self.high:.1f}{after}"


def goodput_interval(measurement: Measurement) -> GoodputInterval | None:
    """The interval of ``measurement``'s goodput, or ``None`` when none was measured.

    Its upper edge never passes the line-rate limit: no run can carry more than the wire, so a
    floor above the limit is missed, never undecided, however noisy the run was.
    """
    detail = measurement.detail
    if detail.kind != "tcp" or detail.precision_pct is None or measurement.goodput_mbps <= 0:
        return None
    goodput = measurement.goodput_mbps
    half = goodput * detail.precision_pct / 100.0
    high = goodput + half
    if measurement.limit_mbps > 0:
        high = max(goodput, min(high, measurement.limit_mbps))
    return GoodputInterval(goodput - half, high, measurement.measured_s)


def decision_lines(
    thresholds: Thresholds,
    history: Sequence[float],
    baseline: BaselinePolicy,
    context: Mapping[str, Any],
    limit_mbps: float,
) -> tuple[float, ...]:
    """The goodputs a verdict on ``context`` will compare with: the threshold rule's floor and
    the lower edge of the baseline band (where there is enough history)."""
    lines = []
    rule = thresholds.rule_for(context, limit_mbps)
    if rule is not None and (rule.min_mbps is not None or limit_mbps):
        lines.append(rule.floor(limit_mbps))
    band = judge_baseline(0.0, history, baseline)
    if band.baseline is not None and band.band is not None:
        lines.append(band.baseline - band.band)
    return tuple(lines)
