"""UDP packet rates (seed: sendto / sendmmsg / raw layer 2 on a Pi, thread counts 1..cores).

The board sends 1472-byte datagrams with each method, for 1 to as many threads as it has
cores, over the link under test and over its loopback (the seed's way to see what the
driver costs). The peer's kernel counts what arrived; the loss is the difference. Each
thread count is one measurement, judged against the thresholds file; the physics check is
that no link ever delivers more than its line rate in frames.
"""

from __future__ import annotations

import pytest

from pytest_pinet.judge.linerate import LinkModel
from pytest_pinet.measure import LOOPBACK

pytestmark = [pytest.mark.udp]


@pytest.mark.parametrize("mode", ["sendto", "sendmmsg", "raw"])
def test_udp_rate_over_the_link(pinet_measure_udp, pinet_judge_goodput, mode):
    runs = pinet_measure_udp.sweep(mode, "link")
    assert [r.context.streams for r in runs] == list(range(1, pinet_measure_udp.cores + 1))
    pinet_judge_goodput(*runs)
    frames_per_second = LinkModel(runs[0].context.link_speed_mbps, runs[0].context.mtu).frames_per_second()
    for run in runs:
        udp = run.detail
        assert udp.kind == "udp" and udp.sent_pps > 0
        # what arrived can never beat the wire (81,274 frames/s on GbE), nor what was sent: the
        # whole run's counts, since the rate is taken over the receiver's steady window while
        # the generator's average includes its start-up
        assert udp.received_pps <= 1.01 * frames_per_second
        assert udp.loss_pct is not None and udp.loss_pct >= -0.1, udp


@pytest.mark.parametrize("mode", ["sendto", "sendmmsg"])
def test_udp_rate_over_loopback(pinet_measure_udp, pinet_judge_goodput, mode):
    runs = pinet_measure_udp.sweep(mode, LOOPBACK)
    pinet_judge_goodput(*runs)
    for run in runs:
        assert run.context.link == LOOPBACK and run.detail.received_pps > 0
