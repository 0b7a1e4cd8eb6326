"""Allure 3 performance metrics: one metric set per kind of figure, one row per context.

Allure 3's metrics page groups samples by key: every sample of one key becomes one row with
Count, Total, Avg, Min, Max, a delta against the last night and a trend over the history it
keeps (one mean per key per run).  Its columns cannot be switched off.  So that every figure
on that page means something, each key here is one *context* (board, image or kernel,
adapter, scenario, direction, profile, qdisc ...) of one *kind* (TCP goodput, UDP frames/s,
loss, disk MB/s, Jain fairness, retransmits, CPU): a row then holds one context's samples of
one night, its Total is that context's own (one sample: the sample itself), and its trend is
that context across nights.  Kinds are sections with their own unit and direction; loopback
runs have sections of their own, never mixed with link runs, and disk figures sit under
storage, never under network.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from ..model import LatencyUse, Measurement


@dataclass(frozen=True)
class MetricKind:
    """One metric set: a section of the metrics page."""

    key: str  # orders the sections ("1-..." first)
    title: str
    unit: str
    better: str  # "higher", "lower"


TCP_GOODPUT = MetricKind("1-tcp-goodput", "TCP goodput over a link", "Mbit/s", "higher")
ROUTED_GOODPUT = MetricKind("2-routed-goodput", "Routed goodput through the board", "Mbit/s", "higher")
UPLOAD_ACHIEVED = MetricKind("3-upload-achieved", "Paced upload: achieved of its target", "%", "higher")
UDP_FRAMES = MetricKind("4-udp-frames", "UDP delivered over a link", "frames/s", "higher")
UDP_MBITS = MetricKind("5-udp-mbits", "UDP delivered over a link (payload)", "Mbit/s", "higher")
UDP_LOSS = MetricKind("6-udp-loss", "UDP loss over a link", "%", "lower")
UDP_LOOPBACK = MetricKind(
    "7-udp-loopback-frames", "UDP over loopback (no wire: the stack alone)", "frames/s", "higher"
)
FAIRNESS = MetricKind("8-fairness", "Fairness between streams (Jain index)", "", "higher")
RETRANSMITS = MetricKind("9-retransmits", "TCP retransmits per run", "", "lower")
SENDER_CPU = MetricKind("a-cpu-sender", "Sender CPU", "%", "lower")
RECEIVER_CPU = MetricKind("b-cpu-receiver", "Receiver CPU", "%", "lower")
DISK = MetricKind("c-storage", "Storage: disk throughput", "MB/s", "higher")
LATENCY_P99 = MetricKind("d-latency-p99", "Latency under load, RTT p99", "ms", "lower")
LATENCY_MEDIAN = MetricKind("e-latency-median", "Latency under load, RTT median", "ms", "lower")
LATENCY_INDUCED = MetricKind(
    "f-latency-induced", "Latency induced by the load (median over idle)", "ms", "lower"
)
KINDS = (
    TCP_GOODPUT,
    ROUTED_GOODPUT,
    UPLOAD_ACHIEVED,
    UDP_FRAMES,
    UDP_MBITS,
    UDP_LOSS,
    UDP_LOOPBACK,
    FAIRNESS,
    RETRANSMITS,
    SENDER_CPU,
    RECEIVER_CPU,
    DISK,
    LATENCY_P99,
    LATENCY_MEDIAN,
    LATENCY_INDUCED,
)


@dataclass(frozen=True)
class MetricSample:
    """One figure of one context of one kind."""

    kind: MetricKind
    context: str
    value: float

    @property
    def key(self) -> str:
        """The metric's key: kind and context, so that a row and its trend are one context's."""
        return f"{self.kind.key} | {self.context}"


def system_of(measurement: Measurement) -> str:
    """What the board ran: the catalogue image when pinet flashed one, else its kernel
    (a tree level and a part of every metric's context)."""
    c = measurement.context
    if c.image:
        return c.image
    return f"kernel {c.kernel}" if c.kernel else "kernel ?"


def context_label(measurement: Measurement) -> str:
    """Everything a figure is only comparable within, most significant first."""
    c = measurement.context
    parts = [c.board, system_of(measurement), c.adapter or c.link, c.scenario, c.direction, c.duplex]
    parts.append(c.profile)
    if c.qdisc:
        parts.append(c.qdisc)
    if c.rate_target_mbps:
        parts.append(f"up {c.rate_target_mbps:g} Mbit/s")
    if c.opposite_rate_mbps:
        parts.append(f"other way {c.opposite_rate_mbps:g} Mbit/s")
    if c.filesystem:
        parts.append(f"{c.filesystem} {c.block_bytes} B")
    if c.protocol == "UDP":
        parts.append(f"{c.streams} thread{'s' if c.streams != 1 else ''}")
    return " / ".join(str(p) for p in parts if p)


def measuring_test(measurement: Measurement) -> str:
    """The test function that took a measurement (``test_adapter_full_duplex``)."""
    return measurement.test_id.rsplit("::", 1)[-1].split("[", 1)[0]


def samples(measurement: Measurement) -> Iterator[MetricSample]:
    """The figures of one measurement, each under its kind.  Two tests may measure the same
    context (the unthrottled direction of a throttled full-duplex test is a plain one), so a
    row is one context *of one test*: one figure a night, never two added up."""
    c = measurement.context
    where = f"{context_label(measurement)} · {measuring_test(measurement)}"
    detail = measurement.detail
    if detail.kind == "disk":
        yield MetricSample(DISK, where, round(detail.mib_per_s * 1.048576, 3))  # MiB/s -> MB/s
        return
    if detail.kind == "udp":
        if c.direction == "board->board":
            yield MetricSample(UDP_LOOPBACK, where, round(detail.received_pps, 1))
            return
        yield MetricSample(UDP_FRAMES, where, round(detail.received_pps, 1))
        yield MetricSample(UDP_MBITS, where, round(measurement.goodput_mbps, 2))
        if detail.loss_pct is not None:
            yield MetricSample(UDP_LOSS, where, round(detail.loss_pct, 3))
        return
    routed = c.scenario.startswith("routing")
    yield MetricSample(ROUTED_GOODPUT if routed else TCP_GOODPUT, where, round(measurement.goodput_mbps, 2))
    if c.rate_target_mbps:
        achieved = 100.0 * measurement.goodput_mbps / c.rate_target_mbps
        yield MetricSample(UPLOAD_ACHIEVED, where, round(achieved, 2))
    if len(detail.per_stream_mbps) > 1:
        from ..judge.fairness import jain_fairness

        jain = jain_fairness(detail.per_stream_mbps)
        if jain is not None:
            yield MetricSample(FAIRNESS, where, round(jain, 4))
    if detail.retransmits is not None:
        yield MetricSample(RETRANSMITS, where, float(detail.retransmits))
    if detail.cpu_sender_percent is not None:
        yield MetricSample(SENDER_CPU, where, round(detail.cpu_sender_percent, 1))
    if detail.cpu_receiver_percent is not None:
        yield MetricSample(RECEIVER_CPU, where, round(detail.cpu_receiver_percent, 1))
    yield from latency_samples(detail.latency, where)


def latency_samples(latency: LatencyUse | None, where: str) -> Iterator[MetricSample]:
    """RTT under load (p99, median) and the latency the load induced, in ms; nothing at all
    when the probe measured nothing (a missing latency is never a 0 ms sample)."""
    if latency is None or latency.not_measured or latency.load is None:
        return
    if latency.load.p99_ms is not None:
        yield MetricSample(LATENCY_P99, where, round(latency.load.p99_ms, 3))
    if latency.load.median_ms is not None:
        yield MetricSample(LATENCY_MEDIAN, where, round(latency.load.median_ms, 3))
    if latency.induced_ms is not None:
        yield MetricSample(LATENCY_INDUCED, where, round(latency.induced_ms, 3))


def perf_entry(sample: MetricSample, measurement: Measurement) -> dict[str, object]:
    """The ``*-perf.json`` entry Allure 3 reads: its title, unit, section and direction ride
    along, so the report needs no per-key configuration."""
    return {
        "id": f"{measurement.id}:{sample.kind.key}",
        "key": sample.key,
        "value": sample.value,
        "start": int(measurement.started * 1000),
        "stop": int(measurement.finished * 1000),
        "title": sample.context,
        "unit": sample.kind.unit,
        "group": sample.kind.key,
        "groupTitle": f"{sample.kind.title}" + (f" ({sample.kind.unit})" if sample.kind.unit else ""),
        "better": sample.kind.better,
    }


def groups_config() -> dict[str, dict[str, str]]:
    """``performance.groups`` of the Allure configuration: a title per metric set."""
    return {kind.key: {"title": kind.title + (f" ({kind.unit})" if kind.unit else "")} for kind in KINDS}
