"""Traffic between the two peers of a route, through the board under a qdisc: the seed's
10-stream download with per-stream fairness, and download while the LAN peer uploads."""

from __future__ import annotations

import dataclasses
from concurrent.futures import ThreadPoolExecutor

from ..host.qdisc_stats import QdiscStats
from ..host.remote import RemoteHost
from ..host.routed_path import DOWNLOAD, UPLOAD, qdisc_evidence, qdisc_snapshot
from ..judge.fairness import min_max_ratio
from ..model import Measurement, RouteUse, TcpDetail, TrafficContext
from ..model.lab import RouteEntry
from ..model.latency import LatencyUse
from ..traffic.adaptive import SettleRule
from ..traffic.iperf3_measurement import measurement_from_iperf3
from ..traffic.iperf3_runner import AdaptiveStop, Iperf3Options, Iperf3Run, run_iperf3, run_iperf3_both_ways
from ..traffic.latency_probe import ProbePlan, choose_probe
from ..traffic.load_watch import LoadWatch, released_on_error
from ..traffic.observers import Snapshot
from .base import Measurer, Site, board_settle, limited, qdisc_use, taking_turns

Counters = tuple[list[Snapshot], dict[str, QdiscStats]]


def scale_upload_target(upload_mbps: float, speed_mbps: float) -> float:
    """The seed's upload target (Mbit/s beside a GbE download) scaled to a slower cable: 100 of
    1000 is 1 of 10, so the table keeps the seed's shape.  Whole numbers stay ``int``, so the
    store keys of GbE contexts do not change."""
    if not upload_mbps or speed_mbps >= 1000:
        return upload_mbps
    scaled = upload_mbps * speed_mbps / 1000
    return int(scaled) if float(scaled).is_integer() else scaled


def route_options(options: Iperf3Options, route: RouteEntry) -> Iperf3Options:
    """The run's iperf3 options with the route's warm-up where that is longer.

    iperf3's omit exists to leave slow start out of the figure.  Through a slow cable, slow
    start and the recovery from its losses last longer: the route says how long
    (``routes[].omit_s``), and a run over it never measures before that; a longer omit asked
    for on the command line stays.
    """
    if route.omit_s is None or route.omit_s <= options.omit:
        return options
    return dataclasses.replace(options, omit=route.omit_s)


