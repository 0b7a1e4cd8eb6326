"""What is set on a host's CPUs for a measurement: which CPU takes a NIC's interrupts (IRQ
affinity), which CPUs steer its packets (RPS/XPS queue masks), the cpufreq governor and a fixed
clock.  Each is a :class:`~pytest_pinet.host.tunables.Tunable`: probed, applied, read back and
restored."""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import Unsupported
from .remote import RemoteHost
from .shell import checked_interface
from .tunables import (
    GOVERNOR,
    Tunable,
    glob_settings,
    read_batch,
    read_setting,
    read_settings,
    write_batch,
    write_setting,
    write_settings,
)


@dataclass
class IrqAffinity(Tunable):
    """Pin an interface's IRQs to CPUs, in /proc/interrupts order (seed: TX/RX to 1/2).

    Drivers name their interrupts differently (the Pi 4's genet ``eth0``, virtio
    ``virtio0-input.0``, a USB adapter shares ``xhci_hcd``), so the IRQs are those the
    inventory names (``irqs``), else those called like the interface, else those of the
    interface's device (its own or its bus controller's, from sysfs)."""

    irq_name: str  # the interface
    cpus: tuple[int, ...]
    irqs: tuple[str, ...] = ()  # named by the inventory: /proc/interrupts names or numbers
    name: str = "irq_affinity"

    def describe(self) -> str:
        which = f"IRQs {', '.join(self.irqs)}" if self.irqs else f"IRQs of {self.irq_name}"
        return f"{which} -> CPUs {list(self.cpus)}"

    def _irqs(self, host: RemoteHost) -> list[str]:
        platform = host.platform
        table = platform.interrupt_table(host.run_shell(platform.interrupts_script(), timeout=15).stdout)
        named = self.irqs or (self.irq_name,)
        rows = [line.irq for name in named for line in table.for_name(name)]
        rows += [name for name in named if name in table.lines]
        if not rows and not self.irqs:
            rows = [irq for irq in self._device_irqs(host) if irq in table.lines]
        irqs = list(dict.fromkeys(irq for irq in rows if platform.pinnable_irq(irq)))
        if not irqs:
            what = (
                f"among {list(self.irqs)} (named by the inventory)"
                if self.irqs
                else f"of {self.irq_name}, by name or from its device (name them in the inventory: "
                "links[].board_irqs)"
            )
            raise Unsupported(self.name, host.name, f"no IRQ {what} in the interrupt table")
        if table.cpus > 1 and max(self.cpus) >= table.cpus:
            raise Unsupported(self.name, host.name, f"CPU {max(self.cpus)} asked, host has {table.cpus}")
        return irqs

    def _device_irqs(self, host: RemoteHost) -> list[str]:
        """The IRQ numbers sysfs lists for the interface's device or the nearest bus device
        above it (a USB adapter's are its host controller's); [] where the platform has none."""
        script = host.platform.device_irqs_script(checked_interface(self.irq_name))
        if script is None:
            return []
        result = host.run_shell(script, timeout=15)
        return [word for word in result.stdout.split() if word.isdigit()] if result.ok else []

    def _wanted(self, irqs: list[str]) -> dict[str, str]:
        return {irq: str(self.cpus[n % len(self.cpus)]) for n, irq in enumerate(irqs)}

    def _affinities(self, host: RemoteHost, irqs: list[str]) -> dict[str, str]:
        """Where each IRQ is routed ("" when unknown), in one round trip: a virtio NIC with
        four queues has nine IRQs."""
        platform = host.platform
        if len(irqs) == 1:  # one round trip either way: the platform's own script, unmarked
            result = host.run_shell(platform.irq_affinity_read_script(irqs[0]), timeout=15)
            return {irqs[0]: platform.parse_affinity(result.stdout, irqs[0]) if result.ok else ""}
        shown = read_batch(host, {irq: platform.irq_affinity_read_script(irq) for irq in irqs})
        return {irq: platform.parse_affinity(shown.get(irq, ""), irq) for irq in irqs}

    def _route(self, host: RemoteHost, irq: str, cpus: str) -> tuple[bool, str]:
        script = host.platform.irq_affinity_write_script(irq, cpus, host.sudo)
        result = host.run_shell(script, timeout=15, root=True)
        return result.ok, result.stderr.strip()

    def _route_all(self, host: RemoteHost, wanted: dict[str, str]) -> dict[str, tuple[bool, str]]:
        """Route every IRQ in one round trip; one refused is tried once more alone, for the
        error its own stderr gives."""
        if len(wanted) <= 1:
            return {irq: self._route(host, irq, cpus) for irq, cpus in wanted.items()}
        platform = host.platform
        failed = write_batch(
            host,
            {irq: platform.irq_affinity_write_script(irq, cpus, host.sudo) for irq, cpus in wanted.items()},
        )
        return {
            irq: self._route(host, irq, cpus) if irq in failed else (True, "") for irq, cpus in wanted.items()
        }

    def read(self, host: RemoteHost) -> dict[str, str]:
        return self._affinities(host, self._irqs(host))

    def apply(self, host: RemoteHost) -> None:
        wanted = self._wanted(self._irqs(host))
        for irq, (ok, error) in self._route_all(host, wanted).items():
            if not ok:
                # xhci_hcd on the Pi 4 answers EINVAL: its affinity cannot be changed.
                raise Unsupported(
                    self.name, host.name, f"IRQ {irq} refused CPU {wanted[irq]}: {error or 'write failed'}"
                )

    def restore(self, host: RemoteHost, saved: dict[str, str]) -> None:
        self._route_all(host, {irq: value for irq, value in saved.items() if value})

    def is_applied(self, host: RemoteHost) -> bool:
        return self.read(host) == self._wanted(self._irqs(host))


