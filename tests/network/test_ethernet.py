"""Ethernet throughput between the board and a peer (seed: Pi 4B built-in port vs a PC).

Ten parallel TCP streams, the first seconds omitted as warm-up, goodput judged against
lab/thresholds.yaml (940 Mbit/s for GbE at MTU 1500: the line-rate limit with TCP
timestamps is 941.5).
"""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.ethernet]


@pytest.mark.half_duplex
@pytest.mark.parametrize("direction", ["board->peer", "peer->board"])
def test_tcp_half_duplex_goodput(measure_tcp, judge_goodput, direction):
    measurement = measure_tcp(direction=direction, scenario="ethernet", duplex="half")
    assert len(measurement.per_stream_mbps) == measurement.context.streams
    judge_goodput(measurement)
