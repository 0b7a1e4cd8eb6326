"""Parsers for what hosts print about themselves: /proc/interrupts, lsusb -t, ethtool, os-release.

They take text as real machines print it (shell prompts around it, ``...`` elisions, old
usbutils with empty ``Class=``, Pi 5's ``xhci-hcd`` spelled with a dash) and keep what a
throughput verdict depends on: which CPU takes a NIC's interrupts, whether a USB adapter
runs at 480M or 5000M, which driver and firmware a link uses.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass

_CPU_HEADER = re.compile(r"^\s*(CPU\d+\s*)+$")
_IRQ_LINE = re.compile(r"^\s*(?P<irq>[A-Za-z0-9]+):(?P<rest>.*)$")
# "GICv2 189 Level eth0" (ARM), "PCI-MSIX-0000:00:01.0 3-edge virtio0-stats" (x86),
# "BRCM STB PCIe MSI 524288 Edge xhci_hcd" (a chip name with spaces).
_CHIP_TAIL = re.compile(
    r"^(?P<chip>.*?)\s+(?P<hwirq>\d+)(?:\s+|-)(?P<trigger>Edge|Level|edge|level|fasteoi)\s*(?P<names>.*)$"
)


@dataclass(frozen=True)
class IrqLine:
    """One row of /proc/interrupts."""

    irq: str  # "38", "IPI0", "FIQ", "Err"
    counts: tuple[int, ...]
    chip: str
    hwirq: str | None
    trigger: str | None
    names: tuple[str, ...]

    @property
    def total(self) -> int:
        """Interrupts taken on all CPUs."""
        return sum(self.counts)


@dataclass(frozen=True)
class InterruptTable:
    """Parsed /proc/interrupts: CPU count and rows by IRQ label."""

    cpus: int
    lines: Mapping[str, IrqLine]

    def for_name(self, name: str) -> list[IrqLine]:
        """Rows whose device names include ``name`` exactly (e.g. ``eth0``)."""
        return [line for line in self.lines.values() if name in line.names]


def parse_proc_interrupts(text: str) -> InterruptTable:
    """Parse /proc/interrupts; lines that are not part of the table (prompts) are ignored."""
    cpus = 0
    lines: dict[str, IrqLine] = {}
    for raw in text.replace("\r\n", "\n").splitlines():
        if _CPU_HEADER.match(raw):
            cpus = len(raw.split())
            continue
        if cpus == 0:
            continue
        match = _IRQ_LINE.match(raw)
        if match is None:
            continue
        irq = match.group("irq")
        fields = match.group("rest").split()
        counts: list[int] = []
        for field in fields[:cpus]:
            if not field.isdigit():
                break
            counts.append(int(field))
        if not counts and not irq.isupper():
            continue  # "lbox:~# echo ..." or "ash: write error": a prompt, not a row
        rest = " ".join(fields[len(counts) :])
        tail = _CHIP_TAIL.match(rest)
        if tail is not None:
            names = tuple(n.strip() for n in tail.group("names").split(",") if n.strip())
            line = IrqLine(
                irq, tuple(counts), tail.group("chip"), tail.group("hwirq"), tail.group("trigger"), names
            )
        else:
            line = IrqLine(irq, tuple(counts), rest, None, None, (rest,) if rest else ())
        lines[irq] = line
    return InterruptTable(cpus, lines)


def interrupt_deltas(before: InterruptTable, after: InterruptTable, name: str) -> dict[str, tuple[int, ...]]:
    """Per-CPU interrupts taken between two samples by the rows named ``name``."""
    deltas: dict[str, tuple[int, ...]] = {}
    for line in after.for_name(name):
        old = before.lines.get(line.irq)
        if old is None or len(old.counts) != len(line.counts):
            continue
        deltas[line.irq] = tuple(b - a for a, b in zip(old.counts, line.counts, strict=True))
    return deltas


@dataclass(frozen=True)
class UsbNode:
    """One interface line of ``lsusb -t``."""

    bus: int
    port: int
    dev: int
    interface: int | None  # None for root hubs
    usb_class: str
    driver: str
    speed_mbps: float
    depth: int

    @property
    def superspeed(self) -> bool:
        """True at 5000M or faster: an adapter on a USB 2 port (480M) cannot reach GbE."""
        return self.speed_mbps >= 5000


_LSUSB_ROOT = re.compile(
    r"^/:\s+Bus (?P<bus>\d+)\.Port (?P<port>\d+): Dev (?P<dev>\d+), Class=(?P<cls>[^,]*), "
    r"Driver=(?P<driver>[^,]*), (?P<speed>[\d.]+)M"
)
_LSUSB_CHILD = re.compile(
    r"^(?P<indent>\s*)\|__ Port (?P<port>\d+): Dev (?P<dev>\d+), If (?P<iface>\d+), Class=(?P<cls>[^,]*), "
    r"Driver=(?P<driver>[^,]*), (?P<speed>[\d.]+)M"
)


def parse_lsusb_tree(text: str) -> list[UsbNode]:
    """Parse ``lsusb -t`` (usbutils old and new); elided or foreign lines are skipped."""
    nodes: list[UsbNode] = []
    bus = 0
    for raw in text.replace("\r\n", "\n").splitlines():
        root = _LSUSB_ROOT.match(raw)
        if root is not None:
            bus = int(root.group("bus"))
            nodes.append(
                UsbNode(
                    bus,
                    int(root.group("port")),
                    int(root.group("dev")),
                    None,
                    root.group("cls").strip(),
                    root.group("driver").strip(),
                    float(root.group("speed")),
                    0,
                )
            )
            continue
        child = _LSUSB_CHILD.match(raw)
        if child is not None and bus:
            nodes.append(
                UsbNode(
                    bus,
                    int(child.group("port")),
                    int(child.group("dev")),
                    int(child.group("iface")),
                    child.group("cls").strip(),
                    child.group("driver").strip(),
                    float(child.group("speed")),
                    len(child.group("indent")) // 4 + 1,
                )
            )
    return nodes


def usb_speed_of_driver(nodes: list[UsbNode], driver: str) -> list[float]:
    """Speeds (Mbit/s) of the USB interfaces bound to ``driver`` (e.g. r8152, ax88179_178a)."""
    return [n.speed_mbps for n in nodes if n.interface is not None and n.driver == driver]


def parse_ethtool_info(text: str) -> dict[str, dict[str, str]]:
    """``ethtool -i``: one dict per interface (sections ``## driver (eth1)`` or a single block)."""
    sections: dict[str, dict[str, str]] = {}
    current = ""
    for raw in text.replace("\r\n", "\n").splitlines():
        header = re.match(r"^#+\s*driver\s*\((?P<name>[^)]+)\)", raw)
        if header:
            current = header.group("name")
            continue
        key, sep, value = raw.partition(":")
        if sep and key.strip() and not key.startswith(" "):
            sections.setdefault(current, {})[key.strip()] = value.strip()
    return sections


@dataclass(frozen=True)
class LinkSettings:
    """``ethtool IFACE``: negotiated speed and duplex, carrier."""

    speed_mbps: int | None
    duplex: str | None
    link_detected: bool | None


def parse_ethtool_settings(text: str) -> LinkSettings:
    """Parse plain ``ethtool IFACE`` output; unknown speed (veth, no carrier) is None."""
    speed = re.search(r"^\s*Speed:\s*(\d+)Mb/s", text, re.MULTILINE)
    duplex = re.search(r"^\s*Duplex:\s*(\w+)", text, re.MULTILINE)
    link = re.search(r"^\s*Link detected:\s*(\w+)", text, re.MULTILINE)
    return LinkSettings(
        int(speed.group(1)) if speed else None,
        duplex.group(1).lower() if duplex and duplex.group(1) != "Unknown" else None,
        (link.group(1) == "yes") if link else None,
    )


def parse_ethtool_features(text: str) -> dict[str, bool]:
    """``ethtool -k``: feature name -> on/off (``[fixed]`` noted by the name being present)."""
    features: dict[str, bool] = {}
    for raw in text.splitlines():
        key, sep, value = raw.partition(":")
        if (sep and raw.startswith(("\t", " ")) is False and value.strip()) or (sep and value.strip()):
            features[key.strip()] = value.strip().startswith("on")
    return features


def parse_os_release(text: str) -> dict[str, str]:
    """/etc/os-release as a dict (quotes removed)."""
    values: dict[str, str] = {}
    for raw in text.splitlines():
        key, sep, value = raw.partition("=")
        if sep and re.fullmatch(r"[A-Z_]+", key):
            values[key] = value.strip().strip('"').strip("'")
    return values


THROTTLE_BITS = {
    0: "under-voltage",
    1: "arm-frequency-capped",
    2: "throttled",
    3: "soft-temperature-limit",
    16: "under-voltage-occurred",
    17: "arm-frequency-capped-occurred",
    18: "throttling-occurred",
    19: "soft-temperature-limit-occurred",
}


def parse_throttled(text: str) -> tuple[int, list[str]]:
    """``vcgencmd get_throttled`` -> (raw bits, names of the bits that are set)."""
    match = re.search(r"throttled=(0x[0-9a-fA-F]+|\d+)", text)
    if match is None:
        raise ValueError(f"not vcgencmd get_throttled output: {text.strip()[:80]!r}")
    value = int(match.group(1), 0)
    return value, [name for bit, name in sorted(THROTTLE_BITS.items()) if value & (1 << bit)]


def parse_udp_snmp(text: str) -> dict[str, int]:
    """The ``Udp:`` header and value lines of ``/proc/net/snmp`` as a mapping."""
    rows = [line.split() for line in text.splitlines() if line.startswith("Udp:")]
    if len(rows) < 2:
        return {}
    return {k: int(v) for k, v in zip(rows[0][1:], rows[1][1:], strict=False) if v.lstrip("-").isdigit()}


def parse_image_marker(text: str) -> dict[str, str]:
    """The board's image marker (one JSON object); {} when absent or unreadable."""
    try:
        data = json.loads(text) if text.strip() else {}
    except ValueError:
        return {}
    return {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else {}


def image_of(marker: dict[str, str], kernel: str) -> str:
    """The verified image's name, if the board still runs the kernel it was verified with."""
    return marker.get("name", "") if marker.get("kernel") == kernel and kernel else ""


@dataclass(frozen=True)
class UsbIdentity:
    """A USB adapter's IDs and the bus speed it enumerated at (sysfs ``idVendor``,
    ``idProduct`` and ``speed`` of the device behind an interface)."""

    usb_id: str  # "0bda:8153"
    speed_mbps: float | None


def parse_usb_identity(text: str) -> UsbIdentity | None:
    """The three sysfs lines (vendor, product, speed); None when the interface is not USB."""
    words = text.split()
    hexes = [w.lower() for w in words[:2] if re.fullmatch(r"[0-9a-fA-F]{4}", w)]
    if len(hexes) != 2:
        return None
    speed = words[2] if len(words) > 2 else ""
    try:
        mbps: float | None = float(speed)
    except ValueError:
        mbps = None
    return UsbIdentity(f"{hexes[0]}:{hexes[1]}", mbps)


# The alias the virtual lab gives each end of an emulated cable: what the cable is, and the
# speed and duplex it is shaped to (a veth's own ethtool speed is a fixed 10000).
CABLE_ALIAS = re.compile(r"^pinet-cable: (?P<what>.+?) (?P<speed>\d+)Mb/s (?P<duplex>full|half)\s*$")


def cable_alias(speed_mbps: int, duplex: str = "full", what: str = "shaped veth") -> str:
    """The alias text :func:`parse_cable_alias` reads."""
    return f"pinet-cable: {what} {speed_mbps}Mb/s {duplex}"


def parse_cable_alias(text: str) -> tuple[str, int, str] | None:
    """(what, speed, duplex) from an emulated cable's alias; None for any other alias."""
    match = CABLE_ALIAS.match(text.strip())
    if match is None:
        return None
    return match.group("what"), int(match.group("speed")), match.group("duplex")


def parse_ethtool_rings(text: str) -> dict[str, int]:
    """``ethtool -g``: the current ring sizes ("rx": 1024, "tx": 1024, ...); a ring a NIC does
    not have ("n/a") and a NIC without ring parameters give nothing."""
    rings: dict[str, int] = {}
    current = False
    for raw in text.splitlines():
        line = raw.strip()
        if line.lower().startswith("current hardware settings"):
            current = True
            continue
        key, sep, value = line.partition(":")
        if current and sep and value.strip().isdigit():
            rings[key.strip().lower().replace(" ", "-")] = int(value.strip())
    return rings


def parse_root_qdisc(text: str) -> str | None:
    """``tc qdisc show dev X``: the root qdisc's kind ("mq", "pfifo_fast", "noqueue")."""
    for raw in text.splitlines():
        words = raw.split()
        if len(words) >= 2 and words[0] == "qdisc" and "root" in words:
            return words[1]
    return None


def parse_sysctls(text: str) -> dict[str, str]:
    """``sysctl KEY ...`` lines ("net.core.rmem_max = 212992") as a dict, whitespace in a
    value (tcp_rmem's three numbers) made single."""
    found: dict[str, str] = {}
    for raw in text.splitlines():
        key, sep, value = raw.partition(" = ")
        if sep and re.fullmatch(r"[a-z0-9_.\-]+", key.strip()):
            found[key.strip()] = " ".join(value.split())
    return found


def parse_vc_version(text: str) -> str:
    """``vcgencmd version`` or ``vcgencmd bootloader_version``: the build's hash (12 digits)
    and date, "82f3750a65fa (Mar 17 2023 10:50:39)"; "" off a Pi or when the firmware would
    not say."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    build = next(
        (line.split()[1] for line in lines if line.startswith("version ") and len(line.split()) > 1), ""
    )
    if not re.fullmatch(r"[0-9a-f]{7,40}", build):
        return ""
    date = lines[0] if lines and not lines[0].startswith("version ") else ""
    return f"{build[:12]} ({date})" if date else build[:12]
