"""The parser against real iperf3 outputs written by other people's machines.

The corpus lives in the repository (fixtures/iperf3: the files its SOURCES.md names, beside our
own recordings), so every clone runs these tests.  Every file in it must be covered by an expectation below, so a file
added to the corpus without one fails the suite instead of being silently skipped.
Expected figures were derived independently of the parser from the files' raw bytes.
"""

from __future__ import annotations

import pytest

from pytest_pinet.traffic.iperf3_parse import (
    Iperf3ReportedError,
    Iperf3TruncatedError,
    parse_iperf3,
    parse_iperf3_all,
)
from tests.fixture_paths import IPERF3, sourced

# file -> list of (version, protocol, role, streams, received Mbit/s or None, sent Mbit/s or None,
#                  retransmits, intervals, omitted intervals)
Expected = tuple[str, str, str, int, "float | None", "float | None", "int | None", int, int]
RESULTS: dict[str, list[Expected]] = {
    "opnfv__yardstick__iperf3_sample_output.json": [
        ("iperf 3.0.7", "TCP", "client", 1, 154.521, 156.181, 81, 10, 0)
    ],
    "opnfv__yardstick__iperf3_sample_output_udp.json": [
        ("iperf 3.0.7", "UDP", "client", 1, None, 19.8045, None, 10, 0)
    ],
    "thiezn__iperf3-python__tests_results.json": [
        ("iperf 3.0.11", "TCP", "client", 1, 934.268, 935.992, 0, 13, 0)
    ],
    "ekfoury__iperf3_plotter__sample_my_test.json": [
        ("iperf 3.6", "TCP", "client", 4, 17535.714055219632, 17544.772693368184, 2, 60, 0)
    ],
    "DCsunset__vue-iperf3-chart__src_data.json": [
        ("iperf 3.6", "TCP", "server", 1, None, 1.0930687326430322, 0, 10, 0),
        ("iperf 3.6", "UDP", "server", 1, None, 0.978926560542007, None, 11, 0),
    ],
    "greepz__wifiAnalyzer__iperf.json": [
        ("iperf 3.7+", "TCP", "server", 2, 41.963324473553069, None, None, 31, 0)
    ],
    "greepz__wifiAnalyzer__src_main_resources_test.json": [
        ("iperf 3.7+", "TCP", "server", 1, 26305.876712391777, None, None, 11, 0)
    ],
    "cgasp__another-iperf3-wrapper__samples_P10_J.json": [
        ("iperf 3.7", "TCP", "client", 10, 919.55464634038782, 957.0308924052645, 2, 5, 0)
    ],
    "cgasp__another-iperf3-wrapper__samples_P10_J_R.json": [
        ("iperf 3.7", "TCP", "client", 10, 344.35884607477105, 360.92358177290285, 1714, 5, 0)
    ],
    "FallenGameR__iperf3_watcher__data_sample.json": [
        ("iperf 3.11", "TCP", "client", 1, 18.954414419648658, 22.215866300723035, None, 10, 0)
    ],
    "ZackMurry__arm64-iperf3-mosquitto-publisher__result.txt.json": [
        ("iperf 3.17.1", "TCP", "client", 1, 36.237444551790968, 39.736107096330762, 81, 10, 0)
    ],
    "kfirtoledo__CloudPilot_Project__baseline_host_target_direct_19.res.json": [
        ("iperf 3.9", "TCP", "client", 1, 1757.0039146096244, 1756.3628680008452, 1258, 12, 2)
    ],
    "kfirtoledo__CloudPilot_Project__10k_file_reverse_host_target_direct_0_bytesmode.res.json": [
        ("iperf 3.9", "TCP", "client", 1, None, 9.9668185639074445, 0, 1, 0)
    ],
    "kfirtoledo__CloudPilot_Project__bw_proxy_target_direct_concatenated.res.json": [
        ("iperf 3.9", "TCP", "client", 1, 118.24545361021909, 118.49041509264903, 0, 13, 3),
        ("iperf 3.9", "TCP", "client", 1, 118.24545361021909, 118.49041509264903, 0, 13, 3),
    ],
    "kfirtoledo__CloudPilot_Project__10k_file_host_proxy_proxy_3_escprefix_crlf.res.json": [
        ("iperf 3.9", "TCP", "client", 1, None, 12.612602524983905, 0, 1, 0)
    ],
    "kfirtoledo__CloudPilot_Project__old_large_file_proxy_target_direct_interrupt.res.json": [
        ("iperf 3.6", "TCP", "client", 1, None, 160.28723232821622, 0, 11, 0)
    ],
    "dariuszpanas__iperf3-lib__tests_fixtures_native_3.21_tcp-bidirectional-client.json": [
        ("iperf 3.21", "TCP", "client", 2, 8.3847677763584275, 8.385337718289868, 0, 1, 0)
    ],
    "dariuszpanas__iperf3-lib__tests_fixtures_native_3.19.1_udp-bidirectional-client.json": [
        ("iperf 3.19.1", "UDP", "client", 2, 8.01696572791104, 8.01743023858688, None, 1, 0)
    ],
}
TRUNCATED = {
    "kfirtoledo__CloudPilot_Project__10k_file_reverse_host_target_direct_0_truncated.res.json",
    "kfirtoledo__CloudPilot_Project__bw_proxy_k8s2_host_direct_truncated.res.json",
}
REPORTED = {
    "kfirtoledo__CloudPilot_Project__old_large_file_host_proxy_forwarding_ctrlsock_error.res.json": (
        "control socket has closed unexpectedly",
        "control-socket",
    ),
}


