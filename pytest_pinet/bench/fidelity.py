"""Fidelity of the emulated cable: what it carries against what Ethernet carries.

The namespace lab is only worth trusting if it is never faster than the wire it imitates and
not much slower.  Targets (issue 18), as medians of repeated runs: TCP goodput within
[-0.5 %, +0.05 %] of the line-rate limit with TCP timestamps on (941.5 Mbit/s) and off
(949.3), UDP with 1472-byte payloads within the same band of 81,274 frames/s; minimum-size
frames are reported against 1,488,095 frames/s beside the sender's CPU, because there a
process on this machine, not the emulated wire, is the limit.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..errors import LabFault
from ..host.remote import RemoteHost
from ..judge.linerate import LinkModel, tcp_goodput_limit
from ..lab.inventory import Inventory
from ..lab.traffic_turn import traffic_turn
from ..measure import UdpMeasurer
from ..traffic.iperf3_runner import Iperf3Options, run_iperf3
from .recording import bench_site

# Within [-0.5 %, +0.05 %] of the limit: a little slower than physics is timer and ACK cost,
# faster is a cable that does not exist.
LOW_PCT, HIGH_PCT = -0.5, 0.05
MIN_PAYLOAD = 18  # 18 + UDP 8 + IP 20 + Ethernet 14 + FCS 4 = the 64-byte minimum frame


@dataclass(frozen=True)
class Deviation:
    """Samples of one fidelity figure, in percent from its limit, and the limit itself."""

    name: str
    limit: float
    unit: str
    values: list[float]
    deviations_pct: list[float]

    @property
    def met(self) -> bool:
        """The median lies in the band."""
        return bool(self.deviations_pct) and LOW_PCT <= statistics.median(self.deviations_pct) <= HIGH_PCT


def set_timestamps(hosts: list[RemoteHost], on: bool) -> None:
    """``net.ipv4.tcp_timestamps`` on both ends (root: the bench lab is ours)."""
    for host in hosts:
        host.check(host.platform.sysctl_write("net.ipv4.tcp_timestamps", "1" if on else "0"), root=True)


def tcp_fidelity(
    inventory: Inventory,
    hosts: dict[str, RemoteHost],
    runs: int,
    duration: int,
    say: Callable[[str], None],
    not_measured: list[str],
) -> list[Deviation]:
    """10 cubic streams each way, ``runs`` times, with timestamps on and then off."""
    link = inventory.link("eth")
    ends = [hosts[link.board], hosts[link.peer]]
    found = []
    try:
        for timestamps in (True, False):
            set_timestamps(ends, timestamps)
            limit = tcp_goodput_limit(link.speed_mbps, link.mtu, timestamps=timestamps)
            values = []
            for number in range(runs):
                for sender, receiver, address in (
                    (link.board, link.peer, link.peer_address),
                    (link.peer, link.board, link.board_address),
                ):
                    label = f"TCP timestamps {'on' if timestamps else 'off'} {sender}->{receiver}"
                    say(f"fidelity: {label}, run {number + 1} of {runs} ({duration} s)")
                    options = Iperf3Options(
                        duration=duration, omit=2, congestion=inventory.hosts[sender].tcp_congestion
                    )
                    try:
                        with traffic_turn(inventory.traffic_turn):
                            result = run_iperf3(hosts[sender], hosts[receiver], address, options).result
                    except LabFault as fault:
                        not_measured.append(f"fidelity {label}: lab fault: {fault}")
                        continue
                    if result.goodput_mbps is None:  # a missing figure is not a 0 Mbit/s sample
                        not_measured.append(f"fidelity {label}: iperf3 reported no goodput")
                        continue
                    values.append(result.goodput_mbps)
                    say(f"  {result.goodput_mbps:.2f} Mbit/s ({_pct(result.goodput_mbps, limit):+.3f} %)")
            name = f"TCP goodput, timestamps {'on' if timestamps else 'off'}"
            found.append(Deviation(name, limit, "Mbit/s", values, [_pct(v, limit) for v in values]))
    finally:
        set_timestamps(ends, True)
    return found


def udp_fidelity(
    inventory: Inventory,
    hosts: dict[str, RemoteHost],
    root: Path,
    runs: int,
    say: Callable[[str], None],
    not_measured: list[str],
) -> tuple[Deviation | None, dict[str, float]]:
    """1472-byte payloads (``sendmmsg``, one thread) against 81,274 frames/s, and one run of
    minimum-size frames against 1,488,095 frames/s with the generator's CPU beside it."""
    link = inventory.link("eth")
    site = bench_site(inventory, hosts, root, "udp")
    model = LinkModel(link.speed_mbps, link.mtu)
    full_limit = model.frames_per_second()
    rates = []
    for number in range(runs):
        say(f"fidelity: UDP 1472-byte payloads, run {number + 1} of {runs} (5 s)")
        try:
            measured = UdpMeasurer(site, link, "stock", 5.0).run("sendmmsg", "link", 1)
        except LabFault as fault:
            not_measured.append(f"fidelity UDP: lab fault: {fault}")
            continue
        assert measured.detail.kind == "udp"
        rates.append(measured.detail.received_pps)
        say(f"  {rates[-1]:,.0f} frames/s ({_pct(rates[-1], full_limit):+.3f} %)")
    udp = (
        Deviation(
            "UDP 1472-byte frames/s", full_limit, "frames/s", rates, [_pct(r, full_limit) for r in rates]
        )
        if rates
        else None
    )
    small: dict[str, float] = {}
    say("fidelity: UDP minimum-size frames (18-byte payloads, 5 s)")
    try:
        tiny = UdpMeasurer(site, link, "stock", 5.0, payload=MIN_PAYLOAD).run("sendmmsg", "link", 1)
    except LabFault as fault:
        not_measured.append(f"fidelity minimum frames: lab fault: {fault}")
        return udp, small
    assert tiny.detail.kind == "udp"
    small = {
        "limit_fps": model.frames_per_second(MIN_PAYLOAD + 28),
        "received_fps": tiny.detail.received_pps,
        "sent_fps": tiny.detail.sent_pps,
        "generator_cpu_pct": tiny.detail.generator_cpu_pct or 0.0,
    }
    say(f"  {small['received_fps']:,.0f} frames/s, generator at {small['generator_cpu_pct']:.0f} % of a core")
    return udp, small


def _pct(value: float, limit: float) -> float:
    return 100.0 * (value - limit) / limit
