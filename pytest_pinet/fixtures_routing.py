"""Fixtures of the routing suite: the board forwarding between two peers, under a qdisc.

``routed_path`` provisions forwarding and the peers' routes, ``board_qdisc`` (parametrize it
indirectly with pfifo_fast, sfq, fq_codel) puts the qdisc on both board interfaces and skips
with the reason when the board's kernel lacks it, and ``measure_routing`` takes the seed's
measurements: download with per-stream fairness, and download while the LAN peer uploads
at a target rate.  Each result carries the qdisc counters that prove the qdisc was in path.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from .fixtures import FactsCache, record_and_attach, skip_unsupported
from .judge.linerate import tcp_goodput_limit
from .lab.inventory import Inventory, RouteEntry
from .lab.profiles import AppliedProfile
from .lab.qdisc_stats import QdiscStats
from .lab.remote import RemoteHost
from .lab.tunables import Unsupported
from .measurement import Measurement, TrafficContext
from .scenarios.routing import (
    DOWNLOAD,
    QDISCS,
    UPLOAD,
    apply_board_qdisc,
    min_max_ratio,
    provision_route,
    qdisc_evidence,
    qdisc_snapshot,
)
from .settings import PinetSettings
from .traffic.adaptive import SettleRule
from .traffic.iperf3_runner import AdaptiveStop, Iperf3Options, Iperf3Run, run_iperf3, run_iperf3_both_ways
from .traffic.observers import Snapshot, observe, take_snapshot


@pytest.fixture(scope="session")
def route_entry(pinet_inventory: Inventory) -> RouteEntry:
    """The lab's first routed path (``pinet.routes`` in the env file)."""
    if not pinet_inventory.routes:
        pytest.skip(f"{pinet_inventory.source}: no pinet.routes entry: the board routes nothing here")
    return pinet_inventory.routes[0]


@pytest.fixture
def routed_path(
    request: pytest.FixtureRequest, route_entry: RouteEntry, pinet_hosts: dict[str, RemoteHost]
) -> Iterator[AppliedProfile]:
    """ip_forward on the board and a route on each peer; all restored afterwards."""
    try:
        applied = provision_route(route_entry, pinet_hosts)
    except Unsupported as exc:
        skip_unsupported(request, exc, route_entry.name, "route")
    yield applied
    problems = applied.restore()
    if problems:
        pytest.fail("restoring the routed path failed: " + "; ".join(problems), pytrace=False)


@pytest.fixture(params=["pfifo_fast"])
def board_qdisc(
    request: pytest.FixtureRequest,
    route_entry: RouteEntry,
    pinet_hosts: dict[str, RemoteHost],
    routed_path: AppliedProfile,
) -> Iterator[str]:
    """The qdisc under test on both board interfaces; a kernel without it skips the test."""
    name = str(request.param)
    try:
        applied = apply_board_qdisc(route_entry, pinet_hosts, name)
    except Unsupported as exc:
        skip_unsupported(request, exc, name, "qdisc")
    yield name
    problems = applied.restore()
    if problems:
        pytest.fail("restoring the qdisc failed: " + "; ".join(problems), pytrace=False)


