"""Routing through the board (seed: Pi 4B between an "internet" PC and a LAN PC, pfifo_fast vs SFQ).

Ten download streams from the wan peer to the lan peer, forwarded by the board, under each
qdisc on both board interfaces: total and per-stream goodput, Jain's fairness index and the
slowest/fastest stream ratio, judged against the thresholds file, and the round-trip time
a probe saw through the board idle and under that load (lower is better, judged against
``latency_rules``).  Then download while the lan peer uploads at 100, 250, 500 Mbit/s and unlimited, as the seed's table.  Every result
proves from `tc -s qdisc` that the qdisc under test carried the traffic.  A qdisc the board's
kernel lacks (sfq and fq_codel on this machine's kernel) skips with that reason.
"""

from __future__ import annotations

import pytest

from pytest_pinet.host.routed_path import QDISCS, UPLOAD_TARGETS

QDISC_NAMES = sorted(QDISCS)

pytestmark = [pytest.mark.routing, pytest.mark.latency]


def _carried_by_the_qdisc(measurement, interface):
    """Bytes the qdisc under test sent on ``interface`` over the bytes the receiver counted."""
    (used,) = [q for q in measurement.tcp.qdisc if q.interface == interface]
    assert used.kind == measurement.context.qdisc and used.instances >= 1
    received = measurement.goodput_mbps * 1e6 / 8 * (measurement.measured_s or 0)
    return used.sent_bytes / received


@pytest.mark.half_duplex
@pytest.mark.parametrize("pinet_board_qdisc", QDISC_NAMES, indirect=True)
def test_download_through_the_board(
    pinet_measure_routing, pinet_judge_goodput, pinet_judge_latency, pinet_route
):
    (download,) = pinet_judge_goodput(lambda: [pinet_measure_routing.download()])
    (latency,) = pinet_judge_latency([download])
    # The probe crossed the loaded path: idle and under-load figures, both from probes that came back.
    assert download.tcp.latency.idle.median_ms is not None and latency.p99_ms is not None
    assert len(download.per_stream_mbps) == download.context.streams
    # The qdisc under test on the board's LAN side sent at least every byte that arrived
    # (headers and the warm-up make it more): it was in the path, not beside it.
    assert _carried_by_the_qdisc(download, pinet_route.lan.board_interface) >= 1.0
    assert download.tcp.min_max_stream_ratio is not None


@pytest.mark.full_duplex
@pytest.mark.parametrize("upload_mbps", UPLOAD_TARGETS, ids=lambda t: f"up-{t or 'unlimited'}")
@pytest.mark.parametrize("pinet_board_qdisc", QDISC_NAMES, indirect=True)
def test_download_while_uploading(
    pinet_measure_routing, pinet_judge_goodput, pinet_judge_latency, pinet_route, upload_mbps
):
    download, upload = pinet_judge_goodput(
        lambda: list(pinet_measure_routing.download_while_uploading(upload_mbps))
    )
    pinet_judge_latency([download, upload])
    assert (download.context.direction, upload.context.direction) == ("download", "upload")
    target = pinet_measure_routing.scaled_target(upload_mbps)
    assert download.context.rate_target_mbps == upload.context.rate_target_mbps == target
    # Both directions overlapped, and each crossed the qdisc under test on its way out.
    assert download.started < upload.finished and upload.started < download.finished
    assert _carried_by_the_qdisc(download, pinet_route.lan.board_interface) >= 1.0
    assert _carried_by_the_qdisc(upload, pinet_route.wan.board_interface) >= 1.0
