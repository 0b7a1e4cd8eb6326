"""The virtual lab's shape as plain data: hosts, links, names and addresses.

Keeping the plan separate from the commands that build it lets ``up``, ``down``, ``status``
and the labgrid env writer agree on every name without sharing state, and lets ``down``
find what a crashed ``up`` left behind from the names alone.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from pathlib import Path

from ..model.board_models import ONE_WAY_BUSES, PHYSICS, bus_wire_mbps
from .names import ACCELERATORS, BOARD_KINDS, COMPANION_SUFFIX, PART_NAME

DEFAULT_LAB = "pinet"
STATE_ROOT_ENV = "PINET_STATE_DIR"
DEFAULT_STATE_ROOT = "/run/pinet"


@dataclass(frozen=True)
class HostSpec:
    """A host of the lab: the board under test or a peer it talks to."""

    name: str
    role: str  # "board" or "peer"
    # A twin's host keeps its env file's management address, on the twin's own network
    # (twin.py); the labs pinet plans for itself number their hosts from .10.
    mgmt: str = ""
    # The board model it imitates (model/board_models.py), written into the env file: its
    # ports are built as that model's physics says and its figures judged by their limits.
    model: str = ""


@dataclass(frozen=True)
class LinkSpec:
    """A cable between a board interface and a peer interface."""

    name: str
    board: str
    board_interface: str
    peer: str
    peer_interface: str
    speed_mbps: int = 1000
    mtu: int = 1500
    adapter: str = "builtin"
    # A twin of a hardware lab's env file (twin.py) keeps that file's addresses; the labs
    # pinet plans for itself leave these empty and get one /24 per cable from the plan.
    board_address: str = ""
    peer_address: str = ""
    # What the board's own port puts on the wire where its bus holds it below the cable (a
    # Pi 3B+'s LAN7515 behind USB 2), both directions sharing it as that bus does; 0: the
    # cable's speed.  The cable still negotiates (and reports) ``speed_mbps``.
    port_mbps: int = 0


@dataclass(frozen=True)
class RouteSpec:
    """The board routes between the peers of two of its links (the seed: LAN PC on the
    built-in port, "internet" PC on the USB adapter)."""

    name: str
    board: str
    lan: str  # link name
    wan: str  # link name
    # Warm-up its traffic needs (the inventory's routes[].omit_s), where more than a run's.
    omit_s: int | None = None


@dataclass(frozen=True)
class DiskSpec:
    """A scratch disk of a host: a loop device over a sparse file, as the seed's USB disk."""

    name: str
    host: str
    size_mib: int = 512


QEMU_BOARD = "qpi"
# The QEMU board's LAN cable (its USB adapter): 10 Mbit/s, shaped on both ends.  Under TCG
# QEMU's usb-net carries 55-60 Mbit/s one way and far less both ways at once; unshaped, that
# device, not the board's qdisc, was the bottleneck of the routing tests (SFQ starved the
# download more than pfifo_fast, the opposite of the seed).  At 10 Mbit/s each way the board
# keeps up with room to spare, so the queue builds in the qdisc under test.
QEMU_LAN_MBPS = 10
# Seconds of warm-up for traffic routed through the QEMU board (its route's ``omit_s``).
QEMU_ROUTE_OMIT_S = 3


