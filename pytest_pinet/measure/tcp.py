"""TCP goodput over one link: half duplex either way, and full duplex with an optional
throttle on the peer (the seed's PC at 40 Mbit/s x 10 while the board sends)."""

from __future__ import annotations

import dataclasses

from ..host.remote import RemoteHost
from ..judge.linerate import tcp_goodput_limit
from ..model import Measurement, Observation, TrafficContext
from ..model.lab import LinkEntry
from ..traffic.adaptive import SettleRule
from ..traffic.iperf3_measurement import measurement_from_iperf3
from ..traffic.iperf3_runner import AdaptiveStop, Iperf3Options, Iperf3Run, run_iperf3, run_iperf3_both_ways
from .base import Measurer, Site, link_context

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
    ) -> None:
        super().__init__(site)
        self.link = link
        self.options = options
        self.profile = profile
        self.settle = settle
        self.board = self.hosts[link.board]
        self.peer = self.hosts[link.peer]
        self.ends = ((self.board, link.board_interface), (self.peer, link.peer_interface))

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
        self, context: TrafficContext, run: Iperf3Run, limit: float, observations: tuple[Observation, ...]
    ) -> Measurement:
        test_id = self.test_id + (f"#{context.direction}" if context.duplex == "full" else "")
        facts = self.facts_of(board=self.link.board, peer=self.link.peer)
        return self.record(measurement_from_iperf3(test_id, context, run, limit, facts, observations))

    def _limit(self) -> float:
        """The line-rate limit of the link with the TCP options its two ends negotiate."""
        link = self.link
        return tcp_goodput_limit(
            link.speed_mbps, link.mtu, timestamps=self.tcp_timestamps(self.board, self.peer)
        )

    def half_duplex(self, direction: str, scenario: str = "ethernet") -> Measurement:
        """One end sends, the other receives."""
        if direction not in DIRECTIONS:
            raise ValueError(f"direction must be one of {DIRECTIONS}, got {direction!r}")
        link = self.link
        if direction == "board->peer":
            sender, receiver, address, watch = self.board, self.peer, link.peer_address, link.peer_interface
        else:
            sender, receiver, address, watch = self.peer, self.board, link.board_address, link.board_interface
        context = self._context(direction, scenario, "half")
        limit = self._limit()
        adaptive = (
            AdaptiveStop(self.settle, watch, self.decision_lines(context, limit)) if self.settle else None
        )
        before = self.snapshots(self.ends)
        result = run_iperf3(
            sender, receiver, address, self._options(sender), adaptive, self.progress(direction)
        )
        observations = self.observations(self.ends, before, self.snapshots(self.ends))
        return self._record(context, result, limit, observations)

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
        limit = self._limit()
        forward_context = self._context("board->peer", scenario, "full")
        back_context = dataclasses.replace(
            self._context("peer->board", scenario, "full"), rate_target_mbps=target
        )
        back_limit = min(limit, target) if target else limit
        lines = (self.decision_lines(forward_context, limit), self.decision_lines(back_context, back_limit))
        before = self.snapshots(self.ends)
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
        observations = self.observations(self.ends, before, self.snapshots(self.ends))
        # Upper bound: the ACKs of the other direction cost little with stretch ACKs (the
        # virtual lab measured one ACK per ~33 segments); see LinkModel for the ACK model.
        return (
            self._record(forward_context, forward, limit, observations),
            self._record(back_context, backward, back_limit, observations),
        )