def cpu_mask(host: RemoteHost, cpus: str | tuple[int, ...]) -> str:
    """Hex CPU mask; ``"all"`` means every CPU the host has."""
    if cpus == "all":
        count = int(host.check(["nproc"]).strip() or "1")
        return format((1 << count) - 1, "x")
    assert isinstance(cpus, tuple)
    return format(sum(1 << c for c in cpus), "x")


def _same_mask(a: str, b: str) -> bool:
    try:
        return int(a.replace(",", ""), 16) == int(b.replace(",", ""), 16)
    except ValueError:
        return False


@dataclass
class QueueMask(Tunable):
    """RPS (receive) or XPS (transmit) CPU mask on every queue of an interface."""

    kind: str  # "rps" or "xps"
    interface: str
    cpus: str | tuple[int, ...]
    name: str = ""

    def __post_init__(self) -> None:
        checked_interface(self.interface)
        if self.kind not in ("rps", "xps"):
            raise ValueError(f"kind must be rps or xps, got {self.kind!r}")
        self.name = self.kind

    def describe(self) -> str:
        return f"{self.kind.upper()} on {self.interface}: CPUs {self.cpus}"

    def _current(self, host: RemoteHost) -> dict[str, str]:
        """Every queue's mask file and what it holds, in two round trips (a glob, one read)."""
        queues = "rx-*" if self.kind == "rps" else "tx-*"
        base = host.platform.queue_directory(self.interface)
        files = [f"{q}/{self.kind}_cpus" for q in glob_settings(host, base, queues)]
        present = {f: v for f, v in read_settings(host, files).items() if v is not None}
        if not present:
            raise Unsupported(self.name, host.name, f"{self.interface} has no {self.kind}_cpus queue files")
        return present

    def read(self, host: RemoteHost) -> dict[str, str]:
        return {f: value or "0" for f, value in self._current(host).items()}

    def apply(self, host: RemoteHost) -> None:
        mask = cpu_mask(host, self.cpus)
        written = write_settings(host, dict.fromkeys(self._current(host), mask))
        for path, (ok, error) in written.items():
            if not ok:
                raise Unsupported(self.name, host.name, f"{path} refused mask {mask}: {error}")

    def restore(self, host: RemoteHost, saved: dict[str, str]) -> None:
        write_settings(host, saved)

    def is_applied(self, host: RemoteHost) -> bool:
        mask = cpu_mask(host, self.cpus)
        return all(_same_mask(v, mask) for v in self.read(host).values())


