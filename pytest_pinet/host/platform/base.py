"""What pinet asks of a host's operating system, as one interface per OS.

Facts, observer snapshots and tunables need OS-specific commands (Linux reads ``/proc`` and
``/sys`` and runs ``tc``, ``ethtool`` and ``ip``; a BSD has ``sysctl`` trees and ``ifconfig``).
Everything OS-specific is a method here, so another OS is one more subclass beside
:mod:`.linux` and the rooms above it do not change.  Scripts print their parts behind section
markers that the shared parsers in :mod:`..facts` and :mod:`...traffic.observers` split.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from ..shell import as_root, quote, sequence, write_file_script

if TYPE_CHECKING:
    from ...model.host_facts import HostFacts
    from ..facts_parse import InterruptTable

FACTS_MARK = "@@pinet:"
SNAPSHOT_MARK = "@@obs:"
Argv = list[str | int | float]


class Platform(ABC):
    """The commands of one operating system."""

    name: str
    # Shell text run before every command of a login user other than root: an ordinary
    # user's PATH often lacks the directories of the admin tools pinet reads with.
    user_prelude: str = ""
    # Where a board keeps the name of the catalogue image pinet flashed and verified on it
    # (on the card itself: reflashing by hand removes it with everything else).
    image_marker: str

    def image_marker_script(self, value: str, sudo: bool) -> str:
        """Write ``value`` (one line) to :attr:`image_marker` (its directory made first)."""
        directory = self.image_marker.rsplit("/", 1)[0]
        return sequence(
            quote(as_root(["mkdir", "-p", directory], sudo)),
            write_file_script(self.image_marker, value, sudo),
        )

    def cannot(self, what: str) -> str | None:
        """Why this OS cannot take a tunable or a suite (``rps``, ``governor``, ``qdisc``,
        ``storage`` ...), or None when it can: the caller raises Unsupported with the reason."""
        return None

    # --- reading what the scripts printed ----------------------------------------------------
    @abstractmethod
    def facts_from_sections(
        self, host: str, sections: Mapping[str, str], interfaces: Sequence[str]
    ) -> HostFacts:
        """The host's facts from the sections :meth:`facts_script` printed."""

    @abstractmethod
    def interrupt_table(self, text: str) -> InterruptTable:
        """The interrupt table of a snapshot's ``interrupts`` section."""

    @abstractmethod
    def cpu_rows(self, text: str) -> dict[str, list[int]]:
        """CPU time counters of a snapshot's ``stat`` section, per core (``cpu0`` ...) and for
        all (``cpu``), in ``/proc/stat`` order: user nice system idle iowait irq softirq steal."""

    @abstractmethod
    def nic_counters(self, text: str, interface: str) -> dict[str, int]:
        """A snapshot's ``nic`` section under Linux's statistics names (``rx_bytes`` ...)."""

    @abstractmethod
    def temperature_c(self, text: str) -> float | None:
        """The temperature a ``temp`` section printed; None when it printed none."""

    @abstractmethod
    def udp_counters(self, text: str) -> dict[str, int]:
        """The UDP counters :meth:`udp_receiver_script` printed after its first two lines,
        under the names of Linux's ``Udp:`` line (``InDatagrams``, ``NoPorts``, ``RcvbufErrors``)."""

    def interrupts_script(self) -> str:
        """Print the interrupt table :meth:`interrupt_table` reads."""
        return quote(self.interrupts_read())

    def device_irqs_script(self, interface: str) -> str | None:
        """Print the IRQ numbers of ``interface``'s device, one per word; None where the
        platform has no such listing (the interface's IRQs are then found by name only)."""
        return None

    def pinnable_irq(self, irq: str) -> bool:
        """Whether an interrupt table's row is one IRQ that can be pinned (not ``IPI0``)."""
        return irq.isdigit()

    @abstractmethod
    def irq_affinity_read_script(self, irq: str) -> str:
        """Print what :meth:`parse_affinity` reads: the CPUs ``irq`` is routed to."""

    @abstractmethod
    def parse_affinity(self, text: str, irq: str) -> str:
        """The CPU list ``irq`` is routed to ("" when unknown)."""

    @abstractmethod
    def irq_affinity_write_script(self, irq: str, cpus: str, sudo: bool) -> str:
        """Route ``irq`` to ``cpus`` (a CPU list such as ``2`` or ``0-3``)."""

    @abstractmethod
    def mtu_read_script(self, interface: str) -> str:
        """Print the interface's MTU (nothing when there is no such interface)."""

    @abstractmethod
    def parse_offloads(self, text: str, interface: str) -> dict[str, bool]:
        """What :meth:`offloads_read` printed, under ``ethtool -k``'s long names."""

    def offload_switches(self) -> frozenset[str] | None:
        """The offload names :meth:`offloads_write` can switch; None: any ethtool name."""
        return None

    # --- one round trip each: facts, snapshots, the adaptive sampler ----------------------
    @abstractmethod
    def facts_script(self, interfaces: Sequence[str]) -> str:
        """Print every fact of the host and of ``interfaces`` behind :data:`FACTS_MARK` sections."""

    @abstractmethod
    def snapshot_script(self, interface: str, counters: Sequence[str]) -> str:
        """Print interrupts, CPU times, NIC ``counters``, temperature and throttling flags."""

    @abstractmethod
    def receive_counter_script(self, interface: str, port: int) -> str:
        """Print the clock, the interface's received bytes and the TCP bytes received on ``port``."""

    @abstractmethod
    def udp_receiver_script(self, interface: str) -> str:
        """Print the clock (seconds, with a fraction), the interface's received packets, then
        the kernel's ``Udp:`` counter lines."""

    @abstractmethod
    def drop_caches_script(self, sudo: bool) -> str:
        """Write dirty pages out and empty the page cache (a disk read must not hit memory)."""

    # --- files of the kernel's settings ----------------------------------------------------
    @abstractmethod
    def interface_file(self, interface: str, name: str) -> str:
        """A per-interface setting file (``mtu``)."""

    @abstractmethod
    def queue_directory(self, interface: str) -> str:
        """Where the interface's per-queue settings (RPS/XPS masks) live."""

    @abstractmethod
    def irq_affinity_file(self, irq: str) -> str:
        """The file that pins one IRQ to CPUs."""

    @abstractmethod
    def cpufreq_root(self) -> str:
        """The directory holding one ``cpuN`` directory per CPU."""

    # --- commands (argument lists) ------------------------------------------------------------
    @abstractmethod
    def interrupts_read(self) -> Argv:
        """Print the interrupt table (which IRQ serves which device, counts per CPU)."""

    @abstractmethod
    def sysctl_read(self, key: str) -> Argv:
        """Print one kernel setting's value."""

    @abstractmethod
    def sysctl_write(self, key: str, value: str) -> Argv:
        """Set one kernel setting."""

    @abstractmethod
    def route_show(self, prefix: str) -> Argv:
        """Print the route to ``prefix``."""

    @abstractmethod
    def route_replace(self, route: Sequence[str]) -> Argv:
        """Add or replace a route (``[prefix, "via", gateway, ...]``)."""

    @abstractmethod
    def route_delete(self, route: Sequence[str]) -> Argv:
        """Remove exactly one route."""

    @abstractmethod
    def set_mtu(self, interface: str, mtu: int) -> Argv:
        """Set an interface's MTU."""

    @abstractmethod
    def offloads_read(self, interface: str) -> Argv:
        """Print the interface's offload features."""

    @abstractmethod
    def renegotiate(self, interface: str) -> list[Argv]:
        """Commands (run as root, in order) that make the interface negotiate its link afresh:
        the cure the health check tries first for a cable that came up at the wrong speed."""

    @abstractmethod
    def offloads_write(self, interface: str, features: Mapping[str, bool]) -> Argv:
        """Switch offload features on or off."""

    @abstractmethod
    def qdisc_show(
        self, interface: str, *, root: bool = False, detail: bool = False, stats: bool = False
    ) -> Argv:
        """Print the interface's queueing disciplines."""

    @abstractmethod
    def qdisc_replace(self, interface: str, where: Sequence[str], spec: Sequence[str]) -> Argv:
        """Put a queueing discipline at ``where`` (``["root"]`` or ``["parent", "1:1"]``)."""

    @abstractmethod
    def qdisc_delete(self, interface: str, where: Sequence[str]) -> Argv:
        """Remove the queueing discipline at ``where``."""
