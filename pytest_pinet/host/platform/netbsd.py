"""NetBSD: ``intrctl`` for interrupts per CPU and their routing, ``envstat`` for heat,
``usbdevs -dv`` for USB speeds, ``kern.cp_time`` for CPU time (all CPUs together: the
command line reaches no per-CPU figure).
"""

from __future__ import annotations

from collections.abc import Sequence

from ..facts_parse import InterruptTable
from ..shell import as_root, quiet, quote, section, sequence
from .base import FACTS_MARK, Argv
from .bsd import LINUX_ONLY, BsdPlatform
from .bsd_devices import UsbDevice, parse_usbdevs
from .bsd_parse import envstat_temperature, parse_intrctl_list, parse_vmstat_i


class NetBsdPlatform(BsdPlatform):
    """NetBSD 9 and later (evbarm on a Raspberry Pi, amd64 on PCs)."""

    name = "netbsd"
    usb_command = ("usbdevs", "-dv")
    interrupts_command = f"{quiet(['intrctl', 'list'])} || {quiet(['vmstat', '-i'])}"
    cpu_time_key = "kern.cp_time"
    why_not = LINUX_ONLY

    def facts_script(self, interfaces: Sequence[str]) -> str:
        return sequence(
            *self._common_facts(),
            section(FACTS_MARK, "model"),
            f"{quiet(['sysctl', '-n', 'machdep.dmi.system-product'])} "
            f"|| {quiet(['sysctl', '-n', 'hw.model'])}",
            section(FACTS_MARK, "cpu-model"),
            # x86 names its CPU in machdep.cpu_brand; ARM only in the boot messages (its
            # hw.model is the board).
            f"{quiet(['sysctl', '-n', 'machdep.cpu_brand'])} "
            f"|| {quiet(['grep', '-m', '1', 'cpu0 at ', '/var/run/dmesg.boot'])}",
            section(FACTS_MARK, "freq"),
            f"{quiet(['sysctl', '-n', 'machdep.cpu.frequency.current'])} "
            f"|| {quiet(['sysctl', '-n', 'machdep.est.frequency.current'])}",
            section(FACTS_MARK, "temp"),
            self.temperature_command(),
            *self._interface_facts(interfaces),
        )

    def usb_devices(self, text: str) -> list[UsbDevice]:
        return parse_usbdevs(text)

    def nic_commands(self, interface: str) -> list[str]:
        # NetBSD's -b table has bytes only; the plain one has packets and errors.
        return [quiet(["netstat", "-I", interface, "-n"]), quiet(["netstat", "-I", interface, "-b", "-n"])]

    def temperature_command(self) -> str:
        return quiet(["envstat"])

    def temperature_c(self, text: str) -> float | None:
        return envstat_temperature(text)

    def interrupt_table(self, text: str) -> InterruptTable:
        if "interrupt id" in text:
            return parse_intrctl_list(text)[0]
        return parse_vmstat_i(text)

    def sysctl_write(self, key: str, value: str) -> Argv:
        return ["sysctl", "-w", f"{key}={value}"]

    def pinnable_irq(self, irq: str) -> bool:
        return bool(irq.strip())  # intrctl names every interrupt it can route

    # IRQ affinity: intrctl routes an interrupt id ("msix0 vec 0") to one CPU.
    def irq_affinity_read_script(self, irq: str) -> str:
        return quiet(["intrctl", "list"])

    def parse_affinity(self, text: str, irq: str) -> str:
        return parse_intrctl_list(text)[1].get(irq, "")

    def irq_affinity_write_script(self, irq: str, cpus: str, sudo: bool) -> str:
        if not cpus.isdigit():
            raise ValueError(f"NetBSD routes an interrupt to one CPU, not {cpus!r}")
        return quote(as_root(["intrctl", "affinity", "-i", irq, "-c", cpus], sudo))


NETBSD = NetBsdPlatform()
