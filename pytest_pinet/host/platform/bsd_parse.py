"""Parsers for what FreeBSD and NetBSD hosts print about themselves.

A BSD has no ``/proc`` or ``/sys``: the same facts come from ``sysctl``, ``ifconfig``,
``netstat``, ``vmstat -i`` / ``sysctl hw.intrs`` (FreeBSD), ``intrctl list`` (NetBSD),
``usbconfig`` / ``usbdevs`` and ``envstat``.  Each parser takes the text as a real machine
prints it (tested on the recordings under ``fixtures/bsd``, with their sources) and returns
the shapes the Linux parsers return, so the rooms above them stay OS-blind: an
:class:`InterruptTable` with per-CPU counts, CPU time rows in ``/proc/stat`` order, NIC
counters under Linux's statistics names.  A figure a host did not print is absent, never 0.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..facts_parse import InterruptTable, IrqLine

# --- uname -------------------------------------------------------------------------------------

UNAME_OS = {"linux": "linux", "freebsd": "freebsd", "netbsd": "netbsd", "qnx": "qnx"}


def os_of_uname(text: str) -> str:
    """The platform key of ``uname -s`` (or the first word of ``uname -a``); "" when unknown."""
    words = text.strip().split()
    return UNAME_OS.get(words[0].lower(), "") if words else ""


# --- sysctl ------------------------------------------------------------------------------------

# "dev.cpu.0.freq: 600" (FreeBSD), "machdep.cpu.frequency.current = 600" (NetBSD).
_SYSCTL_LINE = re.compile(r"^\s*(?P<name>[A-Za-z_][\w%-]*(?:\.[\w%-]+)+)\s*(?::|=)[ \t]?(?P<value>.*)$")


def sysctl_value(text: str) -> str:
    """One sysctl's value whichever way it was printed: FreeBSD's ``name: value``, NetBSD's
    ``name = value`` or ``sysctl -n``'s bare value (its first line)."""
    line = text.strip().split("\n", 1)[0] if text.strip() else ""
    found = _SYSCTL_LINE.match(line)
    return found.group("value").strip() if found else line.strip()


def sysctl_lines(text: str) -> dict[str, str]:
    """Every ``name: value`` / ``name = value`` line of ``sysctl -a`` (or a part of it), by
    name; a prompt or a value's continuation lines are skipped."""
    found: dict[str, str] = {}
    for raw in text.replace("\r\n", "\n").splitlines():
        line = _SYSCTL_LINE.match(raw)
        if line is not None:
            found[line.group("name")] = line.group("value").strip()
    return found


def freq_levels(text: str) -> list[int]:
    """``dev.cpu.0.freq_levels`` ("2501/35000 2500/35000 ... 800/9140": MHz/milliwatts, -1
    when the power is unknown) as the MHz of each level, highest first as FreeBSD lists them."""
    return [int(mhz) for mhz in re.findall(r"(?:^|\s)(\d+)/-?\d+", sysctl_value(text))]


def cpu_model_of(text: str) -> str:
    """The CPU a BSD names: ``machdep.cpu_brand`` / ``hw.model`` (x86, FreeBSD arm64), else the
    attach line of the boot messages ("cpu0 at cpus0: Cortex-A53 r0p4 (Cortex V8-A core)"), where
    NetBSD on ARM names it (its ``hw.model`` is the board)."""
    for raw in text.splitlines():
        attach = re.search(r"\bcpu\d+ at \w+: (?P<model>.+?)(?: \([^)]*\))?\s*$", raw)
        if attach is not None:
            return attach.group("model").strip()
    return sysctl_value(text)


@dataclass(frozen=True)
class FreebsdVersion:
    """``freebsd-version -kru``: installed kernel, running kernel, userland."""

    installed_kernel: str
    running_kernel: str
    userland: str

    @property
    def reboot_pending(self) -> bool:
        """A kernel was installed and the host has not booted it yet."""
        return self.installed_kernel != self.running_kernel


def parse_freebsd_version(text: str) -> FreebsdVersion | None:
    """The three versions ``freebsd-version -kru`` prints (a prompt line skipped); None when
    it printed other than three."""
    versions = [line.strip() for line in text.splitlines() if re.fullmatch(r"\s*\d+\.\d+-\S+\s*", line)]
    return FreebsdVersion(*versions) if len(versions) == 3 else None


# --- pciconf -----------------------------------------------------------------------------------

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


# --- interrupts --------------------------------------------------------------------------------

_VMSTAT_ROW = re.compile(r"^(?P<irq>\S+?):\s*(?P<names>.*?)\s+(?P<total>\d+)\s+(?P<rate>\d+)\s*$")


