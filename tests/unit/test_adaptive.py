"""Adaptive duration: the settle rule, the receiver counter samples, the receiver's view."""

from __future__ import annotations

import math

import pytest

from pytest_pinet.errors import LabFault
from pytest_pinet.host.platform import LINUX
from pytest_pinet.traffic.adaptive import (
    STALL_S,
    CounterSample,
    SettleRule,
    half_width_pct,
    parse_counter_sample,
    per_second_rates,
    sample_phase,
    stalled_for,
    t95,
    warmup_end,
)
from pytest_pinet.traffic.iperf3_parse import parse_iperf3
from pytest_pinet.traffic.receiver_view import receiver_view
from tests.fixture_paths import IPERF3


def test_t_quantiles_are_students_for_any_run_length():
    assert t95(1) == pytest.approx(12.706, abs=0.001) and t95(10) == pytest.approx(2.228, abs=0.001)
    assert t95(30) == pytest.approx(2.042, abs=0.002)  # textbook value
    assert t95(120) == pytest.approx(1.980, abs=0.002)
    with pytest.raises(ValueError, match="degree"):
        t95(0)


def test_half_width_of_a_known_sample():
    # mean 100, sample sd 1, n 4: 3.182 * 1 / 2 = 1.591 % of the mean
    rates = [99.0, 101.0, 99.0, 101.0]
    assert half_width_pct([r * 1.0 for r in rates]) == pytest.approx(3.182 * math.sqrt(4 / 3) / 2, rel=1e-3)
    assert half_width_pct([5.0]) == math.inf
    assert half_width_pct([0.0, 0.0]) == math.inf


def test_rule_waits_for_its_minimum_and_for_quiet_seconds():
    rule = SettleRule(min_seconds=5, precision_pct=0.5)
    steady = [945.0, 944.8, 945.3, 945.1, 944.9]
    assert not rule.settled(steady[:4])  # quiet, but too few seconds
    assert rule.settled(steady)
    noisy = [945.0, 900.0, 980.0, 930.0, 960.0]  # the seed's AX88179 fluctuates like this
    assert not rule.settled(noisy)
    with pytest.raises(ValueError, match="at least 2 s"):
        SettleRule(min_seconds=1)
    with pytest.raises(ValueError, match="precision"):
        SettleRule(precision_pct=0)


def test_paced_senders_alternating_seconds_settle_on_two_second_batches():
    # measured here: 10 streams at -b 10M give seconds of 104.8 and 94.4 Mbit/s in turn
    paced = [104.83, 94.35, 104.86, 94.38, 104.86, 94.37]
    assert half_width_pct(paced) > 5
    assert SettleRule(min_seconds=5, precision_pct=0.5).settled(paced)
    assert not SettleRule(min_seconds=5, precision_pct=0.5).settled(paced[:5])  # only 2 batches


def test_rates_skip_the_warm_up_and_a_counter_reset():
    samples = [
        CounterSample(t, b) for t, b in [(0.0, 0), (1.0, 50), (2.0, 150), (3.0, 250), (4.0, 10), (5.0, 110)]
    ]
    assert per_second_rates(samples, skip_until=1.0) == [100.0, 100.0, 100.0]
    assert per_second_rates(samples, skip_until=0.0)[0] == 50.0
    # two samples 0.1 s apart (a late tick) carry too little time to be a rate
    assert per_second_rates([CounterSample(0.0, 0), CounterSample(0.1, 10)], 0.0) == []


@pytest.mark.parametrize("omit", [0, 1, 2, 3, 5])
def test_the_first_kept_reading_follows_the_warm_up_by_a_fraction_of_a_second(omit):
    # the sampler reads at the start, then at the phase of each second; the receiver's clock
    # runs 20 ms behind the first reading, and later readings' SSH latency scatters +-100 ms
    phase = sample_phase(omit)
    ticks = [0.0] + [phase + k for k in range(omit + 6)]
    jitter = [0.0] + [0.1 if k % 2 else -0.1 for k in range(len(ticks) - 1)]
    samples = [CounterSample(t + 0.02 + j, int(1000 * t)) for t, j in zip(ticks, jitter, strict=True)]
    start = warmup_end(samples, omit)
    kept = [s for s in samples if s.clock >= start]
    # before, up to a whole second after the warm-up was run and counted for nothing
    assert kept[0].clock - start < 0.5
    # the third measured second is in hand 3.5 s after the warm-up at the latest, not 4
    assert len(per_second_rates([s for s in samples if s.clock <= start + 3.5], start)) == 3


