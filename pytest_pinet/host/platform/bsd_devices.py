"""What the BSDs say about their devices, parsed: network interfaces (``ifconfig``: flags, MTU,
media, offloads; ``netstat -i`` counters), PCI devices (``pciconf -lv``: the NIC chip, a USB 3
controller with no driver) and USB devices (``usbconfig``, ``usbdevs``: IDs and bus speed).
Pure functions of text, tested on real outputs in ``fixtures/bsd``."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

# --- pciconf ---------------------------------------------------------------------------------

_PCI_HEAD = re.compile(
    r"^(?P<name>[a-z_]+\d+)@(?P<selector>pci\d+:\d+:\d+:\d+):\s+class=(?P<cls>0x[0-9a-f]{6})(?P<rest>.*)$"
)
_PCI_FIELD = re.compile(r"^\s+(?P<key>vendor|device|class|subclass)\s+= '?(?P<value>.*?)'?\s*$")
XHCI_CLASS = "0x0c0330"


@dataclass(frozen=True)
class PciDevice:
    """One device of ``pciconf -l`` / ``-lv``: the driver instance (``none0`` when no driver
    attached), its IDs and, with ``-v``, what it is."""

    name: str
    selector: str
    class_code: str
    vendor_id: str
    device_id: str
    vendor: str = ""
    device: str = ""
    subclass: str = ""

    @property
    def driver(self) -> str | None:
        """The driver attached to it; None for ``noneN``."""
        return None if self.name.startswith("none") else re.sub(r"\d+$", "", self.name)

    def describe(self) -> str:
        """``VIA Technologies, Inc. VL805/806 xHCI USB 3.0 Controller (none0@pci0:1:0:0)``"""
        what = " ".join(part for part in (self.vendor, self.device) if part)
        return f"{what or self.vendor_id + ':' + self.device_id} ({self.name}@{self.selector})"


def _pci_ids(rest: str) -> tuple[str, str]:
    """Vendor and device IDs of the header: FreeBSD 15's ``vendor=0x.. device=0x..`` or the
    older ``chip=0xDDDDVVVV`` (device in the high half, vendor in the low)."""
    vendor = re.search(r"\bvendor=0x([0-9a-f]{4})\b", rest)
    device = re.search(r"\bdevice=0x([0-9a-f]{4})\b", rest)
    if vendor is not None and device is not None:
        return f"0x{vendor.group(1)}", f"0x{device.group(1)}"
    chip = re.search(r"\bchip=0x([0-9a-f]{4})([0-9a-f]{4})\b", rest)
    return (f"0x{chip.group(2)}", f"0x{chip.group(1)}") if chip else ("", "")


def parse_pciconf(text: str) -> list[PciDevice]:
    """FreeBSD's ``pciconf -l`` or ``-lv`` (both header formats; capability lines and prompts
    skipped): every device with its driver instance, IDs and names."""
    devices: list[PciDevice] = []
    fields: dict[str, str] = {}

    def close() -> None:
        if devices and fields:
            last = devices[-1]
            devices[-1] = PciDevice(
                last.name,
                last.selector,
                last.class_code,
                last.vendor_id,
                last.device_id,
                fields.get("vendor", ""),
                fields.get("device", ""),
                fields.get("subclass", ""),
            )

    for raw in text.replace("\r\n", "\n").splitlines():
        head = _PCI_HEAD.match(raw)
        if head is not None:
            close()
            fields = {}
            vendor_id, device_id = _pci_ids(head.group("rest"))
            devices.append(
                PciDevice(head.group("name"), head.group("selector"), head.group("cls"), vendor_id, device_id)
            )
            continue
        field_line = _PCI_FIELD.match(raw)
        if field_line is not None and devices:
            fields.setdefault(field_line.group("key"), field_line.group("value"))
    close()
    return devices


def undriven_xhci(devices: list[PciDevice]) -> tuple[str, ...]:
    """USB 3 host controllers with no driver attached (a Pi 4's VL805 under some FreeBSD
    releases): every USB adapter of the host then runs at USB 2 speed at best."""
    return tuple(d.describe() for d in devices if d.class_code == XHCI_CLASS and d.driver is None)


# --- ifconfig ----------------------------------------------------------------------------------

_IF_HEAD = re.compile(r"^(?P<name>[A-Za-z][A-Za-z0-9_.]*): flags=(?P<flags>\S+)(?P<rest>.*)$")
_MTU = re.compile(r"\bmtu (\d+)")
# "(1000baseT <full-duplex>)" FreeBSD, "(100baseTX full-duplex)" NetBSD, "10Gbase-LR", "100GBase-SR4".
_MEDIA_SPEED = re.compile(r"\b(?P<n>\d+(?:\.\d+)?)(?P<g>[GM]?)[Bb]ase")
_LIST = re.compile(r"<([^>]*)>")


@dataclass(frozen=True)
class IfconfigInterface:
    """One interface of ``ifconfig`` output."""

    name: str
    mtu: int | None
    speed_mbps: int | None
    duplex: str | None
    ether: str | None
    status: str | None
    # Offload capabilities switched on: FreeBSD's ``options=<...>``, NetBSD's ``enabled=<...>``.
    enabled: frozenset[str] = field(default_factory=frozenset)


def parse_ifconfig(text: str) -> dict[str, IfconfigInterface]:
    """Every interface of ``ifconfig`` / ``ifconfig -a`` / ``ifconfig IF`` output."""
    blocks: dict[str, list[str]] = {}
    current: str | None = None
    for raw in text.replace("\r\n", "\n").splitlines():
        head = _IF_HEAD.match(raw)
        if head is not None:
            current = head.group("name")
            blocks[current] = [raw]
        elif current is not None and raw[:1] in (" ", "\t"):
            blocks[current].append(raw)
        elif raw.strip():
            current = None  # a prompt or another command's output
    return {name: _interface(name, lines) for name, lines in blocks.items()}


def _interface(name: str, lines: list[str]) -> IfconfigInterface:
    mtu = _MTU.search(lines[0])
    speed: int | None = None
    duplex: str | None = None
    ether: str | None = None
    status: str | None = None
    enabled: set[str] = set()
    for line in lines[1:]:
        # One source joins two lines ("hwaddr ...     media: ..."): look for the keys anywhere.
        media = re.search(r"media: (.*)$", line)
        if media is not None:
            chosen = re.search(r"\(([^)]*)\)", media.group(1))  # autoselect (what it chose)
            words = chosen.group(1) if chosen else media.group(1)
            found = _MEDIA_SPEED.search(words)
            if found is not None:
                value = float(found.group("n")) * (1000 if found.group("g") == "G" else 1)
                speed = int(value)
            if "full-duplex" in words:
                duplex = "full"
            elif "half-duplex" in words:
                duplex = "half"
        address = re.search(r"\b(?:ether|address:) ([0-9a-f]{2}(?::[0-9a-f]{2}){5})\b", line)
        if address is not None:
            ether = address.group(1)
        state = re.search(r"\bstatus: (.+?)\s*$", line)
        if state is not None:
            status = state.group(1)
        stripped = line.strip()
        if stripped.startswith(("options=", "enabled=")):
            listed = _LIST.search(stripped)
            if listed is not None:
                enabled.update(word for word in listed.group(1).split(",") if word)
        elif stripped.startswith("options "):  # FreeBSD 14 may print the words without a mask
            enabled.update(word for word in stripped[len("options ") :].split(",") if word)
    return IfconfigInterface(
        name, int(mtu.group(1)) if mtu else None, speed, duplex, ether, status, frozenset(enabled)
    )


# Linux's long names (``ethtool -k``) of what a BSD's capability words switch.
BSD_OFFLOADS = {
    "tcp-segmentation-offload": ("TSO4", "TSO6"),
    "large-receive-offload": ("LRO",),
    "rx-checksumming": ("RXCSUM", "IP4CSUM_Rx", "TCP4CSUM_Rx", "UDP4CSUM_Rx"),
    "tx-checksumming": ("TXCSUM", "IP4CSUM_Tx", "TCP4CSUM_Tx", "UDP4CSUM_Tx"),
}


def offloads_of(interface: IfconfigInterface) -> dict[str, bool]:
    """Offloads in ``ethtool -k``'s names: on when any of its capability words is enabled."""
    return {long: any(word in interface.enabled for word in words) for long, words in BSD_OFFLOADS.items()}


