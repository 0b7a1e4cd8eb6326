"""FreeBSD: ``sysctl hw.intrs`` for interrupts and their CPUs, ``cpuset -x`` to pin them,
``kern.cp_times`` per CPU, ``usbconfig`` for USB speeds, ``dev.cpu.0`` for clock and heat.

A USB Ethernet adapter shows as ``ueN``, a pseudo-interface over the driver instance
(``ure0``, ``axge0``) that ``net.ue.N.%parent`` names: that instance is what ``usbconfig``
lists with the adapter's speed.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from ..facts_parse import InterruptTable
from ..shell import as_root, quiet, quote, section, sequence
from .base import FACTS_MARK
from .bsd import LINUX_ONLY, BsdPlatform
from .bsd_devices import UsbDevice, parse_usbconfig
from .bsd_parse import affinity_of_hw_intrs, cp_times_rows, parse_hw_intrs, parse_vmstat_i

USB_ETHERNET = re.compile(r"^ue(\d+)$")


class FreeBsdPlatform(BsdPlatform):
    """FreeBSD 13 and later (Raspberry Pi 3/4 images and PCs)."""

    name = "freebsd"
    usb_command = ("usbconfig", "show_ifdrv")
    # hw.intrs names each IRQ's CPU (x86); arm64 has only vmstat -i's totals.
    interrupts_command = (
        f"{quiet(['sysctl', '-n', 'hw.ncpu'])} | {quote(['sed', 's/^/ncpu /'])}; "
        f"{quiet(['sysctl', '-n', 'hw.intrs'])} || {quiet(['vmstat', '-i'])}"
    )
    cpu_time_key = "kern.cp_times"
    why_not = LINUX_ONLY

    def facts_script(self, interfaces: Sequence[str]) -> str:
        parts = [
            *self._common_facts(),
            section(FACTS_MARK, "model"),
            # Boards name themselves in the device tree, PCs through SMBIOS.
            f"{quiet(['sysctl', '-n', 'hw.fdt.model'])} || {quiet(['kenv', '-q', 'smbios.system.product'])}",
            section(FACTS_MARK, "cpu-model"),
            quiet(["sysctl", "-n", "hw.model"]),
            section(FACTS_MARK, "freq"),
            quiet(["sysctl", "-n", "dev.cpu.0.freq"]),
            section(FACTS_MARK, "freq-levels"),
            quiet(["sysctl", "-n", "dev.cpu.0.freq_levels"]),
            section(FACTS_MARK, "freebsd-version"),
            quiet(["freebsd-version", "-kru"]),
            # The NIC chips and whether the USB 3 controller has a driver (a Pi 4's VL805).
            section(FACTS_MARK, "pci"),
            quiet(["pciconf", "-lv"]),
            section(FACTS_MARK, "temp"),
            self.temperature_command(),
            *self._interface_facts(interfaces),
        ]
        for name in interfaces:
            unit = USB_ETHERNET.match(name)
            if unit is not None:
                parts += [
                    section(FACTS_MARK, f"if-parent:{name}"),
                    quiet(["sysctl", "-n", f"net.ue.{unit.group(1)}.%parent"]),
                ]
        return sequence(*parts)

    def usb_devices(self, text: str) -> list[UsbDevice]:
        return parse_usbconfig(text)

    def cpu_rows(self, text: str) -> dict[str, list[int]]:
        # The snapshot reads kern.cp_times: five numbers there are a one-CPU host's cpu0.
        return cp_times_rows(text, per_cpu=True)

    def usb_instance(self, interface: str, sections: Mapping[str, str]) -> str:
        parent = sections.get(f"if-parent:{interface}", "").strip()
        return parent if re.fullmatch(r"[a-z_]+\d+", parent) else interface

    def temperature_command(self) -> str:
        return (
            f"{quiet(['sysctl', '-n', 'dev.cpu.0.temperature'])} "
            f"|| {quiet(['sysctl', '-n', 'hw.cpufreq.temperature'])}"
        )

    def interrupt_table(self, text: str) -> InterruptTable:
        first, _, rest = text.partition("\n")
        cpus = int(first[5:]) if first.startswith("ncpu ") and first[5:].isdigit() else 0
        body = rest if first.startswith("ncpu ") else text
        return parse_hw_intrs(body, cpus) if "@cpu" in body else parse_vmstat_i(body)

    def pinnable_irq(self, irq: str) -> bool:
        return re.fullmatch(r"irq\d+", irq) is not None  # not "cpu0:timer"

    # IRQ affinity: cpuset(1) binds an IRQ number; hw.intrs says where each IRQ is bound.
    def irq_affinity_read_script(self, irq: str) -> str:
        return quiet(["sysctl", "-n", "hw.intrs"])

    def parse_affinity(self, text: str, irq: str) -> str:
        return affinity_of_hw_intrs(text, irq)

    def irq_affinity_write_script(self, irq: str, cpus: str, sudo: bool) -> str:
        number = irq.removeprefix("irq")
        if not number.isdigit() or not re.fullmatch(r"[0-9,-]+", cpus):
            raise ValueError(f"not an IRQ and CPU list: {irq!r} {cpus!r}")
        return quote(as_root(["cpuset", "-l", cpus, "-x", number], sudo))


FREEBSD = FreeBsdPlatform()
