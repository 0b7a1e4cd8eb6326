"""TCP goodput over one link: half duplex either way, and full duplex with an optional
throttle on the peer (the seed's PC at 40 Mbit/s x 10 while the board sends).

With ``latency`` on, every run also carries its latency under load, taken as the routing
suite takes it (:class:`..traffic.load_watch.LoadWatch`): the peer probes the board's address
idle and after the warm-up, the sending end's root qdisc backlog is sampled once a second,
and its counters (drops, overlimits, requeues) are read before and after.  A host that
cannot report a qdisc (a BSD) says so with the reason, never with zeros.
"""

from __future__ import annotations

import dataclasses
import logging
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager, nullcontext
from typing import Any

from ..errors import LabFault
from ..host.qdisc_stats import ROOT, QdiscStats, read_qdisc_stats, total_of_kind
from ..host.remote import RemoteHost
from ..model import Measurement, Observation, QdiscUse, TcpDetail, TrafficContext
from ..model.lab import LinkEntry
from ..model.latency import LatencyUse
from ..traffic.adaptive import SettleRule
from ..traffic.iperf3_measurement import measurement_from_iperf3
from ..traffic.iperf3_runner import AdaptiveStop, Iperf3Options, Iperf3Run, run_iperf3, run_iperf3_both_ways
from ..traffic.latency_probe import ProbePlan, choose_probe
from ..traffic.load_watch import LoadWatch, released_on_error
from ..traffic.observers import Snapshot
from .base import End, Measurer, Site, board_settle, limited, link_context, qdisc_use, taking_turns

log = logging.getLogger(__name__)

DIRECTIONS = ("board->peer", "peer->board")


