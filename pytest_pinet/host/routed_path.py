"""Routing through the board: provisioning the path and the qdiscs, and what to measure.

The seed's board forwards between an "internet" PC on one interface and a LAN PC on the
other.  Download is the wan peer sending to the lan peer through the board, upload the
reverse.  Provisioning sets ``ip_forward`` on the board and one host route on each peer
(restored afterwards, like every tunable); the qdisc under test goes on *both* board
interfaces, where the forwarded traffic queues.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..model.lab import RouteEntry
from .net_tunables import HostRoute, Qdisc, Sysctl
from .profiles import AppliedProfile, Profile, apply_steps
from .qdisc_stats import QdiscStats, read_qdisc_stats_of, total_of_kind
from .remote import RemoteHost
from .tunables import Tunable

# The seed's SFQ line is `tc qdisc add dev ethX root handle 1: sfq quantum 1500`.
QDISCS: dict[str, tuple[str, ...]] = {
    "pfifo_fast": ("pfifo_fast",),
    "sfq": ("sfq", "quantum", "1500"),
    "fq_codel": ("fq_codel",),
}
DOWNLOAD = "download"
UPLOAD = "upload"
# The seed's upload targets in Mbit/s; 0 = unlimited.
UPLOAD_TARGETS = (100, 250, 500, 0)


def provision_route(route: RouteEntry, hosts: dict[str, RemoteHost]) -> AppliedProfile:
    """Forwarding on the board, a host route on each peer to the other through the board."""
    lan, wan = route.lan, route.wan
    steps: list[tuple[Tunable, RemoteHost]] = [
        (Sysctl("net.ipv4.ip_forward", "1"), hosts[route.board]),
        (HostRoute(wan.peer_address, lan.board_address), hosts[lan.peer]),
        (HostRoute(lan.peer_address, wan.board_address), hosts[wan.peer]),
    ]
    why = f"{route.board} forwards between {lan.peer} ({lan.name}) and {wan.peer} ({wan.name})"
    return apply_steps(Profile(f"route {route.name}", why), steps)


def apply_board_qdisc(route: RouteEntry, hosts: dict[str, RemoteHost], name: str) -> AppliedProfile:
    """The qdisc ``name`` on both board interfaces of the route (Unsupported if it lacks it)."""
    if name not in QDISCS:
        raise ValueError(f"unknown qdisc {name!r}: one of {sorted(QDISCS)}")
    board = hosts[route.board]
    steps: list[tuple[Tunable, RemoteHost]] = [
        (Qdisc(link.board_interface, QDISCS[name]), board) for link in (route.lan, route.wan)
    ]
    return apply_steps(Profile(f"qdisc {name}", f"{name} on both board interfaces"), steps)


@dataclass(frozen=True)
class QdiscEvidence:
    """What the qdisc under test did on one board interface during a run."""

    interface: str
    delta: QdiscStats


def qdisc_snapshot(route: RouteEntry, board: RemoteHost, kind: str) -> dict[str, QdiscStats]:
    """Counters of qdisc ``kind`` on both board interfaces."""
    ports = tuple(dict.fromkeys(link.board_interface for link in (route.lan, route.wan)))
    return {name: total_of_kind(stats, kind) for name, stats in read_qdisc_stats_of(board, ports).items()}


def qdisc_evidence(before: dict[str, QdiscStats], after: dict[str, QdiscStats]) -> list[QdiscEvidence]:
    """Per interface, the counters' change over the run."""
    return [QdiscEvidence(name, after[name] - before[name]) for name in after if name in before]
