"""One typed Measurement flows from traffic to judge to record.

It holds the context a result is only meaningful in (which board, link, direction, duplex,
streams, durations, link speed) and the values measured, and nothing that depends on pytest,
so the same value feeds thresholds, the results files and the reports.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

from .traffic.iperf3_runner import Iperf3Run


@dataclass(frozen=True)
class TrafficContext:
    """Where and how a measurement was taken: the keys thresholds and baselines match on."""

    lab: str
    scenario: str
    board: str
    peer: str
    link: str
    adapter: str
    direction: str  # "board->peer", "peer->board"
    duplex: str  # "half" or "full"
    streams: int
    duration_s: int
    omit_s: int
    link_speed_mbps: int
    mtu: int
    protocol: str = "TCP"
    profile: str = "stock"
    qdisc: str = ""
    kernel: str = ""
    os: str = ""
    driver: str = ""
    rate_target_mbps: int = 0  # the sender's -b target in total; 0 = as fast as it can
    filesystem: str = ""  # storage suite: ext2, ext3, ext4, vfat
    block_bytes: int = 0  # storage suite: the dd block size

    def as_match(self) -> dict[str, Any]:
        """The context as threshold match keys."""
        return asdict(self)


@dataclass(frozen=True)
class Measurement:
    """A measured goodput with its context, its limit and the evidence behind it."""

    test_id: str
    context: TrafficContext
    goodput_mbps: float
    sent_mbps: float | None
    retransmits: int | None
    per_stream_mbps: tuple[float, ...]
    interval_mbps: tuple[float, ...]
    cpu_sender_percent: float | None
    cpu_receiver_percent: float | None
    limit_mbps: float
    iperf3_version: str | None
    started: float
    finished: float
    error: str | None = None
    ended_by: str = "fixed"  # fixed, settled (adaptive stop) or max-duration (never settled)
    measured_s: float | None = None  # seconds the figure covers, after the warm-up
    precision_pct: float | None = None  # 95 % half-width of the mean when the adaptive rule looked
    facts: dict[str, Any] = field(default_factory=dict)
    observations: tuple[dict[str, Any], ...] = ()
    evidence: dict[str, Any] = field(default_factory=dict)  # scenario proof: qdisc counters, heat
    raw: dict[str, str] = field(default_factory=dict)

    @classmethod
    def from_iperf3(
        cls,
        test_id: str,
        context: TrafficContext,
        run: Iperf3Run,
        limit_mbps: float,
        facts: dict[str, Any] | None = None,
        observations: list[dict[str, Any]] | None = None,
    ) -> Measurement:
        """Build from a finished iperf3 run (client = sender)."""
        result = run.result
        goodput = result.goodput_mbps
        per_stream = tuple(
            s.received.mbps if s.received is not None else (s.sent.mbps if s.sent is not None else 0.0)
            for s in result.streams
        )
        return cls(
            test_id=test_id,
            context=context,
            goodput_mbps=goodput if goodput is not None else 0.0,
            sent_mbps=result.sent.mbps if result.sent is not None else None,
            retransmits=result.retransmits,
            per_stream_mbps=per_stream,
            interval_mbps=tuple(i.mbps for i in result.measured_intervals),
            cpu_sender_percent=result.cpu.host_total if result.cpu else None,
            cpu_receiver_percent=result.cpu.remote_total if result.cpu else None,
            limit_mbps=limit_mbps,
            iperf3_version=result.version,
            started=run.started,
            finished=run.finished,
            error=result.error,
            ended_by=run.ended_by,
            measured_s=result.received.seconds if result.received is not None else result.measured_seconds,
            precision_pct=run.precision_pct,
            facts=facts or {},
            observations=tuple(observations or ()),
            raw={"client": run.client_json, "server": run.server_json},
        )

    def summary(self) -> dict[str, Any]:
        """Everything but the raw outputs, as JSON-ready data."""
        data = asdict(self)
        data.pop("raw")
        return data

    def to_json(self) -> str:
        """One line of the results file."""
        return json.dumps(self.summary(), sort_keys=True)
