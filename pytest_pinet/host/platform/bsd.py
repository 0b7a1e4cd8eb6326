"""FreeBSD and NetBSD: ``sysctl``, ``ifconfig``, ``netstat``, ``vmstat``/``intrctl``, ``route``.

What a lab measures on a BSD board is what the seed did: TCP with iperf3 and UDP rates with
the generator (``sendto``, ``sendmmsg``, raw frames through BPF), with the facts and observers
that explain a figure.  The Linux-only knobs say so through :meth:`Platform.cannot` (no RPS
or XPS, no cpufreq governors, no Linux qdiscs), and a test asking for them is skipped with
that reason, never failed.

Every script is built from quoted parts (``host.shell``); the interface name is checked
before it reaches one.  The outputs are parsed by :mod:`.bsd_parse`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from ...model.host_facts import HostFacts, InterfaceFacts
from ..facts_parse import InterruptTable, image_of, parse_image_marker, parse_os_release
from ..shell import checked_interface, quiet, quote, read_file_script, section, sequence
from .base import FACTS_MARK, SNAPSHOT_MARK, Argv, Platform
from .bsd_devices import (
    PciDevice,
    UsbDevice,
    offloads_of,
    parse_ifconfig,
    parse_netstat_interface,
    parse_pciconf,
    undriven_xhci,
    usb_id_of_instance,
    usb_speed_of_instance,
)
from .bsd_parse import (
    cp_times_rows,
    cpu_model_of,
    freq_levels,
    mhz,
    parse_freebsd_version,
    parse_netstat_udp,
    parse_vmstat_i,
    sysctl_temperature,
    sysctl_value,
    uname_line,
)

# ethtool's short offload names -> the ifconfig switch of a BSD.
IFCONFIG_OFFLOADS = {"tso": "tso", "lro": "lro", "rx": "rxcsum", "tx": "txcsum"}
# The receiver's clock: GNU-style %N where date(1) has it; a line a parser can tell apart
# (it is not a number) where it has not.
CLOCK = quote(["date", "+%s.%N"])
NIC_BYTES = (
    'awk \'NR==1{for(i=1;i<=NF;i++) if($i=="Ibytes") c=i} $3 ~ /^<Link/ {if (c) print "nic", $c; exit}\''
)


def driver_of(interface: str) -> str:
    """A BSD names an interface after its driver: ``genet0`` is driven by ``genet``."""
    return re.sub(r"\d+$", "", interface)


class BsdPlatform(Platform):
    """What FreeBSD and NetBSD share: ifconfig, netstat, route, sysctl."""

    image_marker = "/var/db/pinet/image"
    user_prelude = "PATH=$PATH:/usr/local/sbin:/usr/local/bin:/usr/sbin:/sbin; export PATH; "
    usb_command: tuple[str, ...] = ()
    interrupts_command: str = ""
    cpu_time_key = "kern.cp_time"
    why_not: Mapping[str, str] = {}

    # --- facts ----------------------------------------------------------------------------
    def _common_facts(self) -> list[str]:
        return [
            section(FACTS_MARK, "kernel"),
            quote(["uname", "-r"]),
            section(FACTS_MARK, "arch"),
            quote(["uname", "-m"]),
            section(FACTS_MARK, "uname"),
            quote(["uname", "-sr"]),
            section(FACTS_MARK, "image"),
            read_file_script(self.image_marker),
            section(FACTS_MARK, "os"),
            read_file_script("/etc/os-release"),
            section(FACTS_MARK, "cpus"),
            quiet(["sysctl", "-n", "hw.ncpu"]),
            section(FACTS_MARK, "iperf3"),
            f"{quiet(['iperf3', '--version'])} | {quote(['head', '-n', '1'])}",
            section(FACTS_MARK, "usb"),
            quiet(self.usb_command),
        ]

    def _interface_facts(self, interfaces: Sequence[str]) -> list[str]:
        parts = []
        for name in interfaces:
            checked_interface(name)
            parts += [section(FACTS_MARK, f"if-config:{name}"), quiet(["ifconfig", name])]
        return parts

    def facts_from_sections(self, host: str, s: Mapping[str, str], interfaces: Sequence[str]) -> HostFacts:
        os_release = parse_os_release(s.get("os", ""))
        uname = uname_line(s.get("uname", "")).split()
        usb = self.usb_devices(s.get("usb", ""))
        pci = parse_pciconf(s.get("pci", ""))
        result = {name: self._interface_facts_of(name, s, usb, pci) for name in interfaces}
        kernel = s.get("kernel", "")
        versions = parse_freebsd_version(s.get("freebsd-version", ""))
        marker = parse_image_marker(s.get("image", ""))
        cpus = sysctl_value(s.get("cpus", ""))
        levels = freq_levels(s.get("freq-levels", ""))
        return HostFacts(
            host=host,
            kernel=kernel,
            os_name=os_release.get("PRETTY_NAME") or " ".join(uname),
            os_id=os_release.get("ID") or self.name,
            os_version=os_release.get("VERSION_ID") or (versions.userland if versions else kernel),
            model=sysctl_value(s.get("model", "")),
            cpus=int(cpus) if cpus.isdigit() else 0,
            governor=None,
            # A CPU without a clock driver has no dev.cpu.0.freq; one with a single level runs there.
            cpu_mhz=mhz(s.get("freq", "")) or (float(levels[0]) if len(levels) == 1 else None),
            temperature_c=self.temperature_c(s.get("temp", "")),
            throttled=None,
            iperf3_version=s.get("iperf3") or None,
            interfaces=result,
            arch=s.get("arch", "").strip(),
            image=image_of(marker, kernel),
            image_marker=marker,
            cpu_model=cpu_model_of(s.get("cpu-model", "")),
            kernel_installed=versions.installed_kernel if versions else "",
            undriven_usb3=undriven_xhci(pci),
        )

    def _interface_facts_of(
        self, name: str, s: Mapping[str, str], usb: list[UsbDevice], pci: list[PciDevice]
    ) -> InterfaceFacts:
        """One interface from its ifconfig (media, status, MTU), the USB device its driver
        instance is attached to and the PCI device of the same name."""
        seen = parse_ifconfig(s.get(f"if-config:{name}", "")).get(name)
        instance = self.usb_instance(name, s)
        status = seen.status if seen else None
        chip = next((d.describe() for d in pci if d.name == instance), None)
        return InterfaceFacts(
            name=name,
            driver=driver_of(instance) if seen is not None else None,
            driver_version=None,
            firmware=None,
            bus_info=None,
            speed_mbps=seen.speed_mbps if seen else None,
            duplex=seen.duplex if seen else None,
            mtu=seen.mtu if seen else None,
            offloads=offloads_of(seen) if seen else {},
            usb_speed_mbps=usb_speed_of_instance(usb, instance),
            carrier=None if status is None else status == "active",
            usb_id=usb_id_of_instance(usb, instance),
            chip=chip,
        )

    def usb_devices(self, text: str) -> list[UsbDevice]:
        """The USB devices the facts' ``usb`` section lists."""
        raise NotImplementedError

    def usb_instance(self, interface: str, sections: Mapping[str, str]) -> str:
        """The driver instance behind ``interface`` (itself, unless a pseudo-interface)."""
        return interface

    # --- observers ------------------------------------------------------------------------
    def snapshot_script(self, interface: str, counters: Sequence[str]) -> str:
        checked_interface(interface)
        return sequence(
            section(SNAPSHOT_MARK, "interrupts"),
            self.interrupts_command,
            section(SNAPSHOT_MARK, "stat"),
            quiet(["sysctl", "-n", self.cpu_time_key]),
            section(SNAPSHOT_MARK, "nic"),
            *self.nic_commands(interface),
            section(SNAPSHOT_MARK, "temp"),
            self.temperature_command(),
        )

    def nic_commands(self, interface: str) -> list[str]:
        """Commands printing ``interface``'s counters in ``netstat -i`` tables."""
        return [quiet(["netstat", "-I", interface, "-b", "-d", "-n"])]

    def temperature_command(self) -> str:
        """Print the CPU temperature in a form :meth:`temperature_c` reads."""
        raise NotImplementedError

    def nic_counters(self, text: str, interface: str) -> dict[str, int]:
        return parse_netstat_interface(text, interface)

    def cpu_rows(self, text: str) -> dict[str, list[int]]:
        return cp_times_rows(text)

    def temperature_c(self, text: str) -> float | None:
        return sysctl_temperature(text) if text.strip() else None

    def interrupt_table(self, text: str) -> InterruptTable:
        return parse_vmstat_i(text)

    def interrupts_script(self) -> str:
        return self.interrupts_command

    def receive_counter_script(self, interface: str, port: int) -> str:
        # No ``ss``: the interface's received bytes are the sampler's figure.
        checked_interface(interface)
        return sequence(CLOCK, f"{quiet(['netstat', '-I', interface, '-b', '-n'])} | {NIC_BYTES}")

    def udp_receiver_script(self, interface: str) -> str:
        checked_interface(interface)
        packets = (
            f"{quiet(['netstat', '-I', interface, '-n'])} | "
            "awk 'NR==1{for(i=1;i<=NF;i++) if($i==\"Ipkts\") c=i} $3 ~ /^<Link/ {print $c; exit}'"
        )
        return f"{CLOCK}; {packets}; {quote(['netstat', '-s', '-p', 'udp'])}"

    def udp_counters(self, text: str) -> dict[str, int]:
        return parse_netstat_udp(text)

    def drop_caches_script(self, sudo: bool) -> str:
        # No drop_caches on a BSD: the disk suite says so through cannot("storage").
        return quote(["sync"])

    # --- what a BSD cannot do the Linux way ---------------------------------------------------
    def cannot(self, what: str) -> str | None:
        return self.why_not.get(what)

    def _no(self, what: str) -> str:
        return self.why_not.get(what) or f"{what} has no {self.name} implementation in pinet"

    def interface_file(self, interface: str, name: str) -> str:
        raise NotImplementedError(self._no("sysfs"))

    def queue_directory(self, interface: str) -> str:
        raise NotImplementedError(self._no("rps"))

    def irq_affinity_file(self, irq: str) -> str:
        raise NotImplementedError(self._no("irq_affinity"))

    def cpufreq_root(self) -> str:
        raise NotImplementedError(self._no("governor"))

    def mtu_read_script(self, interface: str) -> str:
        checked_interface(interface)
        return f"{quote(['ifconfig', interface])} | sed -n 's/.* mtu \\([0-9]*\\).*/\\1/p'"

    def interrupts_read(self) -> Argv:
        return ["vmstat", "-i"]

    def sysctl_read(self, key: str) -> Argv:
        return ["sysctl", "-n", key]

    def sysctl_write(self, key: str, value: str) -> Argv:
        return ["sysctl", f"{key}={value}"]

    def route_show(self, prefix: str) -> Argv:
        return ["route", "-n", "get", prefix]

    def route_replace(self, route: Sequence[str]) -> Argv:
        raise NotImplementedError(self._no("route"))

    def route_delete(self, route: Sequence[str]) -> Argv:
        raise NotImplementedError(self._no("route"))

    def renegotiate(self, interface: str) -> list[Argv]:
        # Down and up again restarts autonegotiation on every BSD driver (no ethtool -r).
        name = checked_interface(interface)
        return [["ifconfig", name, "down"], ["ifconfig", name, "up"]]

    def set_mtu(self, interface: str, mtu: int) -> Argv:
        return ["ifconfig", checked_interface(interface), "mtu", int(mtu)]

    def offloads_read(self, interface: str) -> Argv:
        return ["ifconfig", checked_interface(interface)]

    def parse_offloads(self, text: str, interface: str) -> dict[str, bool]:
        seen = parse_ifconfig(text).get(interface)
        return offloads_of(seen) if seen is not None else {}

    def offload_switches(self) -> frozenset[str]:
        return frozenset(IFCONFIG_OFFLOADS)

    def offloads_write(self, interface: str, features: Mapping[str, bool]) -> Argv:
        argv: Argv = ["ifconfig", checked_interface(interface)]
        for feature, on in features.items():
            switch = IFCONFIG_OFFLOADS.get(feature)
            if switch is None:
                raise ValueError(f"{self.name} has no ifconfig switch for offload {feature!r}")
            argv.append(switch if on else f"-{switch}")
        return argv

    def qdisc_show(
        self, interface: str, *, root: bool = False, detail: bool = False, stats: bool = False
    ) -> Argv:
        raise NotImplementedError(self._no("qdisc"))

    def qdisc_replace(self, interface: str, where: Sequence[str], spec: Sequence[str]) -> Argv:
        raise NotImplementedError(self._no("qdisc"))

    def qdisc_delete(self, interface: str, where: Sequence[str]) -> Argv:
        raise NotImplementedError(self._no("qdisc"))


LINUX_ONLY = {
    "rps": "no RPS/XPS queue masks on a BSD: its network stack spreads receive work with netisr",
    "xps": "no RPS/XPS queue masks on a BSD: its network stack spreads receive work with netisr",
    "governor": "no cpufreq governors on a BSD: powerd or the clock sysctl sets the frequency",
    "cpu_mhz": "no cpufreq scaling files on a BSD: pinet sets clocks only through Linux's cpufreq",
    "qdisc": "no Linux qdiscs on a BSD (ALTQ and dummynet are other machinery): "
    "the qdisc suite is Linux-only",
    "route": "pinet sets peer routes with iproute2: routed peers must run Linux",
    "storage": "no way to empty the page cache on a BSD (no drop_caches): disk reads would hit memory",
}