def test_counter_sample_parsing_and_script_quoting():
    text = "1795381397.501566\nnic 123456\nbytes_received:100\nbytes_received:250\n"
    assert parse_counter_sample(text) == CounterSample(1795381397.501566, 123456, 350)
    assert parse_counter_sample("1795381397.5\nnic 7\n") == CounterSample(1795381397.5, 7, None)
    assert parse_counter_sample("1795381397.5\n") is None
    assert parse_counter_sample("cat: no such file\nnic xyz\n") is None
    script = LINUX.receive_counter_script("eth1", 20001)
    assert "/sys/class/net/eth1/statistics/rx_bytes" in script
    assert "'( sport = :20001 )'" in script  # one literal argument for ss, never shell syntax
    # the clock is read after ss, which reads its sockets at its end (4-10 ms after it starts)
    assert script.index("ss -tinH") < script.index("EPOCHREALTIME")


def test_rates_prefer_the_sockets_payload_when_every_sample_has_it():
    with_tcp = [CounterSample(float(t), 1000 * t, 100 * t) for t in range(4)]
    assert per_second_rates(with_tcp, 0.0) == [100.0, 100.0, 100.0]
    mixed = [*with_tcp, CounterSample(4.0, 4000, None)]
    assert per_second_rates(mixed, 0.0) == [1000.0] * 4  # one sample without ss: the NIC for all


def test_receiver_view_of_an_interrupted_run():
    client_text = (IPERF3 / "3.12-tcp-P4-b200M-sigint-client.json").read_text()
    server_text = (IPERF3 / "3.12-tcp-P4-b200M-sigint-server.json").read_text()
    client = parse_iperf3(client_text, "client")
    assert client.error is not None and client.received is None  # sum_received was 0
    view = receiver_view(client, server_text, "client")
    # three whole measured seconds on the server (the cut and repeated last one left out)
    assert view.received is not None
    assert view.received.bytes == 100139008 + 99876864 + 99876864
    assert view.received.seconds == pytest.approx(3.0001, abs=1e-3)
    assert view.goodput_mbps == pytest.approx(799.7, abs=0.5)  # 4 streams at -b 200M
    assert len(view.streams) == 4
    assert all(
        s.received is not None and s.received.mbps == pytest.approx(200, rel=0.01) for s in view.streams
    )
    assert view.error is None
    assert all(i.seconds >= 0.9 for i in view.intervals)


def test_receiver_view_without_a_usable_server_report_is_a_lab_fault():
    client = parse_iperf3((IPERF3 / "3.12-tcp-P4-b200M-sigint-client.json").read_text(), "client")
    with pytest.raises(LabFault) as caught:
        receiver_view(client, "", "client")
    assert caught.value.category == "iperf3-output"


def test_receiver_view_corrects_the_warm_up_quirk_of_omit_two():
    # Recorded on the virtual lab: this run read 809.5 Mbit/s (6/7 of the truth) before the
    # parser took the warm-up second out of the first measured interval.
    client = parse_iperf3((IPERF3 / "3.12-tcp-P10-O2-sigint-client.json").read_text(), "client")
    server_text = (IPERF3 / "3.12-tcp-P10-O2-sigint-server.json").read_text()
    view = receiver_view(client, server_text, "client")
    assert view.received is not None
    assert view.received.seconds == pytest.approx(6.0, abs=0.01)
    assert view.goodput_mbps == pytest.approx(944.45, abs=0.05)


def test_a_run_is_not_settled_while_its_interval_holds_a_decision_line():
    from pytest_pinet.traffic.adaptive import clear_of

    steady = [117.6e6, 117.7e6, 117.5e6, 117.6e6, 117.7e6, 117.6e6]  # bytes/s: ~941 Mbit/s
    assert clear_of(steady, []) and clear_of(steady, [930.0])
    assert not clear_of(steady, [940.9])  # 941 +- 0.4: could be either side
    assert not clear_of(steady[:1], [930.0])  # one second says nothing about its spread


def test_slow_paced_streams_write_small_blocks_so_their_seconds_are_comparable():
    from pytest_pinet.traffic.iperf3_runner import Iperf3Options, client_argv, paced_block_bytes

    # 1 Mbit/s over ten streams: 0.1 Mbit/s each, one 128 KiB write every 10 s by default;
    # 20 ms of the stream's rate a write, 1 to 8 KiB
    assert paced_block_bytes("0.1M") == 1024 and paced_block_bytes("500K") == 1250
    assert paced_block_bytes("4M") == 8192 and paced_block_bytes("9.9M") == 8192
    # up to 100 Mbit/s a stream: 128 KiB writes made a 10 Mbit/s stream's seconds 94 or 105
    assert paced_block_bytes("10M") == 8192 and paced_block_bytes("40M") == 8192
    assert paced_block_bytes("100M") is None and paced_block_bytes("1G") is None
    slow = client_argv("10.0.0.2", 5201, Iperf3Options(bitrate="0.25M"))
    assert slow[slow.index("-b") + 1] == "0.25M" and slow[slow.index("-l") + 1] == 1024
    throttled = client_argv("10.0.0.2", 5201, Iperf3Options(bitrate="40M"))
    assert throttled[throttled.index("-l") + 1] == 8192
    assert "-l" not in client_argv("10.0.0.2", 5201, Iperf3Options(bitrate="200M"))
    assert "-l" not in client_argv("10.0.0.2", 5201, Iperf3Options())


