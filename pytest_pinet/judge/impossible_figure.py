"""A figure above what its path can carry is the lab's fault, never a board's pass.

No cable, port or bus carries more than its physics (:mod:`.path_limit`).  When a run's
figure lies above that, the run did not measure the path: a host starved of CPU stretched
the receiver's seconds (a namespace link measured 966 Mbit/s on a 941.5 Mbit/s cable while
three pytest workers and a TCG guest shared two cores), a shaper was not in place, a counter
wrapped.  Passing it would put an impossible figure into the baseline and lift the line a
later honest night is judged by; the verdict says so as a lab fault and the figure is kept as
evidence, not as a sample.

A rate target is not physics: iperf3 paces towards it and overshoots at low rates (1.025
Mbit/s on a 1 Mbit/s target here), so a path limited by its sender's target is never judged
impossible by this rule.
"""

from __future__ import annotations

from ..model import Measurement
from .path_limit import PARTS
from .precision import GoodputInterval

# The parts of a path whose limit is physics (the cable, the board's port, a bus, a disk's bus).
PHYSICAL = frozenset(PARTS) - {"rate-target"}
# A run without an interval (UDP, fixed duration) is impossible only this far above the limit:
# ten times what a GbE shaper's 1 MiB bucket and the receiver's timing add over a 10 s run.
SLACK_WITHOUT_INTERVAL = 0.01


def impossible_figure(measurement: Measurement, interval: GoodputInterval | None) -> str:
    """Why ``measurement``'s figure cannot be its path's ('' when it can): its whole 95 %
    interval above the physical limit, or, without an interval, the figure more than
    :data:`SLACK_WITHOUT_INTERVAL` above it."""
    limit = measurement.limit_mbps or 0.0  # none known: nothing to be above
    part = measurement.context.limited_by
    if limit <= 0 or part not in PHYSICAL:
        return ""
    goodput = measurement.goodput_mbps
    if interval is not None:
        if interval.low <= limit:
            return ""
        shown = f"{goodput:.1f} Mbit/s (95 % interval from {interval.low:.1f})"
    elif goodput > limit * (1 + SLACK_WITHOUT_INTERVAL):
        shown = f"{goodput:.1f} Mbit/s"
    else:
        return ""
    return (
        f"measured {shown} above the {limit:.1f} Mbit/s its {part} carries: the run did not "
        "measure the path (a starved host's clock, a shaper not in place); not judged, not a "
        "baseline sample"
    )