@dataclass(frozen=True)
class LabSpec:
    """Everything needed to name and address one virtual lab (one place).

    ``board`` says what the board is: a namespace sharing this machine's kernel ("netns"),
    or a QEMU machine with its own kernel ("qemu", see :func:`qemu_lab`).
    """

    name: str = DEFAULT_LAB
    hosts: tuple[HostSpec, ...] = (HostSpec("pi", "board"), HostSpec("pc", "peer"), HostSpec("inet", "peer"))
    links: tuple[LinkSpec, ...] = (
        LinkSpec("eth", "pi", "eth0", "pc", "eth0"),
        # A second GbE port on the board, as the seed's USB adapter: emulated like the first,
        # so its figures say what the routing path costs, not what a USB chip does.
        LinkSpec("usb", "pi", "eth1", "inet", "eth0", adapter="emulated-usb"),
    )
    routes: tuple[RouteSpec, ...] = (RouteSpec("pi-router", "pi", lan="eth", wan="usb"),)
    disks: tuple[DiskSpec, ...] = (DiskSpec("usb-disk", "pi"),)
    state_root: Path = field(default_factory=lambda: Path(os.environ.get(STATE_ROOT_ENV, DEFAULT_STATE_ROOT)))
    board: str = "netns"
    image: str = ""  # the image on the QEMU board's SD card at lab up; "" for a namespace board
    accel: str = "tcg"  # how QEMU runs the board: software emulation, or KVM where it works
    # True for a twin of a hardware lab (twin.py): the lab's own provisioning, not ``up``,
    # gives the test links their addresses and MTU, as a hardware lab's hosts have them.
    links_provisioned: bool = False

    def __post_init__(self) -> None:
        if not PART_NAME.match(self.name):
            raise ValueError(f"lab name {self.name!r} must be 'pinet' optionally followed by 1-2 digits")
        if self.board not in BOARD_KINDS:
            raise ValueError(f"board must be one of {', '.join(BOARD_KINDS)}, got {self.board!r}")
        if self.accel not in ACCELERATORS:
            raise ValueError(f"accel must be one of {', '.join(ACCELERATORS)}, got {self.accel!r}")

    @property
    def board_host(self) -> HostSpec:
        """The (first) board of the lab."""
        return next(h for h in self.hosts if h.role == "board")

    @property
    def is_qemu(self) -> bool:
        """True when the board is a QEMU machine rather than a namespace."""
        return self.board == "qemu"

    @property
    def is_pair(self) -> bool:
        """True for the two-board lab: a namespace lab and its QEMU companion (:func:`parts`)."""
        return self.board == "both"

    @property
    def index(self) -> int:
        """Lab number, used to keep the address plans of several labs apart (a companion's
        plan is its lab's number plus 100)."""
        digits = self.name[len(DEFAULT_LAB) :]
        companion = digits.endswith(COMPANION_SUFFIX)
        digits = digits.removesuffix(COMPANION_SUFFIX)
        return (int(digits) if digits else 0) + (100 if companion else 0)

    @property
    def state_dir(self) -> Path:
        """Where keys, known_hosts, the env file and sshd state of this lab live."""
        return self.state_root / self.name

    @property
    def env_file(self) -> Path:
        """The labgrid environment file describing this lab (of a pair: both boards, beside
        the namespace lab's own ``env.yaml``)."""
        return self.state_dir / ("two-boards.yaml" if self.is_pair else "env.yaml")

    def netns(self, host: str) -> str:
        """Network namespace of ``host``."""
        return f"{self.name}-{host}"

    @property
    def netns_prefix(self) -> str:
        """Every namespace of this lab starts with this; ``down`` relies on it."""
        return f"{self.name}-"

    @property
    def bridge(self) -> str:
        """Root-namespace bridge of the management network (SSH from the test runner)."""
        return f"{self.name}-br"

    def mgmt_veth(self, host: str) -> str:
        """Root-namespace end of ``host``'s management cable (an interface name has at most
        15 characters: a twin's hosts, named as a lab names them, go by number)."""
        name = f"{self.name}-m-{host}"
        if len(name) <= 15:
            return name
        return f"{self.name}-m{self._host_index(host)}"

    @property
    def mgmt_gateway(self) -> str:
        """Management address of the machine running pytest."""
        return f"10.203.{self.index}.1"

    def mgmt_address(self, host: str) -> str:
        """Management (SSH) address of ``host``."""
        explicit = self.host(host).mgmt
        if explicit:
            return explicit
        return f"10.203.{self.index}.{10 + self._host_index(host)}"

    def link_address(self, link: LinkSpec, side: str) -> str:
        """Address of the board (``.1``) or peer (``.2``) end of ``link`` (a twin's: its env file's)."""
        explicit = link.board_address if side == "board" else link.peer_address
        if explicit:
            return explicit
        octet = 1 if side == "board" else 2
        return f"10.{204 + self.links.index(link)}.{self.index}.{octet}"

    def _host_index(self, host: str) -> int:
        for number, spec in enumerate(self.hosts):
            if spec.name == host:
                return number
        raise KeyError(f"no host {host!r} in lab {self.name}")

    def host(self, name: str) -> HostSpec:
        """The host called ``name``."""
        return self.hosts[self._host_index(name)]

    def disk_image(self, disk: DiskSpec) -> Path:
        """The sparse file behind a disk's loop device."""
        return self.state_dir / f"{disk.name}.img"

    def host_dir(self, host: str) -> Path:
        """Per-host state: sshd config, host key, pid and log."""
        return self.state_dir / host


