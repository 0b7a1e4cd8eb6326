"""Per-second goodput is the receiver's count (traffic/iperf3_measurement.py), on a recorded
run over the QEMU board's 10 Mbit/s USB adapter (fixtures/lab-outputs/README.md)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from pytest_pinet.model import TrafficContext
from pytest_pinet.traffic.iperf3_measurement import measurement_from_iperf3, per_second_mbps
from pytest_pinet.traffic.iperf3_parse import parse_iperf3
from pytest_pinet.traffic.iperf3_runner import Iperf3Run

OWN = Path(__file__).resolve().parents[2] / "fixtures" / "lab-outputs"
WIRE = 10.0 * 1448 / 1538  # TCP payload of a 10 Mbit/s Ethernet cable, timestamps on


def _run(server_json: str | None = None) -> Iperf3Run:
    client = (OWN / "iperf3-3.12-qpi-usb-10mbit-client.json").read_text()
    server = (
        (OWN / "iperf3-3.12-qpi-usb-10mbit-server.json").read_text() if server_json is None else server_json
    )
    result = parse_iperf3(client, "recorded client")
    return Iperf3Run(result, client, server, "iperf3 -c", "iperf3 -s", "qpi", "pc", 0.0, 4.0)


def test_the_receivers_seconds_never_beat_the_wire_where_the_senders_do():
    run = _run()
    senders = [i.mbps for i in run.result.measured_intervals]
    assert max(senders) > WIRE * 1.1  # 10.64 Mbit/s handed to the socket in one second
    receivers = per_second_mbps(run)
    assert len(receivers) == 3  # the run's 3 s after the 1 s omitted
    assert all(WIRE * 0.99 < value <= WIRE * 1.001 for value in receivers), receivers
    context = TrafficContext(
        "virtual", "adapter", "qpi", "pc", "usb", "qemu-usb-net", "board->peer", "half", 10, 3, 1, 10, 1500
    )
    measured = measurement_from_iperf3("t", context, run, WIRE)
    assert measured.interval_mbps == receivers
    assert measured.goodput_mbps is not None and abs(measured.goodput_mbps - 9.411) < 0.001


def test_without_a_readable_server_log_the_senders_seconds_are_kept():
    for server in ("", "not json {"):
        run = _run(server)
        assert per_second_mbps(run) == tuple(i.mbps for i in run.result.measured_intervals)
    reverse = _run()
    reverse = replace(reverse, result=replace(reverse.result, reverse=True))
    # -R: the client receives, so its own seconds are already the receiver's.
    assert per_second_mbps(reverse) == tuple(i.mbps for i in reverse.result.measured_intervals)