def test_a_settled_run_whose_receiver_report_is_lost_is_a_lab_fault_not_the_senders_count():
    """The sender's count is what it handed to its socket: a QEMU board's paced download read
    15.6 Mbit/s so through a 10 Mbit/s cable.  The run is the lab's loss, its outputs kept."""
    from types import SimpleNamespace
    from typing import Any, cast

    from pytest_pinet.host.remote import CommandResult
    from pytest_pinet.traffic.adaptive import SETTLED
    from pytest_pinet.traffic.iperf3_runner import Iperf3Options, _Client

    client_text = (IPERF3 / "3.12-tcp-P4-b200M-sigint-client.json").read_text()
    for server_json in ("", '{"start": {'):  # nothing written, or cut short
        server = SimpleNamespace(
            port=5201, server_json=server_json, command="iperf3 -s", host=SimpleNamespace(name="pc")
        )
        client = _Client(
            cast(Any, SimpleNamespace(name="inet")), cast(Any, server), "10.0.0.2", Iperf3Options()
        )
        client.outcome = CommandResult(client.script, 0, client_text, "")
        with pytest.raises(LabFault) as caught:
            client.finish(SETTLED, 0.4)
        fault = caught.value
        assert fault.category == "iperf3-output" and fault.host == "pc"
        assert "not what arrived" in str(fault) and "Mbit/s handed to its socket" in str(fault)
        assert fault.evidence["iperf3 client output"] == client_text[-20000:]
        assert fault.evidence["iperf3 server output"] == server_json
    # with the server's report the same output is the receiver's figure (799.7 Mbit/s)
    server_text = (IPERF3 / "3.12-tcp-P4-b200M-sigint-server.json").read_text()
    server = SimpleNamespace(
        port=5201, server_json=server_text, command="iperf3 -s", host=SimpleNamespace(name="pc")
    )
    client = _Client(cast(Any, SimpleNamespace(name="inet")), cast(Any, server), "10.0.0.2", Iperf3Options())
    client.outcome = CommandResult(client.script, 0, client_text, "")
    assert client.finish(SETTLED, 0.4).result.goodput_mbps == pytest.approx(799.7, abs=0.5)


def _readings(tcp: list[int | None], rx_step: int = 0) -> list[CounterSample]:
    return [CounterSample(100.0 + i, 1_000_000 + i * rx_step, b) for i, b in enumerate(tcp)]


def test_a_receiver_whose_counters_stand_still_is_stalled_for_that_long():
    # three sampling intervals, even when the readings' jitter makes them 2.9995 s (a cable pulled on the namespace lab)
    assert 2.0 < STALL_S <= 2.9
    moving = _readings([0, 10**8, 2 * 10**8, 3 * 10**8])
    assert stalled_for(moving, 100.0) == 0.0
    # moved until 102, then nothing for three readings: still since 102, three seconds at 105
    cut = _readings([0, 10**8, 2 * 10**8, 2 * 10**8, 2 * 10**8, 2 * 10**8])
    assert stalled_for(cut, 100.0) == pytest.approx(3.0)
    assert stalled_for(cut[:5], 100.0) == pytest.approx(2.0)
    # never moved after the warm-up (a connection still being made): not a stall
    assert stalled_for(_readings([0, 0, 0, 0, 0]), 100.0) == 0.0
    # stillness counts from the warm-up's end: still since 102, counted from 103, two seconds at 105
    assert stalled_for(cut, 103.0) == pytest.approx(2.0)
    assert stalled_for(cut[:4], 103.0) == 0.0
    # bytes flowed in the warm-up, then none (a board hung 2 s into a 3 s warm-up): stalled
    # from the warm-up's end, not never
    hung_early = _readings([0, 10**8, 10**8, 10**8, 10**8, 10**8, 10**8])
    assert stalled_for(hung_early, 103.0) == pytest.approx(3.0)


def test_without_socket_counters_the_sampler_s_own_ssh_bytes_are_still_standing_still():
    # the interface counter grows by 5 kB a second (the sampling session) and that is all
    chatter = [CounterSample(100.0 + i, 10**9 + min(i, 2) * 10**8 + i * 5000, None) for i in range(6)]
    assert stalled_for(chatter, 100.0) == pytest.approx(3.0)
    busy = [CounterSample(100.0 + i, 10**9 + i * 10**8, None) for i in range(6)]
    assert stalled_for(busy, 100.0) == 0.0