def device_names(text: str) -> tuple[str, ...]:
    """Device names of an interrupt row: ``igb0:rxq0`` names ``igb0:rxq0`` and ``igb0``."""
    names: list[str] = []
    for word in text.replace(",", " ").split():
        word = word.rstrip("*+")
        if not word:
            continue
        names.append(word)
        base = word.split(":", 1)[0]
        if base != word:
            names.append(base)
    return tuple(dict.fromkeys(names))


def parse_vmstat_i(text: str) -> InterruptTable:
    """``vmstat -i`` (FreeBSD and NetBSD): one total per source, no per-CPU split, so each row
    has one count (the table's ``cpus`` is 1: a column "all CPUs", not CPU 0)."""
    lines: dict[str, IrqLine] = {}
    for raw in text.replace("\r\n", "\n").splitlines():
        # The header is optional (``vmstat -i | grep igb0`` has none); a row must have the
        # ``name: devices total rate`` shape, which a prompt or the Total line has not.
        if raw.startswith("Total"):
            continue
        row = _VMSTAT_ROW.match(raw)
        if row is None:
            continue
        irq = row.group("irq")
        lines[irq] = IrqLine(
            irq, (int(row.group("total")),), "", None, None, device_names(row.group("names"))
        )
    return InterruptTable(1 if lines else 0, lines)


# "irq19: em0:irq0:37 @cpu0(domain0): 31369" (sysctl hw.intrs, FreeBSD)
_HW_INTRS = re.compile(
    r"^(?:hw\.intrs:\s*)?(?P<irq>irq\d+):(?P<names>.*?):\d+ @cpu(?P<cpu>\d+)\S*: (?P<n>\d+)\s*$"
)


def parse_hw_intrs(text: str, cpus: int) -> InterruptTable:
    """FreeBSD's ``sysctl hw.intrs``: each IRQ, the CPU it is bound to and its count, which
    becomes a per-CPU row (the count on the bound CPU, 0 on the others)."""
    lines: dict[str, IrqLine] = {}
    for raw in text.replace("\r\n", "\n").splitlines():
        row = _HW_INTRS.match(raw.strip())
        if row is None:
            continue
        cpu = int(row.group("cpu"))
        width = max(cpus, cpu + 1)
        counts = tuple(int(row.group("n")) if n == cpu else 0 for n in range(width))
        irq = row.group("irq")
        lines[irq] = IrqLine(irq, counts, "", None, None, device_names(row.group("names")))
    width = max([cpus, *(len(line.counts) for line in lines.values())]) if lines else 0
    return InterruptTable(width, {k: _padded(v, width) for k, v in lines.items()})


def _padded(line: IrqLine, width: int) -> IrqLine:
    if len(line.counts) == width:
        return line
    counts = line.counts + (0,) * (width - len(line.counts))
    return IrqLine(line.irq, counts, line.chip, line.hwirq, line.trigger, line.names)


def affinity_of_hw_intrs(text: str, irq: str) -> str:
    """The CPU ``irq`` (``irq19`` or ``19``) is bound to, from ``sysctl hw.intrs``; "" if absent."""
    wanted = irq if irq.startswith("irq") else f"irq{irq}"
    for raw in text.splitlines():
        row = _HW_INTRS.match(raw.strip())
        if row is not None and row.group("irq") == wanted:
            return row.group("cpu")
    return ""


_INTRCTL_CPU = re.compile(r"CPU#?(\d+)")


def parse_intrctl_list(text: str) -> tuple[InterruptTable, dict[str, str]]:
    """NetBSD's ``intrctl list``: per-CPU counts of each interrupt id (``msix0 vec 0``) and the
    CPUs it is routed to (the counts marked ``*``), as a list like ``0`` or ``0,2``."""
    cpus = 0
    lines: dict[str, IrqLine] = {}
    affinity: dict[str, str] = {}
    for raw in text.replace("\r\n", "\n").splitlines():
        if raw.lstrip().startswith("interrupt id"):
            cpus = len(_INTRCTL_CPU.findall(raw))
            continue
        if cpus == 0 or not raw.strip():
            continue
        fields = raw.split()
        # The counts are the last run of `cpus` numeric fields (each perhaps starred): an id
        # holds numbers too ("msix0 vec 0"), device names do not stand alone as numbers.
        for start in range(len(fields) - cpus, 0, -1):
            window = fields[start : start + cpus]
            if all(f.rstrip("*").isdigit() for f in window):
                break
        else:
            continue
        irq = " ".join(fields[:start])
        counts = tuple(int(f.rstrip("*")) for f in window)
        names = device_names(" ".join(fields[start + cpus :]))
        lines[irq] = IrqLine(irq, counts, "", None, None, names)
        affinity[irq] = ",".join(str(n) for n, f in enumerate(window) if f.endswith("*"))
    return InterruptTable(cpus, lines), affinity