# --- netstat -i --------------------------------------------------------------------------------

# netstat's column -> Linux's /sys/class/net/IF/statistics name.
NETSTAT_COLUMNS = {
    "Ipkts": "rx_packets",
    "Ierrs": "rx_errors",
    "Idrop": "rx_dropped",
    "Idrops": "rx_dropped",
    "Ibytes": "rx_bytes",
    "Opkts": "tx_packets",
    "Oerrs": "tx_errors",
    "Obytes": "tx_bytes",
    "Drop": "tx_dropped",
    "Odrops": "tx_dropped",
}


def parse_netstat_interface(text: str, interface: str) -> dict[str, int]:
    """The link-level row (``<Link#N>``) of ``interface`` in ``netstat -i`` output, under
    Linux's counter names; several tables (``-b`` and without) are merged."""
    counters: dict[str, int] = {}
    header: list[str] = []
    for raw in text.replace("\r\n", "\n").splitlines():
        fields = raw.split()
        if fields[:2] == ["Name", "Mtu"]:
            header = fields
            continue
        if not header or not fields or fields[0].rstrip("*") != interface:
            continue
        if len(fields) < 3 or not fields[2].startswith("<Link"):
            continue
        for column, value in zip(header[4:], fields[4:], strict=False):
            name = NETSTAT_COLUMNS.get(column)
            if name is not None and value.isdigit():
                counters[name] = int(value)
    return counters


