"""Board models a lab may name (``model:`` of a board in ``pinet.hosts``).

A model is what threshold rules match when a floor belongs to the hardware rather than to
one board (``match: {model: "Pi 5"}``), and what picks the kernel a per-model image entry
expects: Raspberry Pi OS ships one image for the 64-bit Pis, and its bootloader starts the
``-rpi-2712`` kernel on a Pi 5 (BCM2712) and the ``-rpi-v8`` kernel on a Pi 3/4/Zero 2 W
(and their compute modules).  The list is closed so that a typo ("Pi5", "pi 4") is an error
naming the known models, not a rule that silently never matches.
"""

from __future__ import annotations

from dataclasses import dataclass

# The model names, as Raspberry Pi Ltd writes them, and the kernel flavour (the end of
# `uname -r` under Raspberry Pi OS) each boots.  "other" is any board that is not a Pi
# (a QEMU board, a PC-class board under test); it has no flavour.
BOARD_MODELS: dict[str, str] = {
    "Pi 3B": "rpi-v8",
    "Pi 3B+": "rpi-v8",
    "Pi Zero 2 W": "rpi-v8",
    "CM3": "rpi-v8",
    "Pi 4B": "rpi-v8",
    "Pi 400": "rpi-v8",
    "CM4": "rpi-v8",
    "Pi 5": "rpi-2712",
    "Pi 500": "rpi-2712",
    "CM5": "rpi-2712",
    "other": "",
}


def kernel_keys() -> set[str]:
    """What an image's per-model kernel map may be keyed by: a model, or a kernel flavour
    (``rpi-v8``, ``rpi-2712``) that stands for every model booting it, so a model added to
    :data:`BOARD_MODELS` needs no image entry edited."""
    return set(BOARD_MODELS) | {flavour for flavour in BOARD_MODELS.values() if flavour}


def model_fix(value: object) -> str:
    """What to write instead of ``value``, which is no known model: the near miss, if any, and
    the known names (the schema's ``BoardModel`` check words the error around it)."""
    near = [name for name in BOARD_MODELS if isinstance(value, str) and _squash(name) == _squash(value)]
    hint = f"did you mean {near[0]!r}? " if near else ""
    return f"{hint}use one of {list(BOARD_MODELS)}"


def _squash(name: str) -> str:
    """A model name without case, spaces or the word "raspberry": what a typo keeps."""
    return name.lower().replace("raspberry", "").replace(" ", "").replace("model", "")


# What a bus carries of a port's traffic, Mbit/s of payload.  USB 2 (480 Mbit/s signalling,
# one direction at a time): Raspberry Pi Ltd's Pi 3B+ product brief gives its USB-attached GbE
# port "maximum throughput 300 Mbps", and a GbE adapter on a USB 2 port is held by the same
# bus.  USB 3 (5 Gbit/s, 8b/10b coded: 4 Gbit/s of data each way) and a PCIe 2.0 x1 lane (the
# Pi 5's, CM4's and CM5's: 5 GT/s, 8b/10b) carry more than a 2.5 GbE port can send.
ETHERNET_OVER_BUS_MBPS: dict[str, float] = {"usb2": 300.0, "usb3": 4000.0, "pcie": 4000.0}
# A disk on the bus: USB 2's bulk ceiling (13 packets of 512 bytes per 125 us microframe:
# 53.2 MB/s, 426 Mbit/s) and USB 3's 4 Gbit/s of data.
DISK_OVER_BUS_MBPS: dict[str, float] = {"usb2": 426.0, "usb3": 4000.0, "pcie": 4000.0}


def bus_wire_mbps(bus: str) -> float:
    """The wire rate at which a port carries what ``bus`` carries of Ethernet payload: the
    figures above are TCP payload at MTU 1500 with timestamps, 1448 of every 1538 bytes of
    wire time (so a bus carries a little more UDP, whose frames hold 1472, and more TCP at
    jumbo MTUs)."""
    return ETHERNET_OVER_BUS_MBPS[bus] * 1538 / 1448


# Buses that carry one direction at a time: both directions of a full duplex, and a packet
# routed in through one port and out through another on the same bus, share them.
ONE_WAY_BUSES = frozenset({"usb2"})
BUS_OF_USB_PORT = {480: "usb2", 5000: "usb3"}


@dataclass(frozen=True)
class BoardPhysics:
    """What a model's ports can carry, whatever the cable: the limit of every path through the
    board comes from this (``judge.path_limit``), and so does the USB speed an adapter must
    reach on it."""

    builtin_mbps: int  # the built-in Ethernet port's line speed (0: none)
    builtin_attach: str  # how the port reaches the SoC: "soc" (native MAC) or "usb2" (a USB hub)
    usb_port_mbps: int  # the fastest USB port: 480 (USB 2 only) or 5000 (USB 3)
    builtin_chip: str = ""  # the built-in port's chip, where it is not the SoC's own MAC

    @property
    def usb_bus(self) -> str:
        """The bus an adapter in the fastest USB port sits on: ``usb2`` or ``usb3``."""
        return BUS_OF_USB_PORT[self.usb_port_mbps]


# From Raspberry Pi Ltd's product briefs: the 3B's LAN9514 (100 Mbit/s) and the 3B+'s LAN7515
# (GbE, about 300 Mbit/s of TCP at best) hang off the USB 2 hub; 4B, 400, CM4, 5, 500 and CM5
# have a native GbE MAC; USB 3 ports on 4B, 400, 5, 500 and CM5, USB 2 only on the 3s and CM4
# (a CM4 carrier board with its own USB 3 controller says so in the inventory: ``bus: usb3``).
PHYSICS: dict[str, BoardPhysics] = {
    "Pi 3B": BoardPhysics(100, "usb2", 480, "LAN9514"),
    "Pi 3B+": BoardPhysics(1000, "usb2", 480, "LAN7515"),
    "Pi Zero 2 W": BoardPhysics(0, "usb2", 480),
    "CM3": BoardPhysics(0, "usb2", 480),
    "Pi 4B": BoardPhysics(1000, "soc", 5000),
    "Pi 400": BoardPhysics(1000, "soc", 5000),
    "CM4": BoardPhysics(1000, "soc", 480),
    "Pi 5": BoardPhysics(1000, "soc", 5000),
    "Pi 500": BoardPhysics(1000, "soc", 5000),
    "CM5": BoardPhysics(1000, "soc", 5000),
}


def usb_speed_expected(adapter_mbps: float, model: str) -> float:
    """The USB bus speed an adapter must enumerate at on a board of ``model``: its own (5000 for
    a USB 3 adapter), but no faster than the board's USB ports (a USB 3 adapter on a Pi 3B+
    enumerates at 480 and is judged by that). An unknown or non-Pi model: the adapter's own."""
    physics = PHYSICS.get(model)
    return min(adapter_mbps, physics.usb_port_mbps) if physics is not None else adapter_mbps
