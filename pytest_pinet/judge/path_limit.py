"""The limit of a measured path: what its slowest part can carry, from physics.

A figure is judged against what its whole path could carry, not against the cable alone: a Pi
3B+'s GbE port is a USB 2 device (about 300 Mbit/s however fast the cable), a Pi 3B's port is
Fast Ethernet whatever the switch says, an adapter on a USB 2 port shares 480 Mbit/s of bus
with everything else on it, a routed packet crosses two ports, a rate-targeted sender asks for
no more than its target, and UDP is held by the frames a link fits in a second.

:func:`path_limit` takes every part a context names (the cable at its MTU, the board's port,
the bus of an adapter's port, a route's second leg, the sender's target, a disk's bus) and
returns them with the slowest first, each with its reason, from the context and the physics
table (:mod:`..model.board_models`) alone.  The measurers, the verdict, the report, ``pinet
thresholds explain`` and the summary all read the same answer; a model, adapter or link added
to the table changes every limit it touches with no rule edited.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..model.board_models import (
    DISK_OVER_BUS_MBPS,
    ETHERNET_OVER_BUS_MBPS,
    ONE_WAY_BUSES,
    PHYSICS,
    BoardPhysics,
    bus_wire_mbps,
)
from .linerate import IP_HEADER, UDP_HEADER, tcp_goodput_limit, udp_goodput_limit

ROUTED = ("routing", "routing+disk-io")
BUS_WORDS = {
    "usb2": "USB 2 (480 Mbit/s, one direction at a time)",
    "usb3": "USB 3 (5 Gbit/s)",
    "pcie": "a PCIe 2.0 lane",
}
# What a rule may match as ``limited_by``, and what the report calls it.
PARTS = ("cable", "port", *ETHERNET_OVER_BUS_MBPS, "rate-target", "disk-bus")


@dataclass(frozen=True)
class Part:
    """One part of a path and the most payload it carries."""

    name: str  # one of PARTS
    mbps: float
    why: str


@dataclass(frozen=True)
class PathLimit:
    """Every part of a path that limits it, the slowest first (none: nothing limits it, as
    over loopback or on a disk whose bus is not known)."""

    parts: tuple[Part, ...]

    @property
    def mbps(self) -> float:
        """The path's limit; 0.0 where no part limits it (judged as "no limit")."""
        return self.parts[0].mbps if self.parts else 0.0

    @property
    def part(self) -> str:
        """The name of the part that sets the limit ("" when none does)."""
        return self.parts[0].name if self.parts else ""

    @property
    def why(self) -> str:
        """Why the limit is what it is, in one line."""
        return self.parts[0].why if self.parts else "no part of this path limits it"


def path_limit(
    context: Mapping[str, Any], *, tcp_timestamps: bool = True, payload_bytes: int | None = None
) -> PathLimit:
    """The limit of the path ``context`` describes: its parts, the slowest first.

    ``tcp_timestamps``: whether the two ends negotiated TCP timestamps (12 bytes of every
    segment); ``payload_bytes``: a UDP datagram's payload (default: a full frame's).
    Raises ValueError for a context no link could have (an MTU outside IP's range)."""
    protocol = str(context.get("protocol") or "TCP")
    if protocol == "block":
        parts = _disk(context)
    elif str(context.get("direction", "")) == "board->board":  # loopback: no wire, no bus
        parts = _target(context)
    else:
        carry = _Payload(protocol, int(context.get("mtu") or 0), tcp_timestamps, payload_bytes)
        parts = [*_cable(context, carry), *_board(context, carry), *_target(context)]
    return PathLimit(tuple(sorted(parts, key=lambda part: part.mbps)))


class _Payload:
    """What a port of some speed carries of the measured protocol at the context's MTU."""

    def __init__(self, protocol: str, mtu: int, timestamps: bool, payload_bytes: int | None) -> None:
        self.protocol, self.mtu, self.timestamps = protocol, mtu, timestamps
        self.payload = payload_bytes or (mtu - IP_HEADER[4] - UDP_HEADER)

    def __call__(self, speed_mbps: float) -> float:
        if self.protocol == "UDP":
            return udp_goodput_limit(speed_mbps, self.mtu, self.payload)
        return tcp_goodput_limit(speed_mbps, self.mtu, timestamps=self.timestamps)


def _cable(context: Mapping[str, Any], carry: _Payload) -> list[Part]:
    speed = float(context.get("link_speed_mbps") or 0)
    if speed <= 0 or carry.mtu <= 0:
        return []
    mbps = carry(speed)
    return [
        Part("cable", mbps, f"the {speed:g} Mbit/s cable at MTU {carry.mtu}: {mbps:.1f} Mbit/s of payload")
    ]