def qemu_lab(
    name: str = DEFAULT_LAB,
    *,
    image: str = "debian12-k6.1",
    accel: str = "tcg",
    state_root: Path | None = None,
) -> LabSpec:
    """A lab whose board ``qpi`` is a QEMU machine with a virtio port and a USB adapter.

    Under emulation the USB adapter (QEMU's usb-net on xHCI) is the board's slow port, as a
    USB 2.0 adapter is on a real board, so it faces the LAN, as a 10 Mbit/s cable
    (``QEMU_LAN_MBPS``): downloads queue in the board's qdisc on that port, which is where
    pfifo_fast, SFQ and fq_codel differ.  The virtio port faces the "internet" peer at GbE.
    """
    spec = LabSpec(
        name=name,
        hosts=(HostSpec(QEMU_BOARD, "board"), HostSpec("pc", "peer"), HostSpec("inet", "peer")),
        links=(
            LinkSpec("eth", QEMU_BOARD, "eth0", "inet", "eth0", adapter="virtio"),
            LinkSpec(
                "usb", QEMU_BOARD, "eth1", "pc", "eth0", speed_mbps=QEMU_LAN_MBPS, adapter="qemu-usb-net"
            ),
        ),
        # 3 s of warm-up through the 10 Mbit/s cable: ten streams' slow start overflows SFQ's
        # per-flow queues and their recovery lasts into the third second; with 2 s the data
        # it released was counted in the first measured second, 11.1 Mbit/s of in-order payload
        # while the wire carried 9.83-9.87 (docs/qemu-board.md).
        routes=(RouteSpec("qpi-router", QEMU_BOARD, lan="usb", wan="eth", omit_s=QEMU_ROUTE_OMIT_S),),
        disks=(DiskSpec("usb-disk", QEMU_BOARD, size_mib=256),),
        board="qemu",
        image=image,
        accel=accel,
    )
    return spec if state_root is None else replace(spec, state_root=state_root)


# How the QEMU lab's hosts, links, routes and disks are called in the two-board lab, whose
# names must be unique across both boards (the QEMU lab keeps its own names inside).
COMPANION_NAMES = {
    "pc": "qpc",
    "inet": "qinet",
    "eth": "qeth",
    "usb": "qusb",
    "usb-disk": "qusb-disk",
    QEMU_BOARD: QEMU_BOARD,
    "qpi-router": "qpi-router",
}


def companion_name(name: str) -> str:
    """The QEMU lab that pairs with namespace lab ``name``."""
    return name + COMPANION_SUFFIX


# The namespace board's two more cables in the lab pinet builds for its users (the main job's):
# a Fast Ethernet one and a jumbo-frame one, which no shipped rule names, so each is judged
# against its own line-rate limit (docs/virtual-lab.md). Labs the tests build for themselves
# keep the two GbE cables of :class:`LabSpec` (their runs are about other things).
MORE_CABLES = (
    LinkSpec("fe", "pi", "eth2", "pc", "eth1", speed_mbps=100),
    LinkSpec("jumbo", "pi", "eth3", "inet", "eth1", mtu=9000),
)


def bus_port_mbps(model: str) -> int:
    """The wire rate at which a port of ``model`` that hangs off a one-way bus carries what that
    bus carries (Raspberry Pi's "maximum throughput 300 Mbps" of a 3B+'s TCP); 0 for a model
    whose port is the SoC's own MAC."""
    physics = PHYSICS[model]
    if physics.builtin_attach not in ONE_WAY_BUSES:
        return 0
    return int(bus_wire_mbps(physics.builtin_attach))