class RoutingMeasurer:
    """Traffic between the two peers of a route, through the board, recorded at once."""

    def __init__(
        self,
        request: pytest.FixtureRequest,
        inventory: Inventory,
        hosts: dict[str, RemoteHost],
        route: RouteEntry,
        options: Iperf3Options,
        facts: FactsCache,
        qdisc: str,
        settle: SettleRule | None,
    ) -> None:
        self.request = request
        self.inventory = inventory
        self.route = route
        self.options = options
        self.facts = facts
        self.qdisc = qdisc
        self.settle = settle
        self.board = hosts[route.board]
        self.lan_peer = hosts[route.lan.peer]
        self.wan_peer = hosts[route.wan.peer]
        self.limit = tcp_goodput_limit(
            min(route.lan.speed_mbps, route.wan.speed_mbps), min(route.lan.mtu, route.wan.mtu)
        )

    def _ends(self) -> list[tuple[RemoteHost, str]]:
        r = self.route
        return [
            (self.board, r.lan.board_interface),
            (self.board, r.wan.board_interface),
            (self.lan_peer, r.lan.peer_interface),
            (self.wan_peer, r.wan.peer_interface),
        ]

    def _snapshots(self) -> tuple[list[Snapshot], dict[str, QdiscStats]]:
        with ThreadPoolExecutor(max_workers=5) as pool:
            qdisc = pool.submit(qdisc_snapshot, self.route, self.board, self.qdisc)
            snaps = list(pool.map(lambda end: take_snapshot(*end), self._ends()))
            return snaps, qdisc.result()

    def _options(self, sender: RemoteHost, stream_mbps: float | None = None) -> Iperf3Options:
        congestion = self.inventory.hosts[sender.name].tcp_congestion
        rate = None if stream_mbps is None else f"{stream_mbps:g}M"
        return dataclasses.replace(self.options, congestion=congestion, bitrate=rate)

    def _context(
        self, direction: str, duplex: str, target: int = 0, scenario: str = "routing"
    ) -> TrafficContext:
        r = self.route
        board_facts = self.facts[r.board]
        wan_if = board_facts.interfaces.get(r.wan.board_interface)
        return TrafficContext(
            lab=self.inventory.lab,
            scenario=scenario,
            board=r.board,
            peer=f"{r.wan.peer}<>{r.lan.peer}",
            link=r.name,
            adapter=r.wan.adapter,
            direction=direction,
            duplex=duplex,
            streams=self.options.streams,
            duration_s=self.options.duration,
            omit_s=self.options.omit,
            link_speed_mbps=min(r.lan.speed_mbps, r.wan.speed_mbps),
            mtu=min(r.lan.mtu, r.wan.mtu),
            qdisc=self.qdisc,
            kernel=board_facts.kernel,
            os=board_facts.os_name,
            driver=(wan_if.driver or "") if wan_if else "",
            rate_target_mbps=target,
        )

    def _record(
        self,
        context: TrafficContext,
        run: Iperf3Run,
        limit: float,
        before: tuple[list[Snapshot], dict[str, QdiscStats]],
        after: tuple[list[Snapshot], dict[str, QdiscStats]],
    ) -> Measurement:
        observations = [
            dataclasses.asdict(observe(host.name, interface, old, new))
            for (host, interface), old, new in zip(self._ends(), before[0], after[0], strict=True)
        ]
        evidence: dict[str, Any] = {
            "qdisc": [e.as_dict() for e in qdisc_evidence(before[1], after[1])],
            "route": {"lan": self.route.lan.name, "wan": self.route.wan.name, "board": self.route.board},
        }
        facts = {"board": dataclasses.asdict(self.facts[self.route.board])}
        test_id = f"{self.request.node.nodeid}#{context.direction}"
        measurement = Measurement.from_iperf3(test_id, context, run, limit, facts, observations)
        streams = measurement.per_stream_mbps
        evidence["min_max_stream_ratio"] = min_max_ratio(streams)
        return record_and_attach(self.request.config, dataclasses.replace(measurement, evidence=evidence))

    def download(self, scenario: str = "routing") -> Measurement:
        """The wan peer sends to the lan peer through the board (the seed's 10-stream download).

        ``scenario`` names what else was going on (``routing+disk-io`` in the contention case).
        """
        r = self.route
        adaptive = AdaptiveStop(self.settle, r.lan.peer_interface) if self.settle else None
        before = self._snapshots()
        run = run_iperf3(
            self.wan_peer, self.lan_peer, r.lan.peer_address, self._options(self.wan_peer), adaptive
        )
        context = self._context(DOWNLOAD, "half", scenario=scenario)
        return self._record(context, run, self.limit, before, self._snapshots())

    def download_while_uploading(self, upload_mbps: int) -> tuple[Measurement, Measurement]:
        """Download at full speed while the lan peer uploads at ``upload_mbps`` in total (0 =
        unlimited); returns (download, upload), each with its actual figure."""
        r = self.route
        per_stream = upload_mbps / self.options.streams if upload_mbps else None
        before = self._snapshots()
        down, up = run_iperf3_both_ways(
            self.wan_peer,
            self.lan_peer,
            r.wan.peer_address,
            r.lan.peer_address,
            self._options(self.wan_peer),
            self._options(self.lan_peer, per_stream),
            (self.settle, r.wan.peer_interface, r.lan.peer_interface) if self.settle else None,
        )
        after = self._snapshots()
        up_limit = min(self.limit, float(upload_mbps)) if upload_mbps else self.limit
        return (
            self._record(self._context(DOWNLOAD, "full", upload_mbps), down, self.limit, before, after),
            self._record(self._context(UPLOAD, "full", upload_mbps), up, up_limit, before, after),
        )


@pytest.fixture
def measure_routing(
    request: pytest.FixtureRequest,
    pinet_inventory: Inventory,
    pinet_hosts: dict[str, RemoteHost],
    route_entry: RouteEntry,
    iperf3_options: Iperf3Options,
    host_facts: FactsCache,
    board_qdisc: str,
    pinet_settings: PinetSettings,
) -> RoutingMeasurer:
    """Measure through the board under ``board_qdisc``; every result is recorded at once."""
    return RoutingMeasurer(
        request,
        pinet_inventory,
        pinet_hosts,
        route_entry,
        iperf3_options,
        host_facts,
        board_qdisc,
        pinet_settings.settle_rule(),
    )


QDISC_NAMES = sorted(QDISCS)
