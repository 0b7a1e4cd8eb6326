"""Ethernet throughput between the board and a peer (seed: Pi 4B built-in port vs a PC).

Ten parallel TCP streams, the first seconds omitted as warm-up, under the seed's profiles
(stock, IRQs pinned, IRQs pinned + RPS/XPS); goodput judged
against the thresholds file: 940 Mbit/s for GbE at MTU 1500 in half duplex (the line-rate
limit with TCP timestamps is 941.5); in full duplex each direction also carries the
other's ACKs and a stock Pi 4B reaches only ~540 (softirq-bound).
"""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.ethernet]

PROFILES = ["stock", "irq-pinned", "irq-pinned-rps-xps"]


@pytest.mark.half_duplex
@pytest.mark.parametrize("pinet_profile", PROFILES, indirect=True)
@pytest.mark.parametrize("direction", ["board->peer", "peer->board"])
def test_tcp_half_duplex_goodput(pinet_measure_tcp, pinet_judge_goodput, direction):
    (measurement,) = pinet_judge_goodput(lambda: [pinet_measure_tcp.half_duplex(direction)])
    assert len(measurement.per_stream_mbps) == measurement.context.streams


@pytest.mark.full_duplex
@pytest.mark.parametrize("pinet_profile", PROFILES, indirect=True)
def test_tcp_full_duplex_goodput(pinet_measure_tcp, pinet_judge_goodput):
    to_peer, to_board = pinet_judge_goodput(pinet_measure_tcp.full_duplex)
    assert (to_peer.context.direction, to_board.context.direction) == ("board->peer", "peer->board")
    # Both directions overlapped: each started before the other finished.
    assert to_peer.started < to_board.finished and to_board.started < to_peer.finished
