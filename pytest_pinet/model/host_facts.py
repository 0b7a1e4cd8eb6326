"""What a host is: typed facts gathered once per host per session (by ``host.facts``).

They live in the model because every measurement carries its hosts' facts into the store and
the reports, and neither should have to load the lab's SSH code to read them.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class InterfaceFacts:
    """What one network interface is and how it is set up."""

    name: str
    driver: str | None
    driver_version: str | None
    firmware: str | None
    bus_info: str | None
    speed_mbps: int | None
    duplex: str | None
    mtu: int | None
    offloads: dict[str, bool] = field(default_factory=dict)
    usb_speed_mbps: float | None = None
    carrier: bool | None = None  # link detected; None when the host did not say
    usb_id: str | None = None  # "0bda:8153" of a USB adapter
    # What reported speed and duplex when not the NIC itself: a virtual lab's cable says
    # "shaped veth" (its tbf rate is what it carries).
    reported_by: str = ""
    chip: str | None = None  # the PCI device behind the interface, where the host lists it
    rings: dict[str, int] = field(default_factory=dict)  # current ring sizes (ethtool -g): "rx", "tx"
    qdisc: str | None = None  # the root qdisc when the facts were read (before a test sets its own)


@dataclass(frozen=True)
class HostFacts:
    """What a host is: OS, kernel, board, CPU, clocks, thermal state, tools, interfaces."""

    host: str
    kernel: str
    os_name: str
    os_id: str
    os_version: str
    model: str
    cpus: int
    governor: str | None
    cpu_mhz: float | None
    temperature_c: float | None
    throttled: tuple[str, ...] | None
    iperf3_version: str | None
    interfaces: dict[str, InterfaceFacts] = field(default_factory=dict)
    arch: str = ""  # `uname -m`
    # The catalogue image pinet verified on this board, from the board's marker; "" when
    # there is none or the running kernel is not the one it was verified with.
    image: str = ""
    image_marker: dict[str, str] = field(default_factory=dict)
    cpu_model: str = ""  # "Cortex-A72", "ARM Cortex-A53 r0p4", "Intel(R) Core(TM) ..."
    # The kernel installed for the next boot where the host tells it apart from the running
    # one (FreeBSD's freebsd-version -k); "" when unknown.
    kernel_installed: str = ""
    # USB 3 host controllers with no driver attached (every USB adapter then runs at USB 2).
    undriven_usb3: tuple[str, ...] = ()
    # The sysctls a night's figures depend on (host.platform.linux.PATH_SYSCTLS), as read.
    sysctls: dict[str, str] = field(default_factory=dict)
    # A Pi's VideoCore firmware and EEPROM bootloader builds ("vc-firmware", "bootloader").
    firmware_versions: dict[str, str] = field(default_factory=dict)

    def summary(self) -> str:
        """One line for reports: model, OS, kernel."""
        model = self.model or "unknown model"
        return f"{self.host}: {model}, {self.os_name}, kernel {self.kernel}, {self.cpus} CPUs"

    def firmware_of(self, interface: str) -> str:
        """Firmware of ``interface``, or of the first interface that names one when the
        measurement's link is not an interface of this host (routes, disks)."""
        own = self.interfaces.get(interface)
        if own is not None:
            return own.firmware or ""
        return next((i.firmware or "" for i in self.interfaces.values()), "")
