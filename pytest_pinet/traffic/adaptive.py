"""Adaptive duration: stop a run once its per-second goodput has settled.

The seeds measure for a fixed 65 s.  On a link whose per-second figures barely move, most of
those seconds add nothing: the mean is known to a fraction of a percent after a few.  The
rule here stops a run when the 95 % confidence half-width of the mean per-second rate, after
the omitted warm-up, is within ``precision_pct`` of the mean, but never before
``min_seconds`` of measured traffic; a run that does not settle ends at the configured
maximum (iperf3's own ``-t``).  Each measurement records which rule ended it.

iperf3 3.12 (Debian bookworm, Raspberry Pi OS) has no live JSON output (``--json-stream``
came with 3.17), so the rate is sampled on the receiver, with the receiver's own clock so
that SSH latency adds no jitter: the payload its iperf3 server's TCP sockets received
(``ss``'s ``bytes_received``), or where ``ss`` cannot tell, the receiving interface's byte
counter (which in full duplex also carries the other direction's ACKs).  The figure reported
is still iperf3's receiver count, never this one.
"""

from __future__ import annotations

import itertools
import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from ..judge.stats import mean_half_width, t_two_sided

SETTLED = "settled"
MAX_DURATION = "max-duration"
FIXED = "fixed"


def t95(degrees: int) -> float:
    """Two-sided 95 % quantile of Student's t with ``degrees`` degrees of freedom."""
    if degrees < 1:
        raise ValueError("at least one degree of freedom is needed")
    return t_two_sided(0.95, degrees)


def half_width_pct(rates: list[float]) -> float:
    """95 % confidence half-width of the mean of ``rates``, in percent of the mean."""
    if len(rates) < 2:
        return math.inf
    mean = statistics.fmean(rates)
    if mean <= 0:
        return math.inf
    return 100.0 * mean_half_width(rates, 0.95) / mean


@dataclass(frozen=True)
class SettleRule:
    """When a run may stop early.  ``min_seconds`` counts measured (non-omitted) seconds."""

    min_seconds: int = 5
    precision_pct: float = 0.5

    def __post_init__(self) -> None:
        if self.min_seconds < 2:
            raise ValueError(f"adaptive minimum must be at least 2 s, got {self.min_seconds}")
        if not 0 < self.precision_pct <= 50:
            raise ValueError(f"adaptive precision must be in (0, 50] %, got {self.precision_pct}")

    def settled(self, rates: list[float]) -> bool:
        """True once enough measured seconds agree closely enough."""
        return len(rates) >= self.min_seconds and settled_half_width_pct(rates) <= self.precision_pct


def batch_means(rates: list[float], size: int) -> list[float]:
    """Means of consecutive non-overlapping batches of ``size`` samples (the tail dropped)."""
    return [sum(rates[i : i + size]) / size for i in range(0, len(rates) - size + 1, size)]


def settled_half_width_pct(rates: list[float]) -> float:
    """The half-width the rule judges: of the per-second rates, or of 2-second batch means.

    iperf3 paces ``-b`` in whole blocks (128 KiB for TCP), so a rate-limited stream's
    seconds alternate (104.8 and 94.4 Mbit/s for 10 x 10M here) while every two seconds sum
    to the same.  Batch means are the textbook remedy for such correlated samples; with at
    least three batches they are as valid an estimate of the mean's precision.
    """
    pairs = batch_means(rates, 2)
    return min(half_width_pct(rates), half_width_pct(pairs) if len(pairs) >= 3 else math.inf)


def clear_of(rates: list[float], lines_mbps: Sequence[float]) -> bool:
    """True when the 95 % interval of the mean of ``rates`` (payload bytes/s) contains none of
    ``lines_mbps`` (the threshold and the baseline's lower edge a verdict will compare with).

    A run whose interval straddles such a line is not stopped by the settle rule: stopping it
    would leave its verdict to the luck of where this run's mean fell.
    """
    if not lines_mbps:
        return True
    if len(rates) < 2:
        return False
    mean = 8 * statistics.fmean(rates) / 1e6
    half = settled_half_width_pct(rates) / 100.0 * mean
    return all(abs(mean - line) > half for line in lines_mbps)


@dataclass(frozen=True)
class CounterSample:
    """What a receiver had received, read at its own clock (seconds).

    ``tcp_bytes`` is the payload of the iperf3 server's sockets (``None`` without ``ss``),
    ``rx_bytes`` the interface counter.
    """

    clock: float
    rx_bytes: int
    tcp_bytes: int | None = None


