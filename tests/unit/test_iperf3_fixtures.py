"""The parser and the runner on our own recordings (fixtures/iperf3), which exist in every
checkout, including the outputs of iperf3 versions written from their described behaviour."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from pytest_pinet.errors import LabFault
from pytest_pinet.host.remote import CommandResult
from pytest_pinet.lab.recovery import RECOVERABLE
from pytest_pinet.traffic.iperf3_parse import (
    Iperf3NoJsonError,
    Iperf3NoTotalsError,
    Iperf3ReportedError,
    Iperf3SchemaError,
    Iperf3TruncatedError,
    parse_iperf3,
    parse_iperf3_all,
)
from pytest_pinet.traffic.iperf3_runner import Iperf3Options, _Client
from tests.fixture_paths import IPERF3


def _text(name: str) -> str:
    return (IPERF3 / name).read_text(encoding="utf-8")


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


# --- outputs that older and newer versions write differently: 3.9 busy/refused (reason only
# on stderr), 3.9 --bidir (repeated keys), 3.12 --bidir (no ``bidir`` key), 3.17 --json-stream.
# None of them may ever become a number it is not.


@pytest.mark.parametrize(
    ("stderr", "message"),
    [
        ("3.9-server-busy-client.stderr", "unable to send control message: Bad file descriptor"),
        ("3.9-connection-reset-client.stderr", "unable to receive control message: Connection reset by peer"),
    ],
)
def test_a_refused_3_9_run_takes_its_reason_from_stderr(stderr: str, message: str) -> None:
    with pytest.raises(Iperf3ReportedError) as info:
        parse_iperf3(_text("3.9-server-busy-client.json"), "pc client", _text(stderr))
    assert info.value.iperf3_message == message
    assert info.value.category == "control-socket"


def test_a_run_without_totals_or_reason_is_an_error_never_a_zero() -> None:
    with pytest.raises(Iperf3NoTotalsError, match="pc client: the run ended without totals"):
        parse_iperf3(_text("3.9-server-busy-client.json"), "pc client")
    # a whole log still shows the attempt, with no goodput at all (not 0.0)
    (attempt,) = parse_iperf3_all(_text("3.9-server-busy-client.json"))
    assert attempt.goodput_mbps is None and not attempt.has_totals


def test_3_9_bidir_repeated_keys_keep_both_directions() -> None:
    result = parse_iperf3(_text("3.9-tcp-P2-bidir-client.json"))
    assert result.version == "iperf 3.9" and result.bidir
    # the recording's reverse direction runs at 40 % of the forward one
    assert result.sent is not None and result.reverse_sent is not None and result.reverse_received is not None
    assert result.sent.mbps == pytest.approx(1000.27, abs=0.01)
    assert result.reverse_received.mbps == pytest.approx(0.4 * 1000.22, abs=0.1)
    assert len(result.streams) == len(result.reverse_streams) == result.num_streams == 2
    forward_sum = sum(s.received.mbps for s in result.streams if s.received)
    assert forward_sum == pytest.approx(result.received.mbps if result.received else 0, rel=1e-3)
    # the interval sums are the forward ones, as in -J of later versions
    assert result.intervals[0].bits_per_second > 900e6


def test_3_12_bidir_without_the_bidir_key_splits_streams_by_direction() -> None:
    result = parse_iperf3(_text("3.12-tcp-P2-bidir-b500M-client.json"))
    assert result.bidir
    assert len(result.streams) == len(result.reverse_streams) == 2
    assert all(s.sent is not None for s in result.streams)
    forward = sum(s.received.mbps for s in result.streams if s.received)
    assert result.received is not None
    assert forward == pytest.approx(result.received.mbps, rel=1e-3)  # not twice the truth


def test_json_stream_events_become_the_run() -> None:
    stream = parse_iperf3(_text("3.17-tcp-P10-t4-O1-json-stream-client.jsonl"), "stream")
    document = parse_iperf3(_text("3.12-tcp-P10-t4-O1-client.json"), "document")
    assert stream.version == "iperf 3.17.1"
    assert stream.goodput_mbps == document.goodput_mbps
    assert len(stream.intervals) == len(document.intervals) == 5
    assert len(stream.measured_intervals) == 4
    with pytest.raises(Iperf3ReportedError) as info:
        parse_iperf3(_text("3.17-server-busy-json-stream-client.jsonl"), "stream")
    assert info.value.category == "server-busy"


def _finished_client(stdout: str, stderr: str, exit_code: int) -> _Client:
    """A client whose remote command already ended (its host and server are stand-ins)."""
    client = _Client.__new__(_Client)
    client.sender = SimpleNamespace(name="pc")  # type: ignore[assignment]
    client.server = SimpleNamespace(server_json="", command="iperf3 -s", host=SimpleNamespace(name="pi"))  # type: ignore[assignment]
    client.options = Iperf3Options(duration=2, omit=0)
    client.command = "iperf3 -c"
    client.outcome = CommandResult("iperf3 -c", exit_code, stdout, stderr)
    client.started, client.finished = 0.0, 2.0
    return client


def test_the_runner_reads_stderr_and_the_exit_status() -> None:
    busy = _finished_client(_text("3.9-server-busy-client.json"), _text("3.9-server-busy-client.stderr"), 1)
    with pytest.raises(LabFault) as info:
        busy.finish("max-duration", None)
    assert info.value.category == "iperf3-control-socket"
    assert "Bad file descriptor" in str(info.value)
    # totals, but a failed exit: the two disagree, and no figure is taken from it
    good = _text("3.12-tcp-P10-t4-O1-client.json")
    failed = _finished_client(good, "iperf3: error - unable to write to stream socket: Broken pipe\n", 1)
    with pytest.raises(LabFault, match="exited with status 1 after writing totals: unable to write"):
        failed.finish("max-duration", None)
    run = _finished_client(good, "", 0).finish("max-duration", None)
    assert run.result.goodput_mbps == pytest.approx(parse_iperf3(good).goodput_mbps)


def test_a_run_whose_sender_kept_no_time_is_a_lab_fault_not_a_figure() -> None:
    """The rehearsal's QEMU board, starved: its 1 s warm-up ended after 2.5 s and the run after
    0.54 of its 2 measured seconds. The receiver's first second then read 9 Mbit/s of a 178
    Mbit/s transfer; judged, that was a board below its floor."""
    starved = _finished_client(_text("3.12-tcp-P10-t2-O1-starved-board-client.json"), "", 0)
    starved.options = Iperf3Options(duration=2, omit=1)
    with pytest.raises(LabFault) as info:
        starved.finish("fixed", None)
    assert info.value.category == "iperf3-short" and info.value.category in RECOVERABLE
    assert "measured 0.54 s of the 2 s asked; its 1 s warm-up took 2.51 s" in str(info.value)
    assert '"sum_sent"' in info.value.evidence["iperf3 client output"]
    # a run that measured its whole duration is a figure, as before
    good = _finished_client(_text("3.12-tcp-P10-t4-O1-client.json"), "", 0)
    good.options = Iperf3Options(duration=4, omit=1)
    assert good.finish("fixed", None).result.goodput_mbps == pytest.approx(
        parse_iperf3(_text("3.12-tcp-P10-t4-O1-client.json")).goodput_mbps
    )


def test_a_refused_connection_names_the_servers_port_and_the_firewall_ports_to_open() -> None:
    """A default-deny firewall on a peer is the usual first night's fault: the lab fault says
    which port pinet's server listened on and which range a firewall must accept."""
    refused = _finished_client(_text("3.12-connection-refused.json"), "", 1)
    refused.server.port = 24242
    with pytest.raises(LabFault) as info:
        refused.finish("max-duration", None)
    assert info.value.category == "iperf3-connect"
    message = str(info.value)
    assert "listens on TCP 24242" in message and "accept TCP 20000-29999" in message
    assert "A peer's firewall" in message
