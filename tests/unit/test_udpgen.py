"""The UDP generator: its source builds, its JSON lines parse, bad runs are lab faults."""

from __future__ import annotations

import subprocess

import pytest

from pytest_pinet.errors import LabFault
from pytest_pinet.host.facts_parse import parse_udp_snmp
from pytest_pinet.model import ReceiverCounters
from pytest_pinet.traffic.udpgen import (
    UdpGenOptions,
    parse_udpgen,
)
from tests.fixture_paths import LAB_OUTPUTS


def test_recorded_loopback_run_parses():
    run = parse_udpgen((LAB_OUTPUTS / "udpgen-sendmmsg-loopback-2threads.jsonl").read_text(), "recorded")
    assert run.packets > 0 and run.bytes == run.packets * 1472
    assert run.seconds == pytest.approx(2.0, abs=0.1)
    assert run.pps == pytest.approx(run.packets / run.seconds)
    assert sum(int(i["packets"]) for i in run.intervals) == run.packets  # intervals add up
    assert 0 < run.cpu_percent <= 100 * 2 + 5  # two threads on two cores at most


@pytest.mark.parametrize(
    ("text", "category", "fragment"),
    [
        (
            '{"event":"error","message":"socket: Operation not permitted (needs CAP_NET_RAW)"}\n',
            "udpgen",
            "CAP_NET_RAW",
        ),
        ('{"event":"start","mode":"sendto"}\n{"event":"interval","t":1.0}\n', "udpgen-output", "no end line"),
        ("{not json\n", "udpgen-output", "not JSON"),
        ('{"event":"end","seconds":2.0}\n', "udpgen-output", "end line lacks"),
    ],
)
def test_bad_generator_output_is_a_lab_fault_naming_the_source(text, category, fragment):
    with pytest.raises(LabFault) as caught:
        parse_udpgen(text, "pinet-udpgen on pi")
    assert caught.value.category == category
    assert fragment in str(caught.value) and "pinet-udpgen on pi" in str(caught.value)


def test_options_refuse_what_could_reach_a_shell_oddly():
    with pytest.raises(ValueError, match="mode"):
        UdpGenOptions("flood", "10.0.0.2")
    with pytest.raises(ValueError, match="interface"):
        UdpGenOptions("sendto", "10.0.0.2", interface="eth0;reboot")
    with pytest.raises(ValueError, match="raw mode needs"):
        UdpGenOptions("raw", "10.0.0.2", interface="eth0")
    with pytest.raises(ValueError, match="MAC"):
        UdpGenOptions("raw", "10.0.0.2", interface="eth0", src="10.0.0.1", dest_mac="aa:bb")
    argv = UdpGenOptions("sendmmsg", "10.0.0.2", threads=2).argv("bin")
    assert argv[:3] == ["bin", "--mode", "sendmmsg"] and "--no-recverr" in argv


def test_receiver_counters_from_proc_net_snmp():
    snmp = (LAB_OUTPUTS / "proc-net-snmp-udp.txt").read_text()
    udp = parse_udp_snmp(snmp)
    assert {"InDatagrams", "NoPorts", "RcvbufErrors"} <= set(udp)
    before = ReceiverCounters(100, 10, 1000, 0)
    after = ReceiverCounters(400, 10, 1290, 5)
    assert (after - before).datagrams == 295


def test_receiver_clock_and_counters_are_read_together_or_refused_naming_the_source():
    from pytest_pinet.traffic.udpgen import parse_receiver

    snmp = (LAB_OUTPUTS / "proc-net-snmp-udp.txt").read_text()
    clock, counters = parse_receiver(f"1763900000.123456789\n4242\n{snmp}", "receiver counters on pc")
    assert clock == pytest.approx(1763900000.123456789) and counters.rx_packets == 4242
    for hostile in ("", "not-a-clock\n4242\n" + snmp, "1763900000.1\nx\n" + snmp, "1763900000.1\n4242\n"):
        with pytest.raises(LabFault, match="unreadable receiver counters on pc"):
            parse_receiver(hostile, "receiver counters on pc")


def receiver_script_read(shell: str) -> None:
    """The receiver script reads the counters before its clock: bash gives the builtin clock
    ($EPOCHREALTIME, microseconds), dash falls back to date (tests/integration/test_real_tools.py)."""
    from pytest_pinet.host.platform import LINUX
    from pytest_pinet.traffic.udpgen import parse_receiver

    out = subprocess.run(
        [shell, "-c", LINUX.udp_receiver_script("lo")], capture_output=True, text=True, check=True
    ).stdout
    clock, counters = parse_receiver(out, f"receiver counters under {shell}")
    assert clock > 1.7e9 and counters.rx_packets >= 0 and counters.udp_in >= 0
    assert out.count("\nUdp: ") == 2  # the header and the figures, never UdpLite's


def test_the_receiver_script_reads_the_counters_before_its_clock_in_bash():
    receiver_script_read("bash")
