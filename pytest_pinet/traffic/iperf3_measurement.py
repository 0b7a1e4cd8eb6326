"""A Measurement from a finished iperf3 run: the one place iperf3's figures become the model's.

It lives in ``traffic`` because only traffic knows iperf3; ``record`` and ``judge`` see the
typed Measurement and never the tool.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..errors import LabFault
from ..model import HostFacts, Measurement, Observation, TcpDetail, TrafficContext
from .iperf3_runner import Iperf3Run


def measurement_from_iperf3(
    test_id: str,
    context: TrafficContext,
    run: Iperf3Run,
    limit_mbps: float,
    facts: Mapping[str, HostFacts] | None = None,
    observations: Sequence[Observation] = (),
) -> Measurement:
    """Build from a finished iperf3 run (client = sender).

    A run whose output holds no goodput is the lab's failure, never a 0 Mbit/s result that
    would be judged as a regression.
    """
    result = run.result
    goodput = result.goodput_mbps
    if goodput is None:
        fault = LabFault(
            "iperf3-no-result",
            f"iperf3 reported no goodput for {test_id} ({result.error or 'no totals in its output'})",
        )
        fault.evidence["iperf3 client output"] = run.client_json[-20000:]
        raise fault
    per_stream = tuple(
        s.received.mbps if s.received is not None else (s.sent.mbps if s.sent is not None else 0.0)
        for s in result.streams
    )
    detail = TcpDetail(
        sent_mbps=result.sent.mbps if result.sent is not None else None,
        retransmits=result.retransmits,
        per_stream_mbps=per_stream,
        cpu_sender_percent=result.cpu.host_total if result.cpu else None,
        cpu_receiver_percent=result.cpu.remote_total if result.cpu else None,
        iperf3_version=result.version,
        precision_pct=run.precision_pct,
    )
    return Measurement(
        test_id=test_id,
        context=context,
        goodput_mbps=goodput,
        limit_mbps=limit_mbps,
        started=run.started,
        finished=run.finished,
        detail=detail,
        interval_mbps=tuple(i.mbps for i in result.measured_intervals),
        measured_s=result.received.seconds if result.received is not None else result.measured_seconds,
        ended_by=run.ended_by,
        error=result.error,
        facts=dict(facts or {}),
        observations=tuple(observations),
        raw={"client": run.client_json, "server": run.server_json},
    )
