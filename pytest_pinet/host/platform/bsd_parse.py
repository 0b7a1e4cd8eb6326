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
from dataclasses import dataclass

from ..facts_parse import InterruptTable, IrqLine

# --- uname -------------------------------------------------------------------------------------

UNAME_OS = {"linux": "linux", "freebsd": "freebsd", "netbsd": "netbsd", "qnx": "qnx"}


def uname_line(text: str) -> str:
    """The line of ``uname -s``/``uname -a`` output that names a known system: a banner or an
    echoed command before it (a login shell's MOTD, a console's echo) is not the system."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    # The last line naming one (a MOTD may name a system too, but comes first), with what a
    # narrow terminal wrapped onto the lines after it.
    starts = [i for i, line in enumerate(lines) if line.split()[0].lower() in UNAME_OS]
    return " ".join(lines[starts[-1] :]) if starts else (lines[-1] if lines else "")


def os_of_uname(text: str) -> str:
    """The platform key of ``uname -s`` (or the first word of ``uname -a``); "" when unknown."""
    words = uname_line(text).split()
    return UNAME_OS.get(words[0].lower(), "") if words else ""


# --- sysctl ------------------------------------------------------------------------------------

# "dev.cpu.0.freq: 600" (FreeBSD), "machdep.cpu.frequency.current = 600" (NetBSD).
_SYSCTL_LINE = re.compile(r"^\s*(?P<name>[A-Za-z_][\w%-]*(?:\.[\w%-]+)+)\s*(?::|=)[ \t]?(?P<value>.*)$")


def sysctl_value(text: str) -> str:
    """One sysctl's value whichever way it was printed: FreeBSD's ``name: value``, NetBSD's
    ``name = value`` or ``sysctl -n``'s bare value. Lines before it (a banner, an echoed
    command) are not the value: the last ``name: value`` line wins, else the last line."""
    lines = [line for line in text.replace("\r\n", "\n").splitlines() if line.strip()]
    named = [found for found in map(_SYSCTL_LINE.match, lines) if found is not None]
    if named:
        return named[-1].group("value").strip()
    return lines[-1].strip() if lines else ""


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


# --- interrupts ------------------------------------------------------------------------------

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


# --- UDP counters ----------------------------------------------------------------------------

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
