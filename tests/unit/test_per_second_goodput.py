"""Per-second goodput is the receiver's count (traffic/iperf3_measurement.py), on a recorded
run over the QEMU board's 10 Mbit/s USB adapter (fixtures/lab-outputs/README.md)."""

from __future__ import annotations

from dataclasses import replace

from pytest_pinet.model import TrafficContext
from pytest_pinet.traffic.iperf3_measurement import (
    measurement_from_iperf3,
    per_second,
    per_second_mbps,
    sender_window,
    warmup_overrun,
)
from pytest_pinet.traffic.iperf3_parse import parse_iperf3
from pytest_pinet.traffic.iperf3_runner import Iperf3Run
from tests.fixture_paths import IPERF3, LAB_OUTPUTS

WIRE = 10.0 * 1448 / 1538  # TCP payload of a 10 Mbit/s Ethernet cable, timestamps on


def _run(server_json: str | None = None, name: str = "qpi-usb-10mbit") -> Iperf3Run:
    client = (LAB_OUTPUTS / f"iperf3-3.12-{name}-client.json").read_text()
    server = (
        (LAB_OUTPUTS / f"iperf3-3.12-{name}-server.json").read_text() if server_json is None else server_json
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


def test_a_receiver_that_counted_past_the_senders_end_is_judged_on_the_senders_seconds():
    # Behind the board's 4 s FIFO the receiver counted 13 seconds for the sender's 10.
    run = _run(name="qpi-pfifo_fast-routed-10mbit")
    assert run.result.sent is not None and round(run.result.sent.seconds) == 10
    received = per_second(run)
    assert len(received) == 13
    context = TrafficContext(
        "virtual",
        "routing",
        "qpi",
        "inet<>pc",
        "usb",
        "qemu-usb-net",
        "download",
        "half",
        10,
        10,
        2,
        10,
        1500,
    )
    measured = measurement_from_iperf3("t", context, run, WIRE)
    first_ten = received[:10]
    expected = 8 * sum(i.bytes for i in first_ten) / sum(i.seconds for i in first_ten) / 1e6
    assert measured.goodput_mbps == expected and abs(expected - 9.41) < 0.03, expected
    assert measured.interval_mbps == tuple(i.mbps for i in first_ten)
    assert measured.measured_s is not None and abs(measured.measured_s - 10.0) < 0.05
    # A receiver that counted no more seconds than the sender sent for keeps its own figure.
    assert sender_window(received[:10], 10.0) is None
    assert sender_window(received, None) is None


def test_a_trickling_tail_no_longer_drags_the_figure_below_the_line_rate():
    # The main job's first attempt: 12 seconds at the line rate, then 1.47 s of tail-loss
    # recovery at 1.98 Mbit/s (8.53 Mbit/s in all).  Its seconds as the receiver counted them.
    run = _run(name="qpi-pfifo_fast-routed-10mbit")
    steady = per_second(run)[:12]
    tail = replace(steady[-1], start=12.0, end=13.47, seconds=1.47, bytes=int(1.98e6 / 8 * 1.47))
    window = sender_window((*steady, tail), 9.999984)
    assert window is not None
    goodput, seconds, kept = window
    assert 9.9 < seconds < 10.1
    assert len(kept) == 10 and WIRE * 0.99 < goodput <= WIRE * 1.001, goodput


def test_the_receivers_seconds_line_up_with_a_warm_up_the_sender_ended_late():
    """CI's rehearsal, 2026-11-30: the QEMU board stalled for 0.9 s in its 1 s warm-up, which
    it ended after 1.905 s; the peer's server, on its own clock, began measuring at 1.0 s.
    Lined up from the start, the server's first measured second (the stall, 20.4 Mbit/s) was
    the figure, and the board failed its 100 Mbit/s floor while sending 504-722 Mbit/s."""
    recorded = IPERF3
    client = (recorded / "3.12-tcp-P10-t2-O1-late-warmup-board-client.json").read_text()
    server_json = (recorded / "3.12-tcp-P10-t2-O1-late-warmup-board-server.json").read_text()
    result = parse_iperf3(client, "recorded client")
    server = parse_iperf3(server_json, "recorded server")
    assert abs(warmup_overrun(result, server) - 0.905) < 0.01
    assert warmup_overrun(server, server) == 0.0 and warmup_overrun(result, None) == 0.0
    run = Iperf3Run(result, client, server_json, "iperf3 -c", "iperf3 -s", "pi5", "pc", 0.0, 3.1)
    context = TrafficContext(
        "twin", "builtin", "pi5", "pc", "eth0", "virtio", "board->peer", "half", 1000, 2, 1, 10, 1500
    )
    measured = measurement_from_iperf3("t", context, run, 941.5)
    assert [round(v, 1) for v in per_second_mbps(run)] == [20.4, 555.2]
    assert measured.goodput_mbps is not None and abs(measured.goodput_mbps - 555.2) < 0.1
    assert [round(v, 1) for v in measured.interval_mbps] == [555.2]
    # Without the overrun the same seconds are read from the start, as before.
    unshifted = sender_window(per_second(run), 1.177413)
    assert unshifted is not None and abs(unshifted[0] - 20.4) < 0.1
