"""Linux: ``/proc``, ``/sys``, ``ethtool``, ``tc`` and ``ip``.

The paths and commands here are what a Raspberry Pi OS, Debian or Ubuntu host has; a fact a
host lacks (no ``vcgencmd`` off a Pi, no cpufreq in a VM) prints nothing and is reported as
unknown, never as zero.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from ..facts_parse import InterruptTable, parse_proc_interrupts, parse_udp_snmp
from ..shell import (
    checked_interface,
    quiet,
    quote,
    read_file_script,
    read_line_script,
    section,
    sequence,
    when_present_script,
    write_file_script,
)
from .base import FACTS_MARK, SNAPSHOT_MARK, Argv, Platform
from .linux_facts import linux_facts

if TYPE_CHECKING:
    from ...model.host_facts import HostFacts

THERMAL_ZONE = "/sys/class/thermal/thermal_zone0/temp"
CPUFREQ_ROOT = "/sys/devices/system/cpu"
CPU0_FREQ = f"{CPUFREQ_ROOT}/cpu0/cpufreq"
USB_FILES = ("idVendor", "idProduct", "speed")  # of the USB device behind an interface
WITHOUT_NUL = quote(["tr", "-d", "\\000"])  # the device tree's model string ends in a NUL
# The sysctls a night's figures depend on, kept in every host's fingerprint (model.fingerprint):
# socket buffers, congestion control, the default qdisc, forwarding, the softirq's budget.
PATH_SYSCTLS = (
    "net.core.rmem_max", "net.core.wmem_max", "net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem",
    "net.ipv4.tcp_congestion_control", "net.core.default_qdisc", "net.ipv4.ip_forward",
    "net.core.netdev_max_backlog", "net.core.netdev_budget", "net.ipv4.tcp_timestamps",
    "net.ipv4.tcp_sack", "net.core.rps_sock_flow_entries",
)  # fmt: skip


class LinuxPlatform(Platform):
    """Linux hosts: boards running Raspberry Pi OS and peers running any distribution."""

    name = "linux"
    image_marker = "/var/lib/pinet/image"

    user_prelude = "PATH=$PATH:/usr/local/sbin:/usr/sbin:/sbin; export PATH; "

    def facts_script(self, interfaces: Sequence[str]) -> str:
        parts = [
            section(FACTS_MARK, "kernel"),
            quote(["uname", "-r"]),
            section(FACTS_MARK, "arch"),
            quote(["uname", "-m"]),
            section(FACTS_MARK, "image"),
            read_file_script(self.image_marker),
            section(FACTS_MARK, "os"),
            read_file_script("/etc/os-release"),
            section(FACTS_MARK, "model"),
            # Pis name themselves in the device tree; PCs and VMs through DMI.
            f"({WITHOUT_NUL} < {quote(['/proc/device-tree/model'])} "
            f"|| {quote(['cat', '/sys/class/dmi/id/product_name'])}) 2>/dev/null",
            section(FACTS_MARK, "cpus"),
            quote(["nproc"]),
            section(FACTS_MARK, "cpu-model"),
            f"{quiet(['lscpu'])} | {quote(['sed', '-n', 's/^Model name: *//p'])}",
            section(FACTS_MARK, "governor"),
            read_file_script(f"{CPU0_FREQ}/scaling_governor"),
            section(FACTS_MARK, "freq"),
            read_file_script(f"{CPU0_FREQ}/scaling_cur_freq"),
            section(FACTS_MARK, "temp"),
            read_file_script(THERMAL_ZONE),
            section(FACTS_MARK, "throttled"),
            quiet(["vcgencmd", "get_throttled"]),
            section(FACTS_MARK, "iperf3"),
            f"{quiet(['iperf3', '--version'])} | {quote(['head', '-n', '1'])}",
            section(FACTS_MARK, "lsusb"),
            quiet(["lsusb", "-t"]),
            section(FACTS_MARK, "sysctl"),
            quiet(["sysctl", *PATH_SYSCTLS]),
            # A Pi's VideoCore firmware and its EEPROM's bootloader (nothing off a Pi).
            section(FACTS_MARK, "vc-firmware"),
            quiet(["vcgencmd", "version"]),
            section(FACTS_MARK, "bootloader"),
            quiet(["vcgencmd", "bootloader_version"]),
        ]
        for name in interfaces:
            checked_interface(name)
            parts += [
                section(FACTS_MARK, f"if-info:{name}"),
                quiet(["ethtool", "-i", name]),
                section(FACTS_MARK, f"if-settings:{name}"),
                quiet(["ethtool", name]),
                section(FACTS_MARK, f"if-features:{name}"),
                quiet(["ethtool", "-k", name]),
                section(FACTS_MARK, f"if-mtu:{name}"),
                read_file_script(self.interface_file(name, "mtu")),
                # A USB adapter's IDs and the bus speed it enumerated at (nothing for a NIC on
                # another bus); the alias a virtual lab's cable describes itself with.
                section(FACTS_MARK, f"if-usb:{name}"),
                quiet(["cat", *(self.interface_file(name, f"device/../{f}") for f in USB_FILES)]),
                section(FACTS_MARK, f"if-alias:{name}"),
                read_file_script(self.interface_file(name, "ifalias")),
                section(FACTS_MARK, f"if-rings:{name}"),
                quiet(["ethtool", "-g", name]),
                section(FACTS_MARK, f"if-qdisc:{name}"),
                quiet(["tc", "qdisc", "show", "dev", name]),
            ]
        return sequence(*parts)

    def snapshot_script(self, interface: str, counters: Sequence[str]) -> str:
        statistics = self.interface_file(interface, "statistics")
        # Builtins for the one-line files and the absent tool: on a QEMU board the snapshot of
        # a routed test's two ports took 0.9-1.0 s before and after every run, mostly in the
        # processes started for them.
        nic = [
            f"{quote(['printf', '%s ', counter])}; {read_line_script(f'{statistics}/{counter}')} || echo"
            for counter in counters
        ]
        return sequence(
            section(SNAPSHOT_MARK, "interrupts"),
            quote(["cat", "/proc/interrupts"]),
            section(SNAPSHOT_MARK, "stat"),
            quote(["grep", "^cpu", "/proc/stat"]),
            section(SNAPSHOT_MARK, "nic"),
            *nic,
            section(SNAPSHOT_MARK, "temp"),
            read_line_script(THERMAL_ZONE),
            section(SNAPSHOT_MARK, "throttled"),
            when_present_script(["vcgencmd", "get_throttled"]),
        )

    def receive_counter_script(self, interface: str, port: int) -> str:
        # ``ss`` first, then the counter and the clock with shell builtins where the shell has
        # them (bash: ``read``, ``$EPOCHREALTIME``; ``date`` in dash and BusyBox).  ss reads
        # the sockets at the end of its run, which takes 4 to 10 ms to start: with the clock
        # read before it, that varying delay moved per-second rates at 941 Mbit/s by a
        # standard deviation of 2.8 Mbit/s, and with the clock read after it, by 0.5 (same
        # run, same samples).  No ``ss`` leaves the interface counter.
        counter = quote([f"{self.interface_file(interface, 'statistics')}/rx_bytes"])
        sockets = quiet(["ss", "-tinH", "state", "established", f"( sport = :{int(port)} )"])
        return sequence(
            f"s=$({sockets} | {quote(['grep', '-o', 'bytes_received:[0-9]*'])})",
            f"read -r b < {counter}",
            "LC_ALL=C",
            "t=$EPOCHREALTIME",
            'echo "${t:-$(date +%s.%N)}"',
            'echo "nic $b"',
            'echo "$s"',
        )

    def udp_receiver_script(self, interface: str) -> str:
        # Both counters first, with the shell's own ``read`` (no program started between
        # them), then the clock: bash's ``$EPOCHREALTIME`` a few microseconds later, else
        # ``date`` (dash, BusyBox).  A window of two readings divides the counters' difference
        # by the clocks'.  With ``cat`` and ``grep`` started after ``date`` the counters were
        # read milliseconds after the clock, by a varying amount; at 81,274 frames/s each
        # millisecond is 81 frames, and single runs of the namespace link counted up to
        # 0.12 % more than the wire carries.  ``date`` itself still left +-0.05 % in a 1.6 s
        # window (81,304 frames/s once); the builtin clock leaves nothing to see.
        packets = quote([f"{self.interface_file(interface, 'statistics')}/rx_packets"])
        return sequence(
            f"{{ read -r p < {packets}; }} 2>/dev/null",
            "h=; u=",
            'while read -r k v; do case $k in Udp:) if [ -z "$h" ]; then h=$v; else u=$v; fi;; esac;'
            " done < /proc/net/snmp",
            "LC_ALL=C",
            "t=$EPOCHREALTIME",
            'echo "${t:-$(date +%s.%N)}"',
            'echo "${p:-}"',
            'echo "Udp: $h"',
            'echo "Udp: $u"',
        )

    def drop_caches_script(self, sudo: bool) -> str:
        return f"{quote(['sync'])}; {write_file_script('/proc/sys/vm/drop_caches', '3', sudo)}"

    def facts_from_sections(
        self, host: str, sections: Mapping[str, str], interfaces: Sequence[str]
    ) -> HostFacts:
        return linux_facts(host, sections, interfaces)

    def interrupt_table(self, text: str) -> InterruptTable:
        return parse_proc_interrupts(text)

    def cpu_rows(self, text: str) -> dict[str, list[int]]:
        rows = {}
        for line in text.splitlines():
            parts = line.split()
            if parts and parts[0].startswith("cpu") and all(p.isdigit() for p in parts[1:]):
                rows[parts[0]] = [int(p) for p in parts[1:]]
        return rows

    def nic_counters(self, text: str, interface: str) -> dict[str, int]:
        nic = {}
        for line in text.splitlines():
            name, _, value = line.partition(" ")
            if value.strip().isdigit():
                nic[name] = int(value)
        return nic

    def temperature_c(self, text: str) -> float | None:
        value = text.strip()
        return int(value) / 1000 if value.lstrip("-").isdigit() else None

    def udp_counters(self, text: str) -> dict[str, int]:
        return parse_udp_snmp(text)

    def device_irqs_script(self, interface: str) -> str | None:
        # Up from the interface's device to the first with interrupts: a PCI function's MSI
        # vectors (virtio-net, an e1000) or its legacy line; a USB adapter's are its xHCI's.
        return (
            f"dev=$(readlink -f /sys/class/net/{checked_interface(interface)}/device) || exit 3; "
            'while [ -n "$dev" ] && [ "$dev" != / ] && [ "$dev" != /sys/devices ]; do '
            'if [ -d "$dev/msi_irqs" ]; then ls "$dev/msi_irqs"; exit 0; fi; '
            'if [ -r "$dev/irq" ] && [ "$(cat "$dev/irq")" != 0 ]; then cat "$dev/irq"; exit 0; fi; '
            'dev=$(dirname "$dev"); done; exit 4'
        )

    def irq_affinity_read_script(self, irq: str) -> str:
        return quote(["cat", self.irq_affinity_file(irq)])

    def parse_affinity(self, text: str, irq: str) -> str:
        return text.strip()

    def irq_affinity_write_script(self, irq: str, cpus: str, sudo: bool) -> str:
        return write_file_script(self.irq_affinity_file(irq), cpus, sudo)

    def mtu_read_script(self, interface: str) -> str:
        return quote(["cat", self.interface_file(interface, "mtu")])

    def parse_offloads(self, text: str, interface: str) -> dict[str, bool]:
        return {
            line.split(":")[0].strip(): "on" in line.split(":", 1)[1]
            for line in text.splitlines()[1:]
            if ":" in line
        }

    def renegotiate(self, interface: str) -> list[Argv]:
        return [["ethtool", "-r", checked_interface(interface)]]

    def interface_file(self, interface: str, name: str) -> str:
        return f"/sys/class/net/{checked_interface(interface)}/{name}"

    def queue_directory(self, interface: str) -> str:
        return self.interface_file(interface, "queues")

    def irq_affinity_file(self, irq: str) -> str:
        if not irq.isdigit():
            raise ValueError(f"not an IRQ number: {irq!r}")
        return f"/proc/irq/{irq}/smp_affinity_list"

    def cpufreq_root(self) -> str:
        return CPUFREQ_ROOT

    def interrupts_read(self) -> Argv:
        return ["cat", "/proc/interrupts"]

    def sysctl_read(self, key: str) -> Argv:
        return ["sysctl", "-n", key]

    def sysctl_write(self, key: str, value: str) -> Argv:
        return ["sysctl", "-w", f"{key}={value}"]

    def route_show(self, prefix: str) -> Argv:
        return ["ip", "route", "show", prefix]

    def route_replace(self, route: Sequence[str]) -> Argv:
        return ["ip", "route", "replace", *route]

    def route_delete(self, route: Sequence[str]) -> Argv:
        return ["ip", "route", "del", *route]

    def set_mtu(self, interface: str, mtu: int) -> Argv:
        return ["ip", "link", "set", "dev", checked_interface(interface), "mtu", int(mtu)]

    def offloads_read(self, interface: str) -> Argv:
        return ["ethtool", "-k", checked_interface(interface)]

    def offloads_write(self, interface: str, features: Mapping[str, bool]) -> Argv:
        argv: Argv = ["ethtool", "-K", checked_interface(interface)]
        for feature, on in features.items():
            argv += [feature, "on" if on else "off"]
        return argv

    def qdisc_show(
        self, interface: str, *, root: bool = False, detail: bool = False, stats: bool = False
    ) -> Argv:
        flags = (["-d"] if detail else []) + (["-s"] if stats else [])
        where = ["root"] if root else []
        return ["tc", *flags, "qdisc", "show", "dev", checked_interface(interface), *where]

    def qdisc_replace(self, interface: str, where: Sequence[str], spec: Sequence[str]) -> Argv:
        return ["tc", "qdisc", "replace", "dev", checked_interface(interface), *where, *spec]

    def qdisc_delete(self, interface: str, where: Sequence[str]) -> Argv:
        return ["tc", "qdisc", "del", "dev", checked_interface(interface), *where]


LINUX = LinuxPlatform()