class RoutingMeasurer(Measurer):
    """Traffic between the two peers of a route, through the board, recorded at once."""

    def __init__(
        self,
        site: Site,
        route: RouteEntry,
        options: Iperf3Options,
        qdisc: str,
        settle: SettleRule | None,
    ) -> None:
        super().__init__(site)
        self.route = route
        self.options = route_options(options, route)
        self.qdisc = qdisc
        self.settle = board_settle(settle, self.inventory, route.board)
        self.board = self.hosts[route.board]
        self.lan_peer = self.hosts[route.lan.peer]
        self.wan_peer = self.hosts[route.wan.peer]
        self.ends = (
            (self.board, route.lan.board_interface),
            (self.board, route.wan.board_interface),
            (self.lan_peer, route.lan.peer_interface),
            (self.wan_peer, route.wan.peer_interface),
        )
        self._probe_plan: ProbePlan | str | None = None

    def load_watch(self) -> LoadWatch:
        """Latency probes from the lan peer to the wan peer, through the board, and the board's
        qdisc backlog, beside one run; the idle probe is taken here, before the load."""
        r = self.route
        if self._probe_plan is None:
            self._probe_plan = choose_probe(self.lan_peer, self.wan_peer, r.wan.peer_address)
        watch = LoadWatch(
            self._probe_plan,
            self.board,
            (r.lan.board_interface, r.wan.board_interface),
            self.qdisc,
            self.options.omit,
            self.options.duration,
        )
        watch.probe_idle()
        return watch

    def _counters(self) -> Counters:
        """Observers' snapshots and the qdisc's counters, all at once."""
        with ThreadPoolExecutor(max_workers=1) as pool:
            qdisc = pool.submit(qdisc_snapshot, self.route, self.board, self.qdisc)
            return self.snapshots(self.ends), qdisc.result()

    def _options(self, sender: RemoteHost, stream_mbps: float | None = None) -> Iperf3Options:
        congestion = self.inventory.hosts[sender.name].tcp_congestion
        rate = None if stream_mbps is None else f"{stream_mbps:g}M"
        return dataclasses.replace(self.options, congestion=congestion, bitrate=rate)

    def _context(
        self, direction: str, duplex: str, target: float = 0, scenario: str = "routing"
    ) -> TrafficContext:
        r = self.route
        board_facts = self.facts[r.board]
        wan_if = board_facts.interfaces.get(r.wan.board_interface)
        return TrafficContext(
            lab=self.inventory.lab,
            scenario=scenario,
            board=r.board,
            model=self.inventory.model_of(r.board),
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
            image=board_facts.image,
            driver=(wan_if.driver or "") if wan_if else "",
            rate_target_mbps=target,
            lan_adapter=r.lan.adapter,
            adapter_bus=r.wan.bus,
        )

    def _limited(self, context: TrafficContext) -> tuple[TrafficContext, float]:
        """The context with the part that limits its path (the slower leg, a bus both legs
        share, the upload's target), and the limit, with the TCP options the peers negotiate."""
        return limited(context, tcp_timestamps=self.tcp_timestamps(self.lan_peer, self.wan_peer))

    def _record(
        self,
        context: TrafficContext,
        run: Iperf3Run,
        limit: float,
        counters: tuple[Counters, Counters],
        latency: LatencyUse,
    ) -> Measurement:
        before, after = counters
        observations = self.observations(self.ends, before[0], after[0])
        test_id = f"{self.test_id}#{context.direction}"
        measured = measurement_from_iperf3(
            test_id, context, run, limit, self.facts_of(board=self.route.board), observations
        )
        assert isinstance(measured.detail, TcpDetail)
        qdisc = tuple(qdisc_use(e.interface, e.delta) for e in qdisc_evidence(before[1], after[1]))
        detail = dataclasses.replace(
            measured.detail,
            qdisc=qdisc,
            route=RouteUse(self.route.lan.name, self.route.wan.name, self.route.board),
            min_max_stream_ratio=min_max_ratio(measured.detail.per_stream_mbps),
            latency=latency,
        )
        return self.record(dataclasses.replace(measured, detail=detail))

    @taking_turns
    def download(self, scenario: str = "routing") -> Measurement:
        """The wan peer sends to the lan peer through the board (the seed's 10-stream download).

        ``scenario`` names what else was going on (``routing+disk-io`` in the contention case).
        """
        r = self.route
        context, limit = self._limited(self._context(DOWNLOAD, "half", scenario=scenario))
        lines = self.decision_lines(context, limit)
        adaptive = AdaptiveStop(self.settle, r.lan.peer_interface, lines) if self.settle else None
        watch = self.load_watch()
        with released_on_error(watch):
            before = self._counters()
        with watch:
            run = run_iperf3(
                self.wan_peer,
                self.lan_peer,
                r.lan.peer_address,
                self._options(self.wan_peer),
                adaptive,
                self.progress("download"),
            )
        counters = (before, self._counters())
        return self._record(context, run, limit, counters, watch.result())

    def scaled_target(self, upload_mbps: float) -> float:
        """The seed's upload target for this route (see :func:`scale_upload_target`)."""
        return scale_upload_target(upload_mbps, min(self.route.lan.speed_mbps, self.route.wan.speed_mbps))

    @taking_turns
    def download_while_uploading(self, nominal_mbps: float) -> tuple[Measurement, Measurement]:
        """Download at full speed while the lan peer uploads at ``nominal_mbps`` in total (0 =
        unlimited; scaled by :meth:`scaled_target` on a cable slower than GbE); returns
        (download, upload), each with its actual figure."""
        r = self.route
        upload_mbps = self.scaled_target(nominal_mbps)
        per_stream = upload_mbps / self.options.streams if upload_mbps else None
        down_context, down_limit = self._limited(self._context(DOWNLOAD, "full", upload_mbps))
        up_context, up_limit = self._limited(self._context(UPLOAD, "full", upload_mbps))
        lines = (self.decision_lines(down_context, down_limit), self.decision_lines(up_context, up_limit))
        watch = self.load_watch()
        with released_on_error(watch):
            before = self._counters()
        with watch:
            down, up = run_iperf3_both_ways(
                self.wan_peer,
                self.lan_peer,
                r.wan.peer_address,
                r.lan.peer_address,
                self._options(self.wan_peer),
                self._options(self.lan_peer, per_stream),
                (self.settle, r.wan.peer_interface, r.lan.peer_interface) if self.settle else None,
                self.progress(f"download, upload at {upload_mbps or 'full'} Mbit/s"),
                lines,
            )
        counters = (before, self._counters())
        latency = watch.result()  # one probe saw both directions' queues at once
        return (
            self._record(down_context, down, down_limit, counters, latency),
            self._record(up_context, up, up_limit, counters, latency),
        )
