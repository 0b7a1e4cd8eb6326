"""Ethernet throughput between the board and a peer (seed: Pi 4B built-in port vs a PC).

Ten parallel TCP streams, the first seconds omitted as warm-up, under the seed's profiles
(stock, IRQs pinned, IRQs pinned + RPS/XPS); goodput judged
against the thresholds file: 940 Mbit/s for GbE at MTU 1500 in half duplex (the line-rate
limit with TCP timestamps is 941.5); in full duplex each direction also carries the
other's ACKs and a stock Pi 4B reaches only ~540 (softirq-bound).  Every run also gives its
latency under load: the peer probes the board idle and under the load (irtt, else ping),
judged lower-is-better against the link ``latency_rules`` (the sending end's queue drained
at the link rate).
"""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.ethernet, pytest.mark.latency]

PROFILES = ["stock", "irq-pinned", "irq-pinned-rps-xps"]


@pytest.mark.half_duplex
@pytest.mark.parametrize("pinet_profile", PROFILES, indirect=True)
@pytest.mark.parametrize("direction", ["board->peer", "peer->board"])
def test_tcp_half_duplex_goodput(pinet_measure_tcp, pinet_judge_goodput, pinet_judge_latency, direction):
    (measurement,) = pinet_judge_goodput(lambda: [pinet_measure_tcp.half_duplex(direction)])
    (latency,) = pinet_judge_latency([measurement])
    assert len(measurement.per_stream_mbps) == measurement.context.streams
    # The probe crossed the loaded link: an idle and an under-load figure, both from replies.
    assert measurement.tcp.latency.idle.median_ms is not None and latency.p99_ms is not None


@pytest.mark.full_duplex
@pytest.mark.parametrize("pinet_profile", PROFILES, indirect=True)
def test_tcp_full_duplex_goodput(pinet_measure_tcp, pinet_judge_goodput, pinet_judge_latency):
    to_peer, to_board = pinet_judge_goodput(pinet_measure_tcp.full_duplex)
    pinet_judge_latency([to_peer, to_board])
    assert (to_peer.context.direction, to_board.context.direction) == ("board->peer", "peer->board")
    # Both directions overlapped: each started before the other finished.
    assert to_peer.started < to_board.finished and to_board.started < to_peer.finished
