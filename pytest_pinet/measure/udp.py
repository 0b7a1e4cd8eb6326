"""UDP packet rates from the board: ``sendto``, ``sendmmsg`` or raw layer-2 frames, over the
link under test or over the board's loopback (the seed's way to tell the driver's cost from
the stack's).  The figure is what the *receiver's* kernel counted, never what was sent."""

from __future__ import annotations

import time
from typing import Any

from ..judge.linerate import udp_goodput_limit
from ..lab.inventory import LinkEntry
from ..model import Measurement, ReceiverCounters, TrafficContext, UdpDetail
from ..record.sweep_charts import udp_chart
from ..traffic.udpgen import UdpGenOptions, UdpGenRun, read_receiver, run_udpgen
from .base import Measurer, Site, link_context

LOOPBACK = "loopback"
PAYLOAD = 1472  # the seed's: the largest that fits an untagged 1500-byte frame


class UdpMeasurer(Measurer):
    """UDP runs from the board; every result recorded at once."""

    def __init__(
        self,
        site: Site,
        link: LinkEntry,
        profile: str,
        duration: float,
    ) -> None:
        super().__init__(site)
        self.link = link
        self.profile = profile
        self.duration = duration
        self.board = self.hosts[link.board]
        self.peer = self.hosts[link.peer]

    @property
    def cores(self) -> int:
        """The board's CPU count: the sweep goes from one thread to this many."""
        return max(1, self.facts[self.link.board].cpus or 1)

    def _context(self, mode: str, path: str, threads: int) -> TrafficContext:
        # Over loopback the board talks to itself: no cable, adapter or driver is involved.
        loopback: dict[str, Any] = {}
        if path == LOOPBACK:
            loopback = {
                "peer": self.link.board,
                "link": LOOPBACK,
                "adapter": "",
                "link_speed_mbps": 0,
                "driver": "",
            }
        return link_context(
            self.inventory,
            self.facts,
            self.link,
            scenario=f"udp-{mode}",
            direction="board->board" if path == LOOPBACK else "board->peer",
            duplex="half",
            streams=threads,
            duration_s=int(self.duration),
            omit_s=0,
            protocol="UDP",
            profile=self.profile,
            **loopback,
        )

    def _options(self, mode: str, path: str, threads: int) -> UdpGenOptions:
        if path == LOOPBACK:
            return UdpGenOptions(mode, "127.0.0.1", threads, PAYLOAD, self.duration)
        link = self.link
        if mode != "raw":
            return UdpGenOptions(mode, link.peer_address, threads, PAYLOAD, self.duration)
        mac = self.peer.check(
            ["cat", self.peer.platform.interface_file(link.peer_interface, "address")], timeout=15
        ).strip()
        return UdpGenOptions(
            mode,
            link.peer_address,
            threads,
            PAYLOAD,
            self.duration,
            interface=link.board_interface,
            src=link.board_address,
            dest_mac=mac,
        )

    def sweep(self, mode: str, path: str) -> list[Measurement]:
        """One run per thread count from 1 to the board's cores, with the seed's chart."""
        runs = [self.run(mode, path, threads) for threads in range(1, self.cores + 1)]
        self.recorder.attach_chart(udp_chart(runs), f"{mode} over {path}: rate and CPU per thread count")
        return runs

    def run(self, mode: str, path: str, threads: int) -> Measurement:
        """One run: ``path`` is ``link`` or ``loopback``."""
        options = self._options(mode, path, threads)
        receiver, interface = (
            (self.board, "lo") if path == LOOPBACK else (self.peer, self.link.peer_interface)
        )
        before = read_receiver(receiver, interface)
        started = time.time()
        sent = run_udpgen(self.board, options)
        finished = time.time()
        arrived = read_receiver(receiver, interface) - before
        return self._record(self._context(mode, path, threads), sent, arrived, started, finished)

    def _record(
        self,
        context: TrafficContext,
        sent: UdpGenRun,
        arrived: ReceiverCounters,
        started: float,
        finished: float,
    ) -> Measurement:
        seconds = sent.seconds or 1.0
        detail = UdpDetail(
            mode=context.scenario.removeprefix("udp-"),
            threads=context.streams,
            sent_mbps=sent.bytes * 8 / seconds / 1e6,
            sent_pps=sent.pps,
            received_pps=arrived.datagrams / seconds,
            loss_pct=100.0 * (1 - arrived.datagrams / sent.packets) if sent.packets else None,
            generator_cpu_pct=sent.cpu_percent,
            system_busy_pct=sent.sys_busy_pct,
            enobufs=sent.enobufs,
            send_errors=sent.errors,
            receiver=arrived,
        )
        measurement = Measurement(
            test_id=f"{self.test_id}#{context.streams}",
            context=context,
            goodput_mbps=arrived.datagrams * PAYLOAD * 8 / seconds / 1e6,
            limit_mbps=udp_goodput_limit(context.link_speed_mbps, context.mtu, PAYLOAD),
            started=started,
            finished=finished,
            detail=detail,
            interval_mbps=tuple(
                float(i.get("bytes", 0)) * 8 / float(i.get("seconds") or 1) / 1e6 for i in sent.intervals
            ),
            measured_s=sent.seconds,
            facts=self.facts_of(board=self.link.board),
            raw={"udpgen": sent.raw},
        )
        return self.record(measurement)
