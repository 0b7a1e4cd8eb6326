"""QNX Neutrino: ``pidin info`` for the CPUs, ``uname -a`` for the board, and io-sock's
``ifconfig``/``netstat``, which are FreeBSD's (QNX 8's io-sock follows FreeBSD's network stack),
read with the BSD parsers.

What QNX has no command for (per-CPU time, interrupt counts, a temperature) is an empty figure,
never a made-up one, and the Linux and BSD knobs QNX lacks are refused with a QNX reason
(:data:`QNX_CANNOT`), so a test asking for them is skipped naming QNX. The UDP generator is
built on the board where a compiler exists, as on a BSD, or is the lab's own build, named by the
host's ``udpgen:`` key in the inventory (QNX targets are cross-compiled with qcc).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from ...model.host_facts import HostFacts
from ..facts_parse import InterruptTable, image_of, parse_image_marker
from ..shell import checked_interface, quiet, quote, read_file_script, section, sequence
from .base import FACTS_MARK, SNAPSHOT_MARK
from .bsd import BsdPlatform
from .bsd_devices import UsbDevice
from .bsd_parse import uname_line

# "Processor1: 1091555459 Cortex-A72 1500MHz FPU": the CPU's id, model and clock.
_PROCESSOR = re.compile(r"^Processor(?P<n>\d+):\s+\S+\s+(?P<model>.+?)\s+(?P<mhz>\d+)MHz\b")

QNX_CANNOT = {
    "rps": "no RPS/XPS on QNX: io-sock spreads receive work over its own threads",
    "xps": "no RPS/XPS on QNX: io-sock spreads receive work over its own threads",
    "governor": "no cpufreq governors on QNX: the board's startup sets the clock",
    "cpu_mhz": "no cpufreq scaling on QNX: pinet sets clocks only through Linux's cpufreq",
    "qdisc": "no Linux qdiscs on QNX: the qdisc suite is Linux-only",
    "route": "pinet sets peer routes with iproute2: routed peers must run Linux (a QNX board routes)",
    "storage": "no way to empty the page cache on QNX: disk reads would hit memory",
    "irq_affinity": "no IRQ affinity command on QNX that pinet drives (InterruptAttach is per thread)",
    "interrupts": "no per-CPU interrupt counts on QNX (pidin irqs lists handlers, not counts)",
    "cpu_time": "no per-CPU time counters on QNX's command line (hogs samples, it does not count)",
    "temperature": "no CPU temperature on QNX's command line",
}


def parse_pidin_info(text: str) -> tuple[int, str, float | None]:
    """``pidin info`` as (CPUs, the first CPU's model, its clock in MHz)."""
    processors = [found for found in map(_PROCESSOR.match, text.splitlines()) if found is not None]
    if not processors:
        return 0, "", None
    first = processors[0]
    return len(processors), first.group("model").strip(), float(first.group("mhz"))


def board_of_uname(text: str) -> str:
    """The board ``uname -a`` names on QNX ("QNX host 8.0.0 2025/07/30-19:17:34EDT
    RaspberryPi4B aarch64le": its fifth word); "" when it names none."""
    words = uname_line(text).split()
    return words[4] if len(words) >= 6 and words[0] == "QNX" else ""


class QnxPlatform(BsdPlatform):
    """QNX Neutrino 7.1 (io-pkt) and 8.0 (io-sock), as on a Raspberry Pi."""

    name = "qnx"
    image_marker = "/data/var/pinet/image"
    user_prelude = "PATH=$PATH:/system/bin:/proc/boot:/usr/sbin:/sbin; export PATH; "
    interrupts_command = "true"
    cpu_time_key = ""
    why_not = QNX_CANNOT

    def facts_script(self, interfaces: Sequence[str]) -> str:
        return sequence(
            section(FACTS_MARK, "kernel"),
            quote(["uname", "-r"]),
            section(FACTS_MARK, "arch"),
            quote(["uname", "-m"]),
            section(FACTS_MARK, "uname"),
            quote(["uname", "-a"]),
            section(FACTS_MARK, "image"),
            read_file_script(self.image_marker),
            section(FACTS_MARK, "pidin"),
            quiet(["pidin", "info"]),
            section(FACTS_MARK, "iperf3"),
            f"{quiet(['iperf3', '--version'])} | {quote(['head', '-n', '1'])}",
            *self._interface_facts(interfaces),
        )

    def facts_from_sections(self, host: str, s: Mapping[str, str], interfaces: Sequence[str]) -> HostFacts:
        cpus, cpu_model, cpu_mhz = parse_pidin_info(s.get("pidin", ""))
        kernel = s.get("kernel", "").strip()
        marker = parse_image_marker(s.get("image", ""))
        return HostFacts(
            host=host,
            kernel=kernel,
            os_name=f"QNX {kernel}".strip(),
            os_id=self.name,
            os_version=kernel,
            model=board_of_uname(s.get("uname", "")),
            cpus=cpus,
            governor=None,
            cpu_mhz=cpu_mhz,
            temperature_c=None,
            throttled=None,
            iperf3_version=s.get("iperf3") or None,
            interfaces={name: self._interface_facts_of(name, s, [], []) for name in interfaces},
            arch=s.get("arch", "").strip(),
            image=image_of(marker, kernel),
            image_marker=marker,
            cpu_model=cpu_model,
        )

    def usb_devices(self, text: str) -> list[UsbDevice]:
        return []  # QNX's `usb` lists devices without the speed pinet checks

    # --- observers: what QNX's command line gives, and nothing made up where it gives none ----
    def snapshot_script(self, interface: str, counters: Sequence[str]) -> str:
        checked_interface(interface)
        return sequence(
            section(SNAPSHOT_MARK, "interrupts"),
            "true",
            section(SNAPSHOT_MARK, "stat"),
            "true",
            section(SNAPSHOT_MARK, "nic"),
            *self.nic_commands(interface),
            section(SNAPSHOT_MARK, "temp"),
            "true",
        )

    def temperature_command(self) -> str:
        return "true"

    def temperature_c(self, text: str) -> float | None:
        return None

    def cpu_rows(self, text: str) -> dict[str, list[int]]:
        return {}

    def interrupt_table(self, text: str) -> InterruptTable:
        return InterruptTable(cpus=0, lines={})

    def pinnable_irq(self, irq: str) -> bool:
        return False

    def irq_affinity_read_script(self, irq: str) -> str:
        raise NotImplementedError(self._no("irq_affinity"))

    def parse_affinity(self, text: str, irq: str) -> str:
        raise NotImplementedError(self._no("irq_affinity"))

    def irq_affinity_write_script(self, irq: str, cpus: str, sudo: bool) -> str:
        raise NotImplementedError(self._no("irq_affinity"))


QNX = QnxPlatform()
