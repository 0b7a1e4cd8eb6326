"""A Measurement from a finished iperf3 run: the one place iperf3's figures become the model's.

It lives in ``traffic`` because only traffic knows iperf3; ``record`` and ``judge`` see the
typed Measurement and never the tool.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..errors import LabFault
from ..model import HostFacts, Measurement, Observation, TcpDetail, TrafficContext
from .iperf3_model import IntervalSample, Iperf3Result
from .iperf3_parse import Iperf3OutputError, parse_iperf3
from .iperf3_runner import Iperf3Run
from .receiver_view import receiver_seconds


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
    measured_s = result.received.seconds if result.received is not None else result.measured_seconds
    server = _server(run)  # the server's log, parsed once for the uses below
    received = receiver_seconds(server) if server is not None else ()
    interval_mbps = per_second_mbps(run, received)
    window = sender_window(
        received,
        result.sent.seconds if result.sent is not None else None,
        warmup_overrun(result, server),
    )
    if goodput is not None and window is not None:
        goodput, measured_s, kept = window
        interval_mbps = tuple(i.mbps for i in kept)
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
        interval_mbps=interval_mbps,
        measured_s=measured_s,
        ended_by=run.ended_by,
        error=result.error,
        facts=dict(facts or {}),
        observations=tuple(observations),
        raw={"client": run.client_json, "server": run.server_json},
    )


def sender_window(
    seconds: Sequence[IntervalSample], sender_s: float | None, overrun_s: float = 0.0
) -> tuple[float, float, tuple[IntervalSample, ...]] | None:
    """Goodput, seconds and the seconds themselves, over the receiver's seconds while the
    sender measured, as many as the sender sent for, when the receiver counted more: None
    when it did not.

    Behind a deep queue the receiver goes on receiving after the sender stopped: first the
    queue's content at the line rate, then what tail-loss recovery resends, one RTO (4 s
    behind a full FIFO at 10 Mbit/s) after the loss.  A QEMU board's pfifo_fast download
    counted 12 seconds at 9.29-9.50 Mbit/s and then 1.47 s at 1.98: 8.53 Mbit/s in all, a
    remeasure for a link that carried its line rate every second of the load.  The end of
    one transfer is not the board's forwarding; the seconds while the sender sent are.

    And the two ends time their warm-ups apart: a sender whose warm-up ended ``overrun_s``
    late (:func:`warmup_overrun`) began measuring that long after the receiver did, so the
    receiver's first seconds belong to the sender's warm-up and are passed over.
    """
    if not sender_s or not seconds:
        return None
    count = round(sender_s)
    skip = max(0, round(overrun_s))
    window = tuple(seconds[skip : skip + count])
    if count < 1 or not window or (skip == 0 and count >= len(seconds)):
        return None
    span = sum(i.seconds for i in window)
    return 8.0 * sum(i.bytes for i in window) / span / 1e6, span, window


def warmup_overrun(sender: Iperf3Result, receiver: Iperf3Result | None) -> float:
    """Seconds the sender's warm-up lasted beyond the receiver's (0 when it did not, or
    either has none).

    Each end times the ``-O`` warm-up on its own clock.  A QEMU board starved for a moment
    (its sender at 99 % CPU on a busy two-core machine) sent nothing for 0.9 s and ended its
    1 s warm-up after 1.905 s; the peer's server had begun measuring at 1.0 s, and its first
    measured second, the stall, read 20.4 Mbit/s while every second the sender measured
    carried 504-722.  Lined up from the start, that second stood for the whole run.
    """
    if receiver is None:
        return 0.0
    sent = sum(i.seconds for i in sender.omitted_intervals)
    counted = sum(i.seconds for i in receiver.omitted_intervals)
    return max(0.0, sent - counted) if sent and counted else 0.0


def _server(run: Iperf3Run) -> Iperf3Result | None:
    """The receiving server's parsed log, when the client sent and the log is usable."""
    result = run.result
    if result.reverse or result.bidir or not run.server_json.strip():
        return None
    try:
        return parse_iperf3(run.server_json, f"iperf3 server on {run.server_host}")
    except Iperf3OutputError:
        return None


def per_second(run: Iperf3Run) -> tuple[IntervalSample, ...]:
    """The receiver's complete measured seconds (:func:`per_second_mbps`); empty when the
    run has no usable receiver log."""
    server = _server(run)
    return receiver_seconds(server) if server is not None else ()


def per_second_mbps(run: Iperf3Run, received: tuple[IntervalSample, ...] | None = None) -> tuple[float, ...]:
    """Goodput per second as the receiver counted it, the sender's count only without one.

    pinet's client sends, and its intervals count bytes handed to its socket, bursts into
    the queue in front of the link included: on a 10 Mbit/s cable (9.415 Mbit/s of TCP
    payload) they read 8.2 to 12.5 Mbit/s second by second while the receiver read 9.39 to
    9.42; on GbE their spread was 2 to 5 Mbit/s against the receiver's 0.1 to 0.2.  The
    per-second figures feed the charts, the change-point tests and the comparisons: a chart
    showing a cable faster than its wire, and noise the link never had, misled both.
    """
    if received is None:
        received = per_second(run)
    if received:
        return tuple(i.mbps for i in received)
    return tuple(i.mbps for i in run.result.measured_intervals)
