"""Fixtures of the UDP packet-rate suite: the generator on the board, the counters on the peer.

``measure_udp`` sends with ``sendto``, ``sendmmsg`` or raw layer-2 frames from the board,
over the link under test or over the board's loopback (the seed's way to tell the driver's
cost from the stack's), for a thread count, and records each run as a Measurement whose
goodput is what the *receiver* counted.
"""

from __future__ import annotations

import dataclasses
import time
from typing import Any

import pytest

from .fixtures import FactsCache, link_context, record_and_attach
from .judge.linerate import LinkModel
from .lab.inventory import Inventory, LinkEntry
from .lab.profiles import AppliedProfile
from .lab.remote import RemoteHost
from .measurement import Measurement, TrafficContext
from .record.sweep_charts import attach_chart, udp_chart
from .settings import PinetSettings
from .traffic.udpgen import ReceiverCounters, UdpGenOptions, UdpGenRun, read_receiver, run_udpgen

LOOPBACK = "loopback"
PAYLOAD = 1472  # the seed's: the largest that fits an untagged 1500-byte frame


class UdpMeasurer:
    """UDP runs from the board; every result recorded at once."""

    def __init__(
        self,
        request: pytest.FixtureRequest,
        inventory: Inventory,
        hosts: dict[str, RemoteHost],
        link: LinkEntry,
        facts: FactsCache,
        profile: str,
        duration: float,
    ) -> None:
        self.request = request
        self.inventory = inventory
        self.link = link
        self.facts = facts
        self.profile = profile
        self.duration = duration
        self.board = hosts[link.board]
        self.peer = hosts[link.peer]

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
        mac = self.peer.check(["cat", f"/sys/class/net/{link.peer_interface}/address"], timeout=15).strip()
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
        attach_chart(udp_chart(runs), f"{mode} over {path}: rate and CPU per thread count")
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
        received_pps = arrived.datagrams / seconds
        limit = 0.0
        if context.link_speed_mbps:
            model = LinkModel(context.link_speed_mbps, context.mtu)
            limit = model.frames_per_second(PAYLOAD + 28) * PAYLOAD * 8 / 1e6
        evidence: dict[str, Any] = {
            "mode": context.scenario.removeprefix("udp-"),
            "threads": context.streams,
            "sent_pps": sent.pps,
            "received_pps": received_pps,
            "loss_pct": 100.0 * (1 - arrived.datagrams / sent.packets) if sent.packets else None,
            "generator_cpu_pct": sent.cpu_percent,
            "system_busy_pct": sent.sys_busy_pct,
            "enobufs": sent.enobufs,
            "send_errors": sent.errors,
            "receiver": dataclasses.asdict(arrived),
        }
        measurement = Measurement(
            test_id=f"{self.request.node.nodeid}#{context.streams}",
            context=context,
            goodput_mbps=arrived.datagrams * PAYLOAD * 8 / seconds / 1e6,
            sent_mbps=sent.bytes * 8 / seconds / 1e6,
            retransmits=None,
            per_stream_mbps=(),
            interval_mbps=tuple(
                float(i.get("bytes", 0)) * 8 / float(i.get("seconds") or 1) / 1e6 for i in sent.intervals
            ),
            cpu_sender_percent=sent.cpu_percent,
            cpu_receiver_percent=None,
            limit_mbps=limit,
            iperf3_version=None,
            started=started,
            finished=finished,
            measured_s=sent.seconds,
            facts={"board": dataclasses.asdict(self.facts[self.link.board])},
            raw={"udpgen": sent.raw},
            evidence=evidence,
        )
        return record_and_attach(self.request.config, measurement)


@pytest.fixture
def measure_udp(
    request: pytest.FixtureRequest,
    pinet_inventory: Inventory,
    pinet_hosts: dict[str, RemoteHost],
    link_under_test: LinkEntry,
    host_facts: FactsCache,
    profile: AppliedProfile,
    pinet_settings: PinetSettings,
) -> UdpMeasurer:
    """UDP packet-rate runs from the board of ``link_under_test`` under ``profile``."""
    return UdpMeasurer(
        request,
        pinet_inventory,
        pinet_hosts,
        link_under_test,
        host_facts,
        profile.profile.name,
        float(pinet_settings.udp_duration),
    )
