"""The adapter matrix (seed: a Pi 4B's AX88179 and RTL8153 USB 3 Gigabit adapters).

Every test runs once per link of the board, each labelled with its adapter facts (driver,
bus, USB speed): half duplex both ways, full duplex, and full duplex with the peer
throttled to 40 Mbit/s per stream (the seed's `-b 40mbit` x 10), under the CPU clock
profiles where the board allows them.  Expectations per adapter are in the thresholds file;
the known-slow AX88179 sending is an xfail with its reason there, never a lowered floor.
Latency under load is probed with every run and judged as the Ethernet suite's.
"""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.usb_adapter, pytest.mark.lg_feature("usb-ethernet"), pytest.mark.latency]

CLOCKS = ["stock", "clock-1500", "clock-2000"]


def _adapter_facts(pinet_host_facts, link):
    facts = pinet_host_facts[link.board].interfaces.get(link.board_interface)
    assert facts is not None, f"no facts for {link.board}:{link.board_interface}"
    return facts


@pytest.mark.half_duplex
@pytest.mark.parametrize("pinet_profile", CLOCKS, indirect=True)
@pytest.mark.parametrize("direction", ["board->peer", "peer->board"])
def test_adapter_half_duplex(
    pinet_measure_tcp,
    pinet_judge_goodput,
    pinet_judge_latency,
    pinet_host_facts,
    pinet_link_under_test,
    direction,
):
    facts = _adapter_facts(pinet_host_facts, pinet_link_under_test)
    (measurement,) = pinet_judge_goodput(
        lambda: [pinet_measure_tcp.half_duplex(direction, scenario="usb-adapter")]
    )
    pinet_judge_latency([measurement])
    assert measurement.context.link == pinet_link_under_test.name
    assert measurement.context.driver == (facts.driver or "")


@pytest.mark.full_duplex
@pytest.mark.parametrize("pinet_profile", CLOCKS, indirect=True)
def test_adapter_full_duplex(pinet_measure_tcp, pinet_judge_goodput, pinet_judge_latency):
    to_peer, to_board = pinet_judge_goodput(
        lambda: list(pinet_measure_tcp.full_duplex(scenario="usb-adapter"))
    )
    pinet_judge_latency([to_peer, to_board])
    assert to_peer.started < to_board.finished and to_board.started < to_peer.finished


@pytest.mark.full_duplex
@pytest.mark.parametrize("pinet_profile", CLOCKS, indirect=True)
def test_adapter_full_duplex_peer_throttled(pinet_measure_tcp, pinet_judge_goodput, pinet_judge_latency):
    to_peer, to_board = pinet_judge_goodput(
        lambda: list(pinet_measure_tcp.full_duplex(scenario="usb-adapter", peer_stream_mbps=40))
    )
    pinet_judge_latency([to_peer, to_board])
    assert to_board.context.rate_target_mbps == 40 * to_board.context.streams
    # The board's own direction under a throttled peer is a context of its own: its queue,
    # and so its latency, is not the unthrottled full duplex's.
    assert to_peer.context.opposite_rate_mbps == to_board.context.rate_target_mbps
    assert to_peer.started < to_board.finished and to_board.started < to_peer.finished
    # The throttled direction stays near its target; the board's own sending gets the rest.
    assert to_board.goodput_mbps < 1.1 * to_board.context.rate_target_mbps