def _read(name: str) -> str:
    return (IPERF3 / name).read_text(encoding="utf-8")


def test_every_corpus_file_has_an_expectation():
    files = {p.name for p in sourced(IPERF3, "*.json")}
    assert files, "corpus directory holds no files"
    assert files == set(RESULTS) | TRUNCATED | set(REPORTED)


@pytest.mark.parametrize("name", sorted(RESULTS))
def test_corpus_results(name):
    results = parse_iperf3_all(_read(name), name)
    expected = RESULTS[name]
    assert len(results) == len(expected)
    for result, (version, protocol, role, streams, received, sent, retr, intervals, omitted) in zip(
        results, expected, strict=False
    ):
        assert result.version == version
        assert result.protocol == protocol
        assert result.role == role
        assert result.num_streams == streams == len(result.streams)
        assert (result.received.mbps if result.received else None) == (
            pytest.approx(received, rel=1e-12) if received else None
        )
        assert (result.sent.mbps if result.sent else None) == (
            pytest.approx(sent, rel=1e-12) if sent else None
        )
        assert result.retransmits == retr
        assert len(result.intervals) == intervals
        assert len(result.omitted_intervals) == omitted
        assert result.goodput_mbps is not None and result.goodput_mbps > 0


@pytest.mark.parametrize("name", sorted(TRUNCATED))
def test_corpus_truncated_is_a_typed_error(name):
    with pytest.raises(Iperf3TruncatedError, match=name):
        parse_iperf3(_read(name), name)


def test_corpus_error_object_is_reported_not_zero():
    for name, (message, category) in REPORTED.items():
        with pytest.raises(Iperf3ReportedError) as info:
            parse_iperf3(_read(name), name)
        assert info.value.iperf3_message == message
        assert info.value.category == category


def test_corpus_interrupted_run_keeps_its_numbers_and_its_error():
    name = "kfirtoledo__CloudPilot_Project__old_large_file_proxy_target_direct_interrupt.res.json"
    result = parse_iperf3(_read(name), name)
    assert result.error == "interrupt - the client has terminated"
    assert result.sent is not None
    assert result.sent.bytes == 210922112
    assert result.received is None  # the results exchange never happened: not a measured zero
    assert result.bytes_target == 209715200


def test_corpus_omit_quirk_of_3_9_is_corrected_to_one_second():
    name = "kfirtoledo__CloudPilot_Project__baseline_host_target_direct_19.res.json"
    result = parse_iperf3(_read(name), name)
    assert result.omit == 3
    measured = result.measured_intervals
    assert result.sent is not None
    # iperf3's own totals count the first measured interval's bytes ...
    assert sum(i.bytes for i in measured) == result.sent.bytes == 2195456000
    # ... over one second, not the 2.000094 it wrote (which includes the last warm-up second)
    assert measured[0].seconds == pytest.approx(2.000093936920166 - 0.9999930262565613)
    assert measured[0].mbps == pytest.approx(247726080 * 8 / 1.0001009 / 1e6, rel=1e-4)
    assert sum(i.seconds for i in measured) == pytest.approx(result.sent.seconds, abs=0.01)


def test_corpus_bidir_splits_directions_instead_of_double_counting():
    name = "dariuszpanas__iperf3-lib__tests_fixtures_native_3.21_tcp-bidirectional-client.json"
    result = parse_iperf3(_read(name), name)
    assert result.bidir
    assert len(result.streams) == len(result.reverse_streams) == 2
    assert result.sent is not None
    assert sum(s.sent.bytes for s in result.streams if s.sent is not None) == result.sent.bytes == 1048576
    assert result.reverse_received is not None
    assert result.reverse_received.bits_per_second == pytest.approx(8384767.7763584275)


def test_corpus_udp_loss_comes_from_the_receiver():
    name = "dariuszpanas__iperf3-lib__tests_fixtures_native_3.19.1_udp-bidirectional-client.json"
    result = parse_iperf3(_read(name), name)
    assert result.udp is not None
    assert result.udp.jitter_ms == pytest.approx(0.00796766028596213)
    assert (result.udp.packets, result.udp.lost_packets) == (836, 0)
    old = "opnfv__yardstick__iperf3_sample_output_udp.json"
    legacy = parse_iperf3(_read(old), old)
    assert legacy.udp is not None and legacy.udp.packets == 3022
    assert legacy.goodput_mbps == pytest.approx(19.8045)  # no loss: delivered = sent


def test_corpus_concatenated_runs_need_parse_all():
    from pytest_pinet.traffic.iperf3_parse import Iperf3MultipleRunsError

    name = "kfirtoledo__CloudPilot_Project__bw_proxy_target_direct_concatenated.res.json"
    with pytest.raises(Iperf3MultipleRunsError, match="holds 2 runs"):
        parse_iperf3(_read(name), name)
