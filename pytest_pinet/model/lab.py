"""What a lab wires together, as plain values every room may hold: a cable between a board and a
peer, a board routing between two of its cables, a disk for the storage suite.  The inventory
builds them from the env file; ``host`` and ``measure`` use them without knowing the lab."""

from __future__ import annotations

import re
from dataclasses import dataclass

# How a catalogue image may be named, in the env file and in --pinet-image: plain enough for a
# results path and a test id.
IMAGE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]{0,63}$")


@dataclass(frozen=True)
class LinkEntry:
    """A cable between a board interface and a peer interface, with its nominal speed."""

    name: str
    board: str
    board_interface: str
    board_address: str
    peer: str
    peer_interface: str
    peer_address: str
    adapter: str
    speed_mbps: int
    mtu: int
    board_irqs: tuple[str, ...] = ()  # the interface's IRQs by name or number, where the
    peer_irqs: tuple[str, ...] = ()  # inventory names them (else: by name, else from the device)
    # The bus the board's adapter sits on (usb2, usb3, pcie), where the board's model cannot
    # tell (a CM4 carrier's own USB 3 controller); "": the model's fastest USB port.
    bus: str = ""


@dataclass(frozen=True)
class RouteEntry:
    """A board forwarding between the peers of two of its links.

    ``download`` is the wan peer sending to the lan peer through the board, ``upload`` the
    reverse, as the seed's "internet" PC and home PC.
    """

    name: str
    board: str
    lan: LinkEntry
    wan: LinkEntry
    # Seconds of warm-up its traffic needs, where more than a run's own (``omit_s``).
    omit_s: int | None = None


@dataclass(frozen=True)
class DiskEntry:
    """A block device of a host for the storage suite; mkfs only when ``scratch`` is true."""

    name: str
    host: str
    device: str
    scratch: bool
    bus: str
