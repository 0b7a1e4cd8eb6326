"""Routing pieces without traffic: qdisc counters, the seed's tables, provisioning steps."""

from __future__ import annotations

import subprocess
from types import SimpleNamespace

import pytest

from pytest_pinet.errors import LabFault
from pytest_pinet.host.net_tunables import HostRoute
from pytest_pinet.host.platform.linux import LINUX
from pytest_pinet.host.qdisc_stats import (
    QdiscStats,
    parse_qdisc_stats,
    qdisc_texts,
    read_qdisc_stats_of,
    total_of_kind,
)
from pytest_pinet.host.routed_path import QDISCS
from pytest_pinet.judge.fairness import min_max_ratio
from pytest_pinet.record.seed_tables import routing_tables
from tests.fixture_paths import LAB_OUTPUTS


def test_qdisc_counters_from_a_recorded_routed_run():
    stats = parse_qdisc_stats((LAB_OUTPUTS / "tc-s-qdisc-tbf-pfifo_fast-routed.txt").read_text())
    assert [s.kind for s in stats] == ["tbf", "pfifo_fast"]
    child = total_of_kind(stats, "pfifo_fast")
    assert child == QdiscStats("pfifo_fast", 249089772, 164556, 0, 0, 0, 1)
    assert total_of_kind(stats, "sfq").instances == 0  # absent: nothing carried, nothing proven
    delta = child - QdiscStats("pfifo_fast", 89772, 4556, 0, 0, 0, 1)
    assert (delta.sent_bytes, delta.sent_packets) == (249000000, 160000)


def test_multiqueue_children_are_summed():
    # the shape of a multiqueue NIC: mq at the root, one child per TX queue
    text = (
        "qdisc mq 0: root\n Sent 300 bytes 3 pkt (dropped 0, overlimits 0 requeues 0)\n"
        "qdisc fq_codel 0: parent :2 limit 10240p flows 1024 quantum 1514\n"
        " Sent 100 bytes 1 pkt (dropped 1, overlimits 0 requeues 2)\n  maxpacket 0 drop_overlimit 0\n"
        "qdisc fq_codel 0: parent :1 limit 10240p flows 1024 quantum 1514\n"
        " Sent 200 bytes 2 pkt (dropped 0, overlimits 0 requeues 1)\n"
    )
    total = total_of_kind(parse_qdisc_stats(text), "fq_codel")
    assert (total.sent_bytes, total.dropped, total.requeues, total.instances) == (300, 1, 3, 2)


def test_seed_qdisc_commands_and_stream_ratio():
    assert QDISCS["sfq"] == ("sfq", "quantum", "1500")
    seed_pfifo = [362, 0.0161, 0.0161, 3.97, 3.42, 72.5, 0.0323, 72.5, 72.6, 362]
    assert min_max_ratio(seed_pfifo) == pytest.approx(0.0161 / 362)
    assert min_max_ratio([]) is None


def test_host_route_refuses_what_is_not_an_address():
    assert HostRoute("10.205.0.2", "10.204.0.1").describe() == "route 10.205.0.2/32 via 10.204.0.1"
    with pytest.raises(ValueError, match="does not appear to be an IPv4 or IPv6 address"):
        HostRoute("10.205.0.2; reboot", "10.204.0.1")


def _row(qdisc, duplex, direction, target, goodput, streams=()):
    return {
        "context": {
            "scenario": "routing",
            "qdisc": qdisc,
            "duplex": duplex,
            "direction": direction,
            "rate_target_mbps": target,
        },
        "goodput_mbps": goodput,
        "detail": {"kind": "tcp", "per_stream_mbps": list(streams)},
    }


def test_tables_as_the_seed_shows_them():
    rows = [
        _row(
            "pfifo_fast",
            "half",
            "download",
            0,
            949.0,
            [362, 0.02, 0.02, 3.97, 3.42, 72.5, 0.03, 72.5, 72.6, 362],
        ),
        _row("sfq", "half", "download", 0, 900.0, [90.0] * 10),
        _row(
            "sfq", "half", "download", 0, 943.0, [89.0, 93.6, 93.7, 96.4, 92.3, 99.6, 93.4, 92.0, 93.9, 99.7]
        ),
        _row("sfq", "full", "download", 100, 932.0),
        _row("sfq", "full", "upload", 100, 109.0),
        _row("sfq", "full", "download", 0, 914.0),
        _row("sfq", "full", "upload", 0, 526.0),
        _row("pfifo_fast", "full", "download", 100, 921.0),
        _row("pfifo_fast", "full", "upload", 100, 116.0),
    ]
    text = "\n".join(routing_tables(rows))
    assert "pfifo_fast      949.0  0.324     0.00" in text  # the helper derived 0.32 from the seed
    assert "sfq             943.0  0.999     0.89" in text  # the re-measure replaced 900.0
    assert "900.0" not in text
    lines = text.splitlines()
    assert lines[-2].split() == ["100", "921.0/116.0", "932.0/109.0"]
    assert lines[-1].split() == ["unlimited", "-", "914.0/526.0"]
    assert routing_tables([{"context": {"scenario": "ethernet"}, "goodput_mbps": 1.0}]) == []


def test_upload_targets_scale_to_a_slower_cable_and_keep_their_keys():
    from pytest_pinet.measure.routing import scale_upload_target

    assert [scale_upload_target(t, 1000) for t in (100, 250, 500, 0)] == [100, 250, 500, 0]
    scaled = [scale_upload_target(t, 10) for t in (100, 250, 500, 0)]
    assert scaled == [1, 2.5, 5, 0] and isinstance(scaled[0], int)  # "1", never "1.0", in a store key
    rows = [_row("sfq", "full", "download", 2.5, 9.1), _row("sfq", "full", "upload", 2.5, 2.4)]
    assert routing_tables(rows)[-1].split() == ["2.5", "9.1/2.4"]


class _Shell:
    """A host whose `tc` prints a recorded output: the batched script really runs in sh."""

    name = "board"
    platform = LINUX

    def __init__(self, tc: str) -> None:
        self.tc = tc
        self.scripts: list[str] = []

    def run_shell(self, script: str, *, timeout: float = 60.0) -> SimpleNamespace:
        self.scripts.append(script)
        done = subprocess.run(
            ["sh", "-c", f"tc() {{ {self.tc}; }}; {script}"], capture_output=True, text=True, timeout=timeout
        )
        return SimpleNamespace(
            ok=done.returncode == 0,
            stdout=done.stdout,
            stderr=done.stderr,
            command=script,
            exit_code=done.returncode,
        )


def test_both_ports_qdisc_counters_come_in_one_command():
    recorded = LAB_OUTPUTS / "tc-s-qdisc-tbf-pfifo_fast-routed.txt"
    board = _Shell(f"cat {recorded}")
    stats = read_qdisc_stats_of(board, ("eth0", "eth1"))  # type: ignore[arg-type]
    assert len(board.scripts) == 1
    assert stats["eth0"] == stats["eth1"] == parse_qdisc_stats(recorded.read_text())


def test_a_failing_tc_in_the_batch_is_a_lab_fault_naming_the_command():
    board = _Shell('[ "$5" = eth1 ] && { echo "Cannot find device eth1" >&2; return 1; }; echo ok')
    with pytest.raises(LabFault, match="Cannot find device eth1"):
        qdisc_texts(board, ("eth0", "eth1"))  # type: ignore[arg-type]