@dataclass
class Governor(Tunable):
    """cpufreq governor on every CPU."""

    governor: str
    name: str = "governor"

    def __post_init__(self) -> None:
        if not GOVERNOR.match(self.governor):
            raise ValueError(f"not a governor name: {self.governor!r}")

    def describe(self) -> str:
        return f"cpufreq governor {self.governor}"

    def _files(self, host: RemoteHost) -> list[str]:
        files = [
            f"{d}/cpufreq/scaling_governor"
            for d in glob_settings(host, host.platform.cpufreq_root(), "cpu[0-9]*")
        ]
        present = [f for f in files if read_setting(host, f) is not None]
        if not present:
            raise Unsupported(self.name, host.name, "no cpufreq (scaling_governor) on this host")
        available = (
            read_setting(host, f"{host.platform.cpufreq_root()}/cpu0/cpufreq/scaling_available_governors")
            or ""
        )
        if available and self.governor not in available.split():
            raise Unsupported(self.name, host.name, f"governor {self.governor} not in {available!r}")
        return present

    def read(self, host: RemoteHost) -> dict[str, str]:
        return {f: read_setting(host, f) or "" for f in self._files(host)}

    def apply(self, host: RemoteHost) -> None:
        for path in self._files(host):
            ok, error = write_setting(host, path, self.governor)
            if not ok:
                raise Unsupported(self.name, host.name, f"{path}: {error}")

    def restore(self, host: RemoteHost, saved: dict[str, str]) -> None:
        for path, value in saved.items():
            if value:
                write_setting(host, path, value)

    def is_applied(self, host: RemoteHost) -> bool:
        return all(v == self.governor for v in self.read(host).values())


@dataclass
class FixedClock(Tunable):
    """Fix the CPU clock (seed: 1500 and 2000 MHz) by pinning min and max frequency."""

    mhz: int
    name: str = "cpu_mhz"

    def describe(self) -> str:
        return f"CPU clock fixed at {self.mhz} MHz"

    def _cpus(self, host: RemoteHost) -> list[str]:
        dirs = [
            d
            for d in glob_settings(host, host.platform.cpufreq_root(), "cpu[0-9]*")
            if read_setting(host, f"{d}/cpufreq/scaling_max_freq")
        ]
        if not dirs:
            raise Unsupported(self.name, host.name, "no cpufreq on this host")
        low = int(read_setting(host, f"{dirs[0]}/cpufreq/cpuinfo_min_freq") or 0)
        high = int(read_setting(host, f"{dirs[0]}/cpufreq/cpuinfo_max_freq") or 0)
        if not low <= self.mhz * 1000 <= high:
            raise Unsupported(
                self.name, host.name, f"{self.mhz} MHz outside {low // 1000}-{high // 1000} MHz"
            )
        return dirs

    def read(self, host: RemoteHost) -> dict[str, tuple[str, str]]:
        return {
            d: (
                read_setting(host, f"{d}/cpufreq/scaling_min_freq") or "",
                read_setting(host, f"{d}/cpufreq/scaling_max_freq") or "",
            )
            for d in self._cpus(host)
        }

    def apply(self, host: RemoteHost) -> None:
        khz = str(self.mhz * 1000)
        for d in self._cpus(host):
            # Raise max first when going up, lower min first when going down.
            for name in ("scaling_max_freq", "scaling_min_freq", "scaling_max_freq"):
                write_setting(host, f"{d}/cpufreq/{name}", khz)

    def restore(self, host: RemoteHost, saved: dict[str, tuple[str, str]]) -> None:
        for d, (low, high) in saved.items():
            write_setting(host, f"{d}/cpufreq/scaling_max_freq", high)
            write_setting(host, f"{d}/cpufreq/scaling_min_freq", low)

    def is_applied(self, host: RemoteHost) -> bool:
        khz = str(self.mhz * 1000)
        return all(v == (khz, khz) for v in self.read(host).values())
