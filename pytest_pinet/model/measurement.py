"""One typed Measurement flows from traffic to judge to record.

Every kind of measurement shares what a verdict and a trend need (context, goodput, limit,
timing); what only one kind has (TCP streams and retransmits, UDP frame rates and loss, disk
MB/s) sits in a typed detail, so nothing hides in an untyped dict and a reader of the results
file sees ``detail.kind`` first.

Each measurement has its own ``id``: the store and the verdict find it by that id, and a copy
made with ``dataclasses.replace`` keeps it (an ``id()`` of the object would not).
"""

from __future__ import annotations

import json
import uuid
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from .context import TrafficContext
from .host_facts import HostFacts
from .latency import LatencyUse
from .observation import Observation
from .udp_counters import ReceiverCounters


def new_measurement_id() -> str:
    """A fresh id: unique across processes, xdist workers and nights."""
    return uuid.uuid4().hex


@dataclass(frozen=True)
class QdiscUse:
    """What the qdisc under test did on one board interface during a run (counter deltas)."""

    interface: str
    kind: str
    instances: int
    sent_bytes: int
    sent_packets: int
    dropped: int
    overlimits: int
    requeues: int


@dataclass(frozen=True)
class RouteUse:
    """The routed path a measurement crossed: its two links and the board between them."""

    lan: str
    wan: str
    board: str


@dataclass(frozen=True)
class TcpDetail:
    """What iperf3 reported of a TCP run beyond the goodput."""

    sent_mbps: float | None
    retransmits: int | None
    per_stream_mbps: tuple[float, ...]
    cpu_sender_percent: float | None
    cpu_receiver_percent: float | None
    iperf3_version: str | None
    precision_pct: float | None = None  # 95 % half-width of the mean when the adaptive rule looked
    qdisc: tuple[QdiscUse, ...] = ()  # routing: proof the qdisc under test carried the traffic
    route: RouteUse | None = None
    min_max_stream_ratio: float | None = None  # routing: slowest stream over the fastest
    latency: LatencyUse | None = None  # routing: round-trip time idle and under this load
    kind: Literal["tcp"] = "tcp"


@dataclass(frozen=True)
class UdpDetail:
    """A UDP packet-rate run: what the generator sent and what the receiver's kernel counted."""

    mode: str  # sendto, sendmmsg, raw
    threads: int
    sent_mbps: float
    sent_pps: float
    received_pps: float
    loss_pct: float | None  # None when nothing was sent (never a silent 0 %)
    generator_cpu_pct: float | None
    system_busy_pct: float | None
    enobufs: int
    send_errors: int
    receiver: ReceiverCounters
    kind: Literal["udp"] = "udp"


@dataclass(frozen=True)
class DiskDetail:
    """One direction of a block-size sweep on a scratch disk."""

    mib_per_s: float
    bytes: int
    device: str
    kind: Literal["disk"] = "disk"


Detail = TcpDetail | UdpDetail | DiskDetail


@dataclass(frozen=True)
class Measurement:
    """A measured figure with its context, its limit and the evidence behind it.

    ``goodput_mbps`` is the figure every kind is judged and trended by (TCP payload, UDP
    payload the receiver counted, disk bytes); ``limit_mbps`` is 0 where no line-rate limit
    applies (disks, loopback).
    """

    test_id: str
    context: TrafficContext
    goodput_mbps: float
    limit_mbps: float
    started: float
    finished: float
    detail: Detail
    interval_mbps: tuple[float, ...] = ()
    measured_s: float | None = None  # seconds the figure covers, after the warm-up
    ended_by: str = "fixed"  # fixed, settled (adaptive stop) or max-duration (never settled)
    error: str | None = None
    facts: dict[str, HostFacts] = field(default_factory=dict)  # by role: "board", "peer"
    observations: tuple[Observation, ...] = ()
    raw: dict[str, str] = field(default_factory=dict)  # tool outputs, kept as files beside the results
    id: str = field(default_factory=new_measurement_id)

    @property
    def tcp(self) -> TcpDetail | None:
        """The TCP detail, or None for another kind."""
        return self.detail if isinstance(self.detail, TcpDetail) else None

    @property
    def per_stream_mbps(self) -> tuple[float, ...]:
        """Per-stream goodputs of a TCP run (empty for other kinds)."""
        return self.tcp.per_stream_mbps if self.tcp else ()

    @property
    def retransmits(self) -> int | None:
        """TCP retransmits, or None where there are none to count."""
        return self.tcp.retransmits if self.tcp else None

    @property
    def sent_mbps(self) -> float | None:
        """What the sender put out, where the kind knows it."""
        if isinstance(self.detail, TcpDetail | UdpDetail):
            return self.detail.sent_mbps
        return None

    @property
    def iperf3_version(self) -> str | None:
        """The iperf3 that measured, for TCP runs."""
        return self.tcp.iperf3_version if self.tcp else None

    def summary(self) -> dict[str, Any]:
        """Everything but the raw outputs, as JSON-ready data."""
        data = asdict(self)
        data.pop("raw")
        return data

    def to_json(self) -> str:
        """One line of the results file."""
        return json.dumps(self.summary(), sort_keys=True)