def parse_cpuset_irq(text: str) -> str:
    """``cpuset -g -x N`` ("irq 16 mask: 0, 1, 2, 3") as a CPU list ("0,1,2,3"); "" if absent."""
    found = re.search(r"mask:\s*([0-9, ]+)", text)
    return ",".join(p.strip() for p in found.group(1).split(",") if p.strip()) if found else ""


# --- CPU time ----------------------------------------------------------------------------------


def cp_times_rows(text: str, per_cpu: bool | None = None) -> dict[str, list[int]]:
    """FreeBSD's ``kern.cp_times`` (user nice sys intr idle, per CPU, one line) or
    ``kern.cp_time`` (all CPUs), and NetBSD's ``kern.cp_time`` ("user = N, nice = N, ...");
    as ``/proc/stat`` rows (user nice system idle iowait irq softirq steal), ``cpu`` the sum.

    ``per_cpu``: the text is ``kern.cp_times`` (a one-CPU host prints five numbers there too,
    and they are cpu0's); None guesses from the key or the count."""
    body = text.split(":", 1)[1] if re.match(r"^\s*kern\.cp_times?\s*[:=]", text) else text
    body = body.split("=", 1)[1] if re.match(r"^\s*kern\.cp_times?\s*=", text) else body
    numbers = [int(n) for n in re.findall(r"-?\d+", body)]
    if not numbers or len(numbers) % 5:
        return {}
    rows: dict[str, list[int]] = {}
    total = [0] * 8
    if per_cpu is None:
        per_cpu = len(numbers) > 5 or "cp_times" in text
    for n in range(0, len(numbers), 5):
        user, nice, system, intr, idle = numbers[n : n + 5]
        row = [user, nice, system, idle, 0, intr, 0, 0]
        if per_cpu:
            rows[f"cpu{n // 5}"] = row
        total = [a + b for a, b in zip(total, row, strict=True)]
    return {"cpu": total, **rows}


# --- temperature and clock ---------------------------------------------------------------------


def sysctl_temperature(text: str) -> float | None:
    """``dev.cpu.0.temperature`` ("45.0C") or the Pi's ``hw.cpufreq.temperature`` (millidegrees)."""
    value = sysctl_value(text)
    celsius = re.fullmatch(r"(-?\d+(?:\.\d+)?)C", value)
    if celsius is not None:
        return float(celsius.group(1))
    if re.fullmatch(r"-?\d+", value):
        return int(value) / 1000
    return None


def envstat_temperature(text: str) -> float | None:
    """The first CPU temperature of NetBSD's ``envstat`` (degC), else the first temperature."""
    first: float | None = None
    for raw in text.splitlines():
        row = re.match(r"^\s*(?P<name>[^:\[]+):\s+(?P<value>-?\d+(?:\.\d+)?)\b.*\bdegC\s*$", raw)
        if row is None:
            continue
        value = float(row.group("value"))
        if "cpu" in row.group("name").lower():
            return value
        if first is None:
            first = value
    return first


def mhz(text: str) -> float | None:
    """A clock sysctl in MHz (``dev.cpu.0.freq``, ``machdep.cpu.frequency.current``)."""
    value = sysctl_value(text)
    return float(value) if re.fullmatch(r"\d+(?:\.\d+)?", value) else None


# --- USB ---------------------------------------------------------------------------------------

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


# --- UDP counters ------------------------------------------------------------------------------

_UDP_LINES = {
    "InDatagrams": re.compile(r"^\s*(\d+) delivered\s*$"),
    "NoPorts": re.compile(r"^\s*(\d+) dropped due to no socket\s*$"),
    "RcvbufErrors": re.compile(r"^\s*(\d+) dropped due to full socket buffers\s*$"),
    "Received": re.compile(r"^\s*(\d+) datagrams received\s*$"),
}


def parse_netstat_udp(text: str) -> dict[str, int]:
    """``netstat -s -p udp`` under the names of Linux's ``Udp:`` counters."""
    counters: dict[str, int] = {}
    for raw in text.splitlines():
        for name, pattern in _UDP_LINES.items():
            found = pattern.match(raw)
            if found is not None:
                counters[name] = int(found.group(1))
    return counters