# The main job's slower board, beside the GbE one: a Pi 3B+, whose GbE port is a LAN7515
# behind the USB 2 hub: its cable negotiates GbE, its port carries what USB 2 does (shared by
# both directions), and its figures are judged by that limit (judge/path_limit.py).
SLOW_MODEL = "Pi 3B+"
SLOW_BOARD = HostSpec("pi3", "board", model=SLOW_MODEL)
SLOW_CABLE = LinkSpec("pi3-eth", "pi3", "eth0", "pc", "eth1", port_mbps=bus_port_mbps(SLOW_MODEL))


def mixed_namespace_lab(name: str = DEFAULT_LAB, *, state_root: Path | None = None) -> LabSpec:
    """The main job's namespace part: the GbE board ``pi`` with its cables but the Fast
    Ethernet one (a slower model measures what a slower port does), and :data:`SLOW_BOARD`
    on ``pc``'s second port."""
    lab = namespace_lab(name, state_root=state_root)
    return replace(
        lab,
        hosts=(*lab.hosts, SLOW_BOARD),
        links=(*(link for link in lab.links if link.name != "fe"), SLOW_CABLE),
    )


def namespace_lab(name: str = DEFAULT_LAB, *, state_root: Path | None = None) -> LabSpec:
    """The namespace board's lab as ``pinet lab up`` builds it: its GbE cables and
    :data:`MORE_CABLES`."""
    base = LabSpec(name=name) if state_root is None else LabSpec(name=name, state_root=state_root)
    return replace(base, links=base.links + MORE_CABLES)


def parts(pair: LabSpec) -> tuple[LabSpec, LabSpec]:
    """The two labs a two-board lab is built from: the namespace lab under the pair's own name,
    and the QEMU lab under :func:`companion_name` (own namespaces, bridge and addresses)."""
    netns = mixed_namespace_lab(pair.name, state_root=pair.state_root)
    qemu = qemu_lab(companion_name(pair.name), image=pair.image, accel=pair.accel, state_root=pair.state_root)
    return netns, qemu


def two_board_lab(
    name: str = DEFAULT_LAB,
    *,
    image: str = "debian12-k6.1",
    accel: str = "tcg",
    state_root: Path | None = None,
) -> LabSpec:
    """The default lab: board ``pi`` (a namespace, GbE-shaped cables) with peers ``pc`` and
    ``inet``, the slower board ``pi3`` (a namespace built as a Pi 3B+) on ``pc``, and board
    ``qpi`` (a QEMU machine with its own kernel) with peers ``qpc`` and ``qinet``.  The plan
    names every host, link, route and disk of them, as its env file does."""
    netns = mixed_namespace_lab(name, state_root=state_root)
    qemu = qemu_lab(companion_name(name), image=image, accel=accel, state_root=netns.state_root)
    rename = COMPANION_NAMES.__getitem__
    return LabSpec(
        name=name,
        hosts=netns.hosts + tuple(HostSpec(rename(h.name), h.role) for h in qemu.hosts),
        links=netns.links
        + tuple(
            replace(link, name=rename(link.name), board=rename(link.board), peer=rename(link.peer))
            for link in qemu.links
        ),
        routes=netns.routes
        + tuple(
            RouteSpec(rename(r.name), rename(r.board), lan=rename(r.lan), wan=rename(r.wan), omit_s=r.omit_s)
            for r in qemu.routes
        ),
        disks=netns.disks + tuple(replace(d, name=rename(d.name), host=rename(d.host)) for d in qemu.disks),
        state_root=netns.state_root,
        board="both",
        image=image,
        accel=accel,
    )


def lab_spec(
    name: str = DEFAULT_LAB,
    *,
    board: str = "both",
    image: str = "",
    accel: str = "tcg",
    state_root: Path | None = None,
) -> LabSpec:
    """The lab plan for a board kind: the one place CLI, plugin and bench build it from."""
    if board == "both":
        return two_board_lab(name, image=image or "debian12-k6.1", accel=accel, state_root=state_root)
    if board == "qemu":
        return qemu_lab(name, image=image or "debian12-k6.1", accel=accel, state_root=state_root)
    if board != "netns":
        raise ValueError(f"board must be one of {', '.join(BOARD_KINDS)}, got {board!r}")
    return namespace_lab(name, state_root=state_root)