# --- USB -------------------------------------------------------------------------------------

_SPEEDS = {"LOW": 1.5, "FULL": 12.0, "HIGH": 480.0, "SUPER": 5000.0, "VARIABLE": 0.0}
_USBCONFIG_DEV = re.compile(
    r"^(?P<ugen>ugen\d+\.\d+): <(?P<what>.*)> at (?P<bus>usbus\d+).*?\bspd=(?P<spd>\w+)"
)
_USBCONFIG_DRV = re.compile(r"^(?P<ugen>ugen\d+\.\d+)\.\d+: (?P<driver>[a-z_]+\d+): <")
_RATE = re.compile(r"\((?P<n>\d+(?:\.\d+)?)(?P<u>[GM])bps\)")


@dataclass(frozen=True)
class UsbDevice:
    """One USB device: its speed and the driver instances attached to it."""

    name: str
    description: str
    speed_mbps: float | None
    drivers: tuple[str, ...] = ()
    usb_id: str | None = None  # "0b95:1790", where the listing names the IDs


def parse_usbconfig(text: str) -> list[UsbDevice]:
    """FreeBSD's ``usbconfig`` / ``usbconfig list`` / ``usbconfig show_ifdrv``."""
    devices: dict[str, UsbDevice] = {}
    for raw in text.replace("\r\n", "\n").splitlines():
        line = raw.strip()
        dev = _USBCONFIG_DEV.match(line)
        if dev is not None:
            rate = _RATE.search(line)
            speed = (
                float(rate.group("n")) * (1000 if rate.group("u") == "G" else 1)
                if rate
                else _SPEEDS.get(dev.group("spd"))
            )
            old = devices.get(dev.group("ugen"))
            devices[dev.group("ugen")] = UsbDevice(
                dev.group("ugen"), dev.group("what"), speed, old.drivers if old else ()
            )
            continue
        drv = _USBCONFIG_DRV.match(line)
        if drv is not None and drv.group("ugen") in devices:
            known = devices[drv.group("ugen")]
            devices[known.name] = UsbDevice(
                known.name, known.description, known.speed_mbps, (*known.drivers, drv.group("driver"))
            )
    return list(devices.values())


_USBDEVS_DEV = re.compile(r"^\s*(?:port \d+ )?addr (?P<addr>\d+): (?P<speed>[\w+]+) speed, (?P<rest>.*)$")
_USBDEVS_SPEEDS = {"low": 1.5, "full": 12.0, "high": 480.0, "super": 5000.0, "super+": 10000.0}


def parse_usbdevs(text: str) -> list[UsbDevice]:
    """NetBSD's ``usbdevs -v`` / ``usbdevs -dv``: devices with their speed, and the driver
    instances ``-d`` prints on the indented lines under each."""
    devices: list[UsbDevice] = []
    controller = ""
    for raw in text.replace("\r\n", "\n").splitlines():
        if raw.startswith("Controller "):
            controller = raw.split()[1].rstrip(":")
            continue
        dev = _USBDEVS_DEV.match(raw)
        if dev is not None:
            # "..., AX88179(0x1790), ASIX(0x0b95), rev 1.00": product, then vendor.
            ids = re.search(r"\(0x([0-9a-fA-F]{4})\), [^,]*\(0x([0-9a-fA-F]{4})\), rev\b", dev.group("rest"))
            devices.append(
                UsbDevice(
                    f"{controller} addr {dev.group('addr')}",
                    dev.group("rest"),
                    _USBDEVS_SPEEDS.get(dev.group("speed").lower()),
                    usb_id=f"{ids.group(2)}:{ids.group(1)}".lower() if ids else None,
                )
            )
            continue
        word = raw.strip()
        if devices and re.fullmatch(r"[a-z_]+\d+", word):
            last = devices[-1]
            devices[-1] = UsbDevice(
                last.name, last.description, last.speed_mbps, (*last.drivers, word), last.usb_id
            )
    return devices


def usb_id_of_instance(devices: list[UsbDevice], instance: str) -> str | None:
    """The vendor:product of the USB device a driver instance is attached to, where listed."""
    ids = {d.usb_id for d in devices if instance in d.drivers and d.usb_id}
    return ids.pop() if len(ids) == 1 else None


def usb_speed_of_instance(devices: list[UsbDevice], instance: str) -> float | None:
    """The speed of the USB device a driver instance (``ure0``) is attached to."""
    speeds = {d.speed_mbps for d in devices if instance in d.drivers and d.speed_mbps}
    return speeds.pop() if len(speeds) == 1 else None