class TcpMeasurer(Measurer):
    """Takes TCP measurements over one link, with facts and observers, recording each at once."""

    def __init__(
        self,
        site: Site,
        link: LinkEntry,
        options: Iperf3Options,
        profile: str = "stock",
        settle: SettleRule | None = None,
        latency: bool = False,
    ) -> None:
        super().__init__(site)
        self.link = link
        self.options = options
        self.profile = profile
        self.settle = board_settle(settle, self.inventory, link.board)
        self.latency = latency
        self.board = self.hosts[link.board]
        self.peer = self.hosts[link.peer]
        self.ends = ((self.board, link.board_interface), (self.peer, link.peer_interface))
        self._probe_plan: ProbePlan | str | None = None

    def load_watch(self, queue: End) -> LoadWatch | None:
        """Latency probes from the peer to the board's address over the link, and the backlog
        of ``queue`` (the sending end's root qdisc: where the load waits), beside one run; the
        idle probe is taken here.  None when this measurer does not probe."""
        if not self.latency:
            return None
        if self._probe_plan is None:
            self._probe_plan = choose_probe(self.peer, self.board, self.link.board_address)
        host, interface = queue
        options = self.options
        watch = LoadWatch(self._probe_plan, host, (interface,), ROOT, options.omit, options.duration)
        watch.probe_idle()
        return watch

    def _queues(self, ends: tuple[End, ...]) -> dict[str, QdiscStats]:
        """The root qdisc counters of ``ends`` (Linux hosts only: a BSD's are reported as not
        reported by the watch, never as zeros); empty when this measurer does not probe."""
        found: dict[str, QdiscStats] = {}
        for host, interface in ends if self.latency else ():
            if host.platform.name != "linux":
                continue
            try:
                found[f"{host.name}:{interface}"] = total_of_kind(read_qdisc_stats(host, interface), ROOT)
            except LabFault as fault:  # no tc on a peer: its counters are missing, never zeros
                log.warning("qdisc counters of %s on %s not read: %s", interface, host.name, fault)
        return found

    def _counters(self, queue_ends: tuple[End, ...]) -> tuple[dict[str, QdiscStats], list[Snapshot]]:
        """The root qdisc counters of ``queue_ends`` and the observers' snapshots of both ends,
        read at once (each is a round trip per host; on the QEMU board about 0.2 s)."""
        if not self.latency:
            return {}, self.snapshots(self.ends)
        with ThreadPoolExecutor(max_workers=1) as pool:
            queues = pool.submit(self._queues, queue_ends)
            snapshots = self.snapshots(self.ends)
            return queues.result(), snapshots

    @staticmethod
    def _watching(watch: LoadWatch | None) -> AbstractContextManager[Any]:
        return watch if watch is not None else nullcontext()

    def _options(self, sender: RemoteHost) -> Iperf3Options:
        congestion = self.inventory.hosts[sender.name].tcp_congestion
        return dataclasses.replace(self.options, congestion=congestion)

    def _context(self, direction: str, scenario: str, duplex: str) -> TrafficContext:
        return link_context(
            self.inventory,
            self.facts,
            self.link,
            scenario=scenario,
            direction=direction,
            duplex=duplex,
            streams=self.options.streams,
            duration_s=self.options.duration,
            omit_s=self.options.omit,
            profile=self.profile,
        )

    def _record(
        self,
        context: TrafficContext,
        run: Iperf3Run,
        limit: float,
        observations: tuple[Observation, ...],
        latency: tuple[LatencyUse | None, tuple[QdiscUse, ...]] = (None, ()),
    ) -> Measurement:
        test_id = self.test_id + (f"#{context.direction}" if context.duplex == "full" else "")
        facts = self.facts_of(board=self.link.board, peer=self.link.peer)
        measured = measurement_from_iperf3(test_id, context, run, limit, facts, observations)
        use, qdisc = latency
        if use is not None and isinstance(measured.detail, TcpDetail):
            detail = dataclasses.replace(measured.detail, latency=use, qdisc=qdisc)
            measured = dataclasses.replace(measured, detail=detail)
        return self.record(measured)

    def _telemetry(
        self, watch: LoadWatch | None, before: dict[str, QdiscStats], after: dict[str, QdiscStats]
    ) -> tuple[LatencyUse | None, tuple[QdiscUse, ...]]:
        """The watch's figures and each queue's counters over the run."""
        if watch is None:
            return None, ()
        used = tuple(qdisc_use(name, after[name] - before[name]) for name in after if name in before)
        return watch.result(), used

    def _limited(self, context: TrafficContext) -> tuple[TrafficContext, float]:
        """The context with the part that limits its path, and the limit, with the TCP options
        the two ends negotiate (judge.path_limit: the cable, the board's port, the bus)."""
        return limited(context, tcp_timestamps=self.tcp_timestamps(self.board, self.peer))

    @taking_turns
    def half_duplex(self, direction: str, scenario: str = "ethernet") -> Measurement:
        """One end sends, the other receives."""
        if direction not in DIRECTIONS:
            raise ValueError(f"direction must be one of {DIRECTIONS}, got {direction!r}")
        link = self.link
        if direction == "board->peer":
            sender, receiver, address, watch = self.board, self.peer, link.peer_address, link.peer_interface
            queue: End = (self.board, link.board_interface)
        else:
            sender, receiver, address, watch = self.peer, self.board, link.board_address, link.board_interface
            queue = (self.peer, link.peer_interface)
        context, limit = self._limited(self._context(direction, scenario, "half"))
        adaptive = (
            AdaptiveStop(self.settle, watch, self.decision_lines(context, limit)) if self.settle else None
        )
        load_watch = self.load_watch(queue)
        with released_on_error(load_watch):
            queues, before = self._counters((queue,))
        with self._watching(load_watch):
            result = run_iperf3(
                sender, receiver, address, self._options(sender), adaptive, self.progress(direction)
            )
        queues_after, after = self._counters((queue,))
        observations = self.observations(self.ends, before, after)
        telemetry = self._telemetry(load_watch, queues, queues_after)
        return self._record(context, result, limit, observations, telemetry)

    @taking_turns
    def full_duplex(
        self, scenario: str = "ethernet", peer_stream_mbps: int | None = None
    ) -> tuple[Measurement, Measurement]:
        """Both ends send at once; returns (board->peer, peer->board).

        ``peer_stream_mbps`` throttles the peer's streams (iperf3 ``-b`` per stream; the seed
        ran its PC at 40 Mbit/s x 10) to see what the board sends while it also receives.
        """
        link = self.link
        peer_options = self._options(self.peer)
        target = 0
        if peer_stream_mbps is not None:
            peer_options = dataclasses.replace(peer_options, bitrate=f"{peer_stream_mbps}M")
            target = peer_stream_mbps * peer_options.streams
        forward_context, limit = self._limited(
            dataclasses.replace(self._context("board->peer", scenario, "full"), opposite_rate_mbps=target)
        )
        back_context, back_limit = self._limited(
            dataclasses.replace(self._context("peer->board", scenario, "full"), rate_target_mbps=target)
        )
        lines = (self.decision_lines(forward_context, limit), self.decision_lines(back_context, back_limit))
        # Both ends' queues fill; the board's is sampled (the device under test), both counted.
        load_watch = self.load_watch(self.ends[0])
        with released_on_error(load_watch):
            queues, before = self._counters(self.ends)
        with self._watching(load_watch):
            forward, backward = run_iperf3_both_ways(
                self.board,
                self.peer,
                link.board_address,
                link.peer_address,
                self._options(self.board),
                peer_options,
                (self.settle, link.board_interface, link.peer_interface) if self.settle else None,
                self.progress("full duplex"),
                lines,
            )
        queues_after, after = self._counters(self.ends)
        observations = self.observations(self.ends, before, after)
        telemetry = self._telemetry(load_watch, queues, queues_after)  # one probe saw both ways
        # Upper bound: the ACKs of the other direction cost little with stretch ACKs (the
        # virtual lab measured one ACK per ~33 segments); see LinkModel for the ACK model.
        return (
            self._record(forward_context, forward, limit, observations, telemetry),
            self._record(back_context, backward, back_limit, observations, telemetry),
        )
