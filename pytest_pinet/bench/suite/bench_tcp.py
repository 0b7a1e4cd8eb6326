"""The bench batch: half duplex both ways, repeated, through the real fixtures.

`pinet bench` runs this file with pytest against its bench lab, once with short fixed runs
(overhead: each test's wall time minus its traffic time), and once each with the fixed 65 s
method and with adaptive duration (suite wall time and result spread).  The assertions are
the ordinary ones of the suite: a result below its floor fails here as it would anywhere.
"""

from __future__ import annotations

import os
from collections.abc import Callable

import pytest

from pytest_pinet.measure import TcpMeasurer
from pytest_pinet.model import Measurement

REPEATS = int(os.environ.get("PINET_BENCH_REPEATS", "3"))


@pytest.mark.parametrize("repeat", range(REPEATS))
@pytest.mark.parametrize("direction", ["board->peer", "peer->board"])
def test_bench_half_duplex(
    pinet_measure_tcp: TcpMeasurer,
    pinet_judge_goodput: Callable[..., list[Measurement]],
    direction: str,
    repeat: int,
) -> None:
    (measurement,) = pinet_judge_goodput(pinet_measure_tcp.half_duplex(direction))
    assert len(measurement.per_stream_mbps) == measurement.context.streams