def _legs(context: Mapping[str, Any]) -> list[str]:
    """The board's ports a packet crosses, as the context names them: a route's LAN leg and
    its WAN adapter, else the link's one port.  A context that names no port is taken through
    the built-in one (a USB adapter's scenario through an adapter): what its scenario measures."""
    scenario = str(context.get("scenario", ""))
    named = [str(context.get(key) or "") for key in ("lan_adapter", "adapter")] if scenario in ROUTED else []
    legs = [leg for leg in named if leg] or [str(context.get("adapter") or "")]
    default = "usb adapter" if scenario == "usb-adapter" else "builtin"
    return [leg or default for leg in legs]


def _board(context: Mapping[str, Any], carry: _Payload) -> list[Part]:
    """The board's own ports and the buses they hang on, for a model the table knows."""
    model = str(context.get("model") or "")
    physics = PHYSICS.get(model)
    if physics is None:
        return []
    parts: list[Part] = []
    buses: Counter[str] = Counter()
    for leg in _legs(context):
        if leg == "builtin":
            parts += _builtin_port(model, physics, context, carry)
            if physics.builtin_attach in ETHERNET_OVER_BUS_MBPS:
                buses[physics.builtin_attach] += 1
        else:
            buses[str(context.get("adapter_bus") or physics.usb_bus)] += 1
    full = str(context.get("duplex", "")) == "full"
    for bus, crossings in buses.items():
        if bus not in ETHERNET_OVER_BUS_MBPS:
            continue
        # Every crossing of a packet costs the bus its wire time; a two-way bus carries each
        # direction apart, so only a route's two crossings both ways share one direction of
        # it.  Both directions of a full duplex share a one-way bus too, but not evenly: each
        # may take most of it, so its limit stays the whole bus (the floor is the share's).
        share = crossings if bus in ONE_WAY_BUSES else (2 if full and crossings > 1 else 1)
        mbps = carry(bus_wire_mbps(bus) / share)
        parts.append(Part(bus, mbps, _bus_why(model, physics, bus, mbps, crossings, full)))
    return parts


def _builtin_port(
    model: str, physics: BoardPhysics, context: Mapping[str, Any], carry: _Payload
) -> list[Part]:
    cable = float(context.get("link_speed_mbps") or 0)
    port = physics.builtin_mbps
    if not port or carry.mtu <= 0 or (cable and port >= cable):
        return []
    mbps = carry(port)
    chip = f" ({physics.builtin_chip})" if physics.builtin_chip else ""
    return [
        Part(
            "port", mbps, f"the {model}'s built-in port{chip} is {port} Mbit/s: {mbps:.1f} Mbit/s of payload"
        )
    ]


def _bus_why(model: str, physics: BoardPhysics, bus: str, mbps: float, crossings: int, full: bool) -> str:
    what = (
        f"the {model}'s GbE port is a {physics.builtin_chip or 'USB device'} behind its USB 2 hub"
        if bus == physics.builtin_attach and bus == "usb2" and physics.builtin_chip
        else f"the adapter's port on the {model} is {BUS_WORDS[bus]}"
    )
    shared = []
    if crossings > 1:
        shared.append("a routed packet crosses it twice")
    if full and bus in ONE_WAY_BUSES:
        shared.append("both directions share it, each as much as the other leaves")
    how = f" ({'; '.join(shared)})" if shared else ""
    carried = f"{ETHERNET_OVER_BUS_MBPS[bus]:g} Mbit/s of TCP payload in all"
    return f"{what}: {carried}{how}, {mbps:.1f} for this traffic"


def _target(context: Mapping[str, Any]) -> list[Part]:
    """The sender's own target.  A route's full-duplex contexts both carry the upload's target
    (it names the pair), so only the upload is held to it, never the download beside it."""
    target = float(context.get("rate_target_mbps") or 0)
    routed_download = str(context.get("scenario", "")) in ROUTED and context.get("direction") != "upload"
    if target <= 0 or routed_download:
        return []
    return [Part("rate-target", target, f"the sender's rate target (iperf3 -b): {target:g} Mbit/s in all")]


def _disk(context: Mapping[str, Any]) -> list[Part]:
    bus = str(context.get("adapter") or "")
    physics = PHYSICS.get(str(context.get("model") or ""))
    if bus == "usb" and physics is not None:
        bus = physics.usb_bus
    if bus not in DISK_OVER_BUS_MBPS:
        return []
    mbps = DISK_OVER_BUS_MBPS[bus]
    return [Part("disk-bus", mbps, f"the disk is on {BUS_WORDS[bus]}: at most {mbps:g} Mbit/s of data")]
