"""The receiver's view of a run stopped early: what arrived, over the seconds it arrived in.

A client stopped with SIGINT (the adaptive rule: its figure settled) reports no received
total of its own; the server that received holds the honest count.  Kept apart from the
runner: this is reading reports, not driving hosts.
"""

from __future__ import annotations

from dataclasses import replace

from ..errors import LabFault
from .iperf3_model import IntervalSample, Iperf3Result, StreamResult, Totals
from .iperf3_parse import Iperf3OutputError, parse_iperf3


def receiver_seconds(server: Iperf3Result) -> tuple[IntervalSample, ...]:
    """The receiving server's complete (0.9 s or more), non-omitted intervals, each once
    (3.12 repeats its last interval when stopped early)."""
    seen: set[tuple[float, float]] = set()
    complete = []
    for interval in server.measured_intervals:
        key = (round(interval.start, 3), round(interval.end, 3))
        if interval.seconds >= 0.9 and key not in seen:
            seen.add(key)
            complete.append(interval)
    return tuple(complete)


def receiver_view(client: Iperf3Result, server_json: str, source: str) -> Iperf3Result:
    """An interrupted client's result with the receiver's counts put in.

    iperf3 stopped with SIGINT reports ``sum_received`` = 0 on the client, and its server
    divides by whole seconds only (and repeats its last interval, seen with 3.12).  The
    honest figure is the server's complete, non-omitted intervals: bytes that arrived over
    the seconds they arrived in.  The cut last second, mostly in flight, is left out.
    """
    try:
        server = parse_iperf3(server_json, f"iperf3 server for {source}")
    except Iperf3OutputError as exc:
        raise LabFault("iperf3-output", f"stopped early but the server's report is unusable: {exc}") from None
    complete = receiver_seconds(server)
    if not complete:
        raise LabFault("iperf3-output", f"stopped early but the server of {source} has no complete interval")
    seconds = sum(i.seconds for i in complete)
    total = sum(i.bytes for i in complete)
    width = max(len(i.stream_bits_per_second) for i in complete)
    streams = []
    for index in range(width):
        bits = sum(
            i.stream_bits_per_second[index] * i.seconds
            for i in complete
            if index < len(i.stream_bits_per_second)
        )
        streams.append(
            StreamResult(socket=index, sent=None, received=Totals(int(bits / 8), seconds, bits / seconds))
        )
    received = Totals(total, seconds, 8.0 * total / seconds)
    client_intervals = tuple(i for i in client.intervals if i.seconds >= 0.9)
    return replace(client, received=received, streams=tuple(streams), intervals=client_intervals, error=None)
