"""The parser on our own recordings (fixtures/iperf3), which exist in every checkout."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_pinet.traffic.iperf3_parse import (
    Iperf3NoJsonError,
    Iperf3ReportedError,
    Iperf3SchemaError,
    Iperf3TruncatedError,
    parse_iperf3,
    parse_iperf3_all,
)

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "iperf3"


def _text(name: str) -> str:
    return (FIXTURES / name).read_text(encoding="utf-8")


def test_ten_stream_client_run():
    result = parse_iperf3(_text("3.12-tcp-P10-t4-O1-client.json"))
    assert (result.version, result.protocol, result.role) == ("iperf 3.12", "TCP", "client")
    assert result.num_streams == len(result.streams) == 10
    assert (result.duration, result.omit) == (4, 1)
    assert len(result.omitted_intervals) == 1 and len(result.measured_intervals) == 4
    assert result.sender_congestion == "cubic"
    assert result.received is not None and result.sent is not None
    # Receiver's count is the goodput; per-stream figures add up to it.
    assert result.goodput_mbps == result.received.mbps
    assert sum(s.received.mbps for s in result.streams if s.received) == pytest.approx(
        result.received.mbps, rel=1e-3
    )
    assert 900 < result.goodput_mbps < 950
    assert result.retransmits == 0
    assert result.cpu is not None and result.cpu.host_total > 0


def test_server_side_file_of_the_same_run_agrees():
    client = parse_iperf3(_text("3.12-tcp-P10-t4-O1-client.json"))
    server = parse_iperf3(_text("3.12-tcp-P10-t4-O1-server.json"))
    assert server.role == "server"
    assert server.received is not None and client.received is not None
    assert server.received.bytes == client.received.bytes


@pytest.mark.parametrize(
    ("name", "category", "message"),
    [
        ("3.12-connection-refused.json", "connect", "unable to connect to server: Connection refused"),
        ("3.12-server-busy.json", "server-busy", "the server is busy running a test. try again later"),
    ],
)
def test_error_outputs_are_typed(name, category, message):
    with pytest.raises(Iperf3ReportedError) as info:
        parse_iperf3(_text(name), name)
    assert info.value.category == category
    assert info.value.iperf3_message == message
    assert name in str(info.value)


def test_udp_loss_is_the_receivers():
    result = parse_iperf3(_text("3.12-udp-b0-l1472-t3-client.json"))
    assert result.protocol == "UDP"
    assert result.udp is not None and result.udp.lost_packets > 0
    assert result.received is not None and result.sent is not None
    assert result.received.mbps < result.sent.mbps


def test_interrupted_run_keeps_numbers_and_error():
    result = parse_iperf3(_text("3.12-tcp-sigint-client.json"))
    assert result.error == "interrupt - the client has terminated"
    assert result.has_totals


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("", Iperf3NoJsonError),
        ("Connecting to host 10.0.0.2, port 5201\n[  5] local ...\n", Iperf3NoJsonError),
        ('{"start": {"version": "iperf 3.12"}, "intervals": [', Iperf3TruncatedError),
        ('{"hello": "world"}', Iperf3SchemaError),
        ("[1, 2, 3]", Iperf3NoJsonError),
    ],
)
def test_odd_outputs_raise_typed_errors_naming_the_source(text, error):
    with pytest.raises(error, match=r"run-42\.json"):
        parse_iperf3(text, "run-42.json")


def test_prefixes_crlf_and_log_lines_are_tolerated():
    clean = _text("3.12-tcp-P10-t4-O1-client.json")
    dirty = "^C^[[F\r\nwrapper: starting {not json}\r\n" + clean.replace("\n", "\r\n")
    assert parse_iperf3(dirty).received == parse_iperf3(clean).received


def test_two_runs_and_a_cut_third_keep_the_complete_two():
    clean = _text("3.12-tcp-P10-t4-O1-client.json")
    results = parse_iperf3_all(clean + clean + clean[: len(clean) // 2])
    assert len(results) == 2