# iperf3 starts counting its warm-up once its client has connected, a little after the
# sampler's first reading: samples taken before the first reading's clock + omit + this
# margin are left out.
WARMUP_MARGIN_S = 0.25
# How much later than that the first kept sample is asked for: the receiver's clock is read
# over SSH, whose latency varies between readings (tens of ms on a namespace, up to a few
# hundred on an emulated board).
SAMPLE_SLACK_S = 0.15


def sample_phase(omit: int) -> float:
    """Where in each second the sampler reads, so that a reading falls just after the warm-up.

    Sampling on whole seconds from the start left up to a second between the warm-up's end
    and the first kept reading: that second was run, but counted for nothing (a 3-second
    minimum took 4 seconds after a 2 s warm-up).  With the readings shifted by this fraction,
    the first one lands ``SAMPLE_SLACK_S`` after the warm-up's end.
    """
    return (omit + WARMUP_MARGIN_S + SAMPLE_SLACK_S) % 1.0


def warmup_end(samples: list[CounterSample], omit: int) -> float:
    """The receiver's clock from which samples count: the first reading's + omit + margin."""
    return samples[0].clock + omit + WARMUP_MARGIN_S


def per_second_rates(samples: list[CounterSample], skip_until: float) -> list[float]:
    """Bytes/s between consecutive samples taken after ``skip_until`` (receiver clock).

    The sockets' payload count where every kept sample has it, else the interface counter.
    A counter that went backwards (interface reset) ends nothing silently: that pair is left
    out, so the rule simply waits for more seconds.
    """
    rates = []
    kept = [s for s in samples if s.clock >= skip_until]
    use_tcp = bool(kept) and all(s.tcp_bytes is not None for s in kept)
    for old, new in itertools.pairwise(kept):
        span = new.clock - old.clock
        before, after = (old.tcp_bytes, new.tcp_bytes) if use_tcp else (old.rx_bytes, new.rx_bytes)
        if span > 0.2 and before is not None and after is not None and after >= before:
            rates.append((after - before) / span)
    return rates


# A receiver whose counters stood still this long after the warm-up is not on a slow link:
# its cable is down, a host stopped, or the iperf3 server stopped reading.  Waiting for the
# client's own timeout cost such a run its planned end plus 8 s (a cable pulled 2 s into a
# 5 s run: 12 s); the run is a lab fault either way.  Three sampling intervals of about a
# second each (2.5: the readings' SSH jitter puts three of them anywhere from 2.9 s apart):
# a loss burst behind a deep queue at 10 Mbit/s pauses a receiver for about one RTO, well
# under one second.
STALL_S = 2.5
# Without socket counters (no ``ss``), the interface's: the sampler's own SSH session may
# cross it, a few kB a second, so less than this much is still standing still.
STALL_NOISE_BYTES_PER_S = 20_000


def _moved(old: CounterSample, new: CounterSample) -> bool:
    if old.tcp_bytes is not None and new.tcp_bytes is not None:
        return new.tcp_bytes != old.tcp_bytes
    return new.rx_bytes - old.rx_bytes > STALL_NOISE_BYTES_PER_S * max(new.clock - old.clock, 0.0)


def stalled_for(samples: list[CounterSample], skip_until: float) -> float:
    """Seconds the receiver's counters have stood still up to its latest reading, counting
    only the stillness from ``skip_until`` on (receiver clock: the warm-up's end); 0 while
    they move, and 0 when they never moved at all (a connection still being made is not a
    stall).  A path that carried bytes in the warm-up and then nothing is stalled from the
    warm-up's end: a board hung 2 s into a run waited out the client's 17 s timeout when
    only movement after the warm-up counted."""
    if len(samples) < 2 or samples[-1].clock < skip_until:
        return 0.0
    last = since = samples[-1]
    for earlier in reversed(samples[:-1]):
        if _moved(earlier, last):
            return max(0.0, last.clock - max(since.clock, skip_until))
        since = earlier
    return 0.0


def parse_counter_sample(text: str) -> CounterSample | None:
    """Parse the sampling script's output: the clock, ``nic N``, then ``bytes_received:N``
    lines from ``ss``; ``None`` if the clock or the interface counter is missing."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if len(lines) < 2 or not lines[1].startswith("nic "):
        return None
    try:
        # bash writes $EPOCHREALTIME with the locale's decimal mark (1712345678,123456).
        clock, rx_bytes = float(lines[0].replace(",", ".")), int(lines[1][4:])
        received = [int(line.split(":", 1)[1]) for line in lines[2:] if line.startswith("bytes_received:")]
    except ValueError:
        return None
    return CounterSample(clock, rx_bytes, sum(received) if received else None)
