"""Typed view of one iperf3 ``-J`` run.

iperf3's JSON has changed across ten years of releases (3.0.7 has no ``sender`` or
``omitted`` flags, 3.11 added ``sum_received`` for UDP and ``*_bidir_reverse`` sums, 3.17+
adds new per-stream fields).  Tests and reports should not care: they get these frozen
dataclasses, with ``None`` where a version simply does not say.
"""

from __future__ import annotations

from dataclasses import dataclass, field

BITS_PER_MBIT = 1e6


@dataclass(frozen=True)
class Totals:
    """Bytes moved over a span, as one end of the connection counted them."""

    bytes: int
    seconds: float
    bits_per_second: float
    retransmits: int | None = None

    @property
    def mbps(self) -> float:
        """Throughput in Mbit/s (10^6 bit/s), the unit every threshold uses."""
        return self.bits_per_second / BITS_PER_MBIT


@dataclass(frozen=True)
class UdpTotals:
    """Receiver-side UDP figures; ``lost_percent`` is what loss thresholds judge."""

    jitter_ms: float
    lost_packets: int
    packets: int
    lost_percent: float


@dataclass(frozen=True)
class StreamResult:
    """End-of-test figures of one stream (one TCP connection or UDP flow)."""

    socket: int
    sent: Totals | None
    received: Totals | None
    udp: UdpTotals | None = None
    max_rtt_us: int | None = None
    mean_rtt_us: int | None = None


@dataclass(frozen=True)
class IntervalSample:
    """One reporting interval (normally one second) summed over all streams."""

    start: float
    end: float
    seconds: float
    bytes: int
    bits_per_second: float
    omitted: bool
    retransmits: int | None = None
    stream_bits_per_second: tuple[float, ...] = ()

    @property
    def mbps(self) -> float:
        """Interval throughput in Mbit/s."""
        return self.bits_per_second / BITS_PER_MBIT


@dataclass(frozen=True)
class CpuUtilization:
    """CPU use in percent of one CPU-equivalent, as iperf3 measures it on both ends."""

    host_total: float
    host_user: float
    host_system: float
    remote_total: float
    remote_user: float
    remote_system: float


@dataclass(frozen=True)
class Iperf3Result:
    """One iperf3 run.

    ``sent`` / ``received`` are the client-reported totals (``end.sum_sent`` /
    ``end.sum_received``); in ``--bidir`` runs the reverse direction is in
    ``reverse_sent`` / ``reverse_received``.  ``error`` is set when iperf3 reported one; a
    run can carry both an error and totals (interrupted with ``^C``), and keeping those totals
    is what lets a lab never lose a measurement it already took.
    """

    version: str | None
    protocol: str
    num_streams: int
    reverse: bool
    bidir: bool
    role: str  # "client" or "server": whose view the file is
    duration: float
    omit: float
    bytes_target: int
    timestamp: int | None
    remote_host: str | None
    sent: Totals | None
    received: Totals | None
    reverse_sent: Totals | None = None
    reverse_received: Totals | None = None
    udp: UdpTotals | None = None
    streams: tuple[StreamResult, ...] = ()
    reverse_streams: tuple[StreamResult, ...] = ()
    intervals: tuple[IntervalSample, ...] = ()
    cpu: CpuUtilization | None = None
    sender_congestion: str | None = None
    receiver_congestion: str | None = None
    error: str | None = None
    omitted_flagged: bool = field(default=True)

    @property
    def has_totals(self) -> bool:
        """True when the run produced end-of-test totals."""
        return self.sent is not None or self.received is not None

    @property
    def goodput_mbps(self) -> float | None:
        """What arrived, in Mbit/s: the receiver's count, the sender's only if absent.

        The receiver's figure is the honest one: a sender counts bytes queued in its own
        socket buffer that may never cross the link.
        """
        if self.received is not None and self.received.bytes > 0:
            return self.received.mbps
        if self.sent is None:
            return None
        if self.udp is not None and self.udp.packets > 0:
            # Old UDP output only has the sender's sum; the loss figures are the receiver's.
            delivered = (self.udp.packets - self.udp.lost_packets) / self.udp.packets
            return self.sent.mbps * delivered
        return self.sent.mbps

    @property
    def measured_seconds(self) -> float | None:
        """How long data flowed: the sender's span (``-n`` byte-mode runs have no duration)."""
        for totals in (self.sent, self.received):
            if totals is not None and totals.seconds > 0:
                return totals.seconds
        return None

    @property
    def retransmits(self) -> int | None:
        """TCP retransmits reported by the sender (``None`` on platforms without them)."""
        return self.sent.retransmits if self.sent is not None else None

    @property
    def measured_intervals(self) -> tuple[IntervalSample, ...]:
        """Intervals after the omitted warm-up."""
        return tuple(i for i in self.intervals if not i.omitted)

    @property
    def omitted_intervals(self) -> tuple[IntervalSample, ...]:
        """Warm-up intervals iperf3 left out of its totals."""
        return tuple(i for i in self.intervals if i.omitted)
