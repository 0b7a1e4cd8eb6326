"""UDP packet rates from the board: ``sendto``, ``sendmmsg`` or raw layer-2 frames, over the
link under test or over the board's loopback (the seed's way to tell the driver's cost from
the stack's).  The figure is what the *receiver's* kernel counted, never what was sent."""

from __future__ import annotations

import time
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import Any

from ..errors import LabFault
from ..host.remote import RemoteHost
from ..model import Measurement, ReceiverCounters, TrafficContext, UdpDetail
from ..model.context import LOOPBACK
from ..model.lab import LinkEntry
from ..record.sweep_charts import udp_chart
from ..traffic.udpgen import UdpGenOptions, UdpGenRun, ensure_udpgen, read_receiver, run_udpgen
from .base import Measurer, Site, limited, link_context, taking_turns

PAYLOAD = 1472  # the seed's: the largest that fits an untagged 1500-byte frame
# The receiver's window: after the shaper's burst and the sender's start-up, ending before
# the sender stops (SSH start-up and the remote timer make its end a little uncertain).
WARMUP_S = 1.0
END_MARGIN_S = 0.4
MIN_WINDOW_S = 1.0


class UdpMeasurer(Measurer):
    """UDP runs from the board; every result recorded at once."""

    def __init__(
        self,
        site: Site,
        link: LinkEntry,
        profile: str,
        duration: float,
        payload: int = PAYLOAD,
    ) -> None:
        super().__init__(site)
        self.link = link
        self.profile = profile
        self.duration = duration
        self.payload = payload  # 18 bytes: minimum-size (64-byte) frames
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
            return UdpGenOptions(mode, "127.0.0.1", threads, self.payload, self.duration)
        link = self.link
        if mode != "raw":
            return UdpGenOptions(mode, link.peer_address, threads, self.payload, self.duration)
        mac = self.peer.check(
            ["cat", self.peer.platform.interface_file(link.peer_interface, "address")], timeout=15
        ).strip()
        return UdpGenOptions(
            mode,
            link.peer_address,
            threads,
            self.payload,
            self.duration,
            interface=link.board_interface,
            src=link.board_address,
            dest_mac=mac,
        )

    @taking_turns
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
        ensure_udpgen(self.board)  # built before the clock starts, never inside the window
        _, before = read_receiver(receiver, interface)
        started = time.time()
        with ThreadPoolExecutor(max_workers=1) as pool:
            sending = pool.submit(run_udpgen, self.board, options)
            window = self._window(receiver, interface, started, sending)
            sent = sending.result()
        finished = time.time()
        _, after = read_receiver(receiver, interface)
        return self._record(
            self._context(mode, path, threads), sent, after - before, window, started, finished
        )

    def _window(
        self, receiver: RemoteHost, interface: str, started: float, sending: Future[UdpGenRun]
    ) -> Window | None:
        """The receiver's counters at two moments of its own clock while the sender is at
        full speed: after a warm-up and shortly before the end.

        Counting the whole run would credit the link with the shaper's initial burst (1 MiB
        at once) and with what its queue delivers after the sender stopped: 0.17 % more than
        the wire carries in a 5 s run.  ``None`` when the run is too short for a window, the
        sender ended before the second reading or a reading failed: the whole-run count is
        then the figure.
        """
        first_at, last_at = started + WARMUP_S, started + self.duration - END_MARGIN_S
        if last_at - first_at < MIN_WINDOW_S:
            return None
        readings = []
        for moment in (first_at, last_at):
            wait([sending], timeout=max(0.0, moment - time.time()))
            if sending.done():
                return None
            try:
                readings.append(read_receiver(receiver, interface))
            except LabFault:
                # The whole-run count still stands; a failed reading must not lose the run.
                return None
        (t1, c1), (t2, c2) = readings
        if sending.done() or t2 <= t1:
            return None
        return Window(t2 - t1, c2 - c1)

    def _record(
        self,
        context: TrafficContext,
        sent: UdpGenRun,
        arrived: ReceiverCounters,
        window: Window | None,
        started: float,
        finished: float,
    ) -> Measurement:
        seconds = sent.seconds or 1.0
        rate = window.counters.datagrams / window.seconds if window else arrived.datagrams / seconds
        context, limit = limited(context, payload_bytes=self.payload)  # frames a second, the bus
        detail = UdpDetail(
            mode=context.scenario.removeprefix("udp-"),
            threads=context.streams,
            sent_mbps=sent.bytes * 8 / seconds / 1e6,
            sent_pps=sent.pps,
            received_pps=rate,
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
            goodput_mbps=rate * self.payload * 8 / 1e6,
            limit_mbps=limit,
            started=started,
            finished=finished,
            detail=detail,
            interval_mbps=tuple(
                float(i.get("bytes", 0)) * 8 / float(i.get("seconds") or 1) / 1e6 for i in sent.intervals
            ),
            measured_s=window.seconds if window else sent.seconds,
            facts=self.facts_of(board=self.link.board),
            raw={"udpgen": sent.raw},
        )
        return self.record(measurement)


@dataclass(frozen=True)
class Window:
    """What the receiver counted over ``seconds`` of its own clock in the middle of a run."""

    seconds: float
    counters: ReceiverCounters
