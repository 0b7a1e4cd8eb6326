"""Tunables: one setting of a host (IRQ affinity, RPS/XPS, governor, clock, qdisc, sysctl ...).

Each tunable can probe whether the host supports it, read its current state, apply the
wanted state, read it back, and restore what it found.  A board that cannot take a tunable
(xhci IRQ affinity answers EINVAL, an adapter without XPS queues, a VM without cpufreq) is
not a failed test: the tunable raises :class:`Unsupported` with the reason, and the caller
skips the test and records the fact.
"""

from __future__ import annotations

import ipaddress
import re
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any

from ..errors import LabFault, Unsupported
from .remote import RemoteHost
from .shell import checked_interface, glob_script, write_file_script

SYSCTL_KEY = re.compile(r"^[a-z0-9_.\-/]+$")
GOVERNOR = re.compile(r"^[a-z0-9_]+$")


def _write(host: RemoteHost, path: str, value: str) -> tuple[bool, str]:
    """Write ``value`` to a sysfs/procfs file; (ok, error text)."""
    result = host.run_shell(write_file_script(path, value, host.sudo), timeout=15, root=True)
    return result.ok, result.stderr.strip()


def _read(host: RemoteHost, path: str) -> str | None:
    result = host.run(["cat", path], timeout=15)
    return result.stdout.strip() if result.ok else None


def _glob(host: RemoteHost, pattern_dir: str, pattern: str) -> list[str]:
    """Files matching a fixed-directory glob on the host (the directory is quoted)."""
    result = host.run_shell(glob_script(pattern_dir, pattern), timeout=15)
    return [f"{pattern_dir}/{line.strip()}" for line in result.stdout.splitlines() if line.strip()]


class Tunable(ABC):
    """A setting that can be probed, applied, read back and restored."""

    name: str

    @abstractmethod
    def describe(self) -> str:
        """What this tunable sets, for reports."""

    @abstractmethod
    def read(self, host: RemoteHost) -> Any:
        """Current state (also what ``restore`` puts back); raises Unsupported if absent."""

    @abstractmethod
    def apply(self, host: RemoteHost) -> None:
        """Set the wanted state; raises Unsupported when the host refuses it."""

    @abstractmethod
    def restore(self, host: RemoteHost, saved: Any) -> None:
        """Put back what :meth:`read` returned before :meth:`apply`."""

    @abstractmethod
    def is_applied(self, host: RemoteHost) -> bool:
        """Read back: does the host now hold the wanted state?"""


@dataclass
class IrqAffinity(Tunable):
    """Pin the IRQs named ``irq_name`` to CPUs, in /proc/interrupts order (seed: TX/RX to 1/2)."""

    irq_name: str
    cpus: tuple[int, ...]
    name: str = "irq_affinity"

    def describe(self) -> str:
        return f"IRQs named {self.irq_name} -> CPUs {list(self.cpus)}"

    def _irqs(self, host: RemoteHost) -> list[str]:
        platform = host.platform
        table = platform.interrupt_table(host.run_shell(platform.interrupts_script(), timeout=15).stdout)
        irqs = [line.irq for line in table.for_name(self.irq_name) if platform.pinnable_irq(line.irq)]
        if not irqs:
            raise Unsupported(self.name, host.name, f"no IRQ named {self.irq_name!r} in the interrupt table")
        if table.cpus > 1 and max(self.cpus) >= table.cpus:
            raise Unsupported(self.name, host.name, f"CPU {max(self.cpus)} asked, host has {table.cpus}")
        return irqs

    def _wanted(self, irqs: list[str]) -> dict[str, str]:
        return {irq: str(self.cpus[n % len(self.cpus)]) for n, irq in enumerate(irqs)}

    def _affinity(self, host: RemoteHost, irq: str) -> str:
        result = host.run_shell(host.platform.irq_affinity_read_script(irq), timeout=15)
        return host.platform.parse_affinity(result.stdout, irq) if result.ok else ""

    def _route(self, host: RemoteHost, irq: str, cpus: str) -> tuple[bool, str]:
        script = host.platform.irq_affinity_write_script(irq, cpus, host.sudo)
        result = host.run_shell(script, timeout=15, root=True)
        return result.ok, result.stderr.strip()

    def read(self, host: RemoteHost) -> dict[str, str]:
        return {irq: self._affinity(host, irq) for irq in self._irqs(host)}

    def apply(self, host: RemoteHost) -> None:
        for irq, cpu in self._wanted(self._irqs(host)).items():
            ok, error = self._route(host, irq, cpu)
            if not ok:
                # xhci_hcd on the Pi 4 answers EINVAL: its affinity cannot be changed.
                raise Unsupported(
                    self.name, host.name, f"IRQ {irq} refused CPU {cpu}: {error or 'write failed'}"
                )

    def restore(self, host: RemoteHost, saved: dict[str, str]) -> None:
        for irq, value in saved.items():
            if value:
                self._route(host, irq, value)

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

    def _files(self, host: RemoteHost) -> list[str]:
        queues = "rx-*" if self.kind == "rps" else "tx-*"
        base = host.platform.queue_directory(self.interface)
        files = [f"{q}/{self.kind}_cpus" for q in _glob(host, base, queues)]
        present = [f for f in files if _read(host, f) is not None]
        if not present:
            raise Unsupported(self.name, host.name, f"{self.interface} has no {self.kind}_cpus queue files")
        return present

    def read(self, host: RemoteHost) -> dict[str, str]:
        return {f: _read(host, f) or "0" for f in self._files(host)}

    def apply(self, host: RemoteHost) -> None:
        mask = cpu_mask(host, self.cpus)
        for path in self._files(host):
            ok, error = _write(host, path, mask)
            if not ok:
                raise Unsupported(self.name, host.name, f"{path} refused mask {mask}: {error}")

    def restore(self, host: RemoteHost, saved: dict[str, str]) -> None:
        for path, value in saved.items():
            _write(host, path, value)

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
            f"{d}/cpufreq/scaling_governor" for d in _glob(host, host.platform.cpufreq_root(), "cpu[0-9]*")
        ]
        present = [f for f in files if _read(host, f) is not None]
        if not present:
            raise Unsupported(self.name, host.name, "no cpufreq (scaling_governor) on this host")
        available = (
            _read(host, f"{host.platform.cpufreq_root()}/cpu0/cpufreq/scaling_available_governors") or ""
        )
        if available and self.governor not in available.split():
            raise Unsupported(self.name, host.name, f"governor {self.governor} not in {available!r}")
        return present

    def read(self, host: RemoteHost) -> dict[str, str]:
        return {f: _read(host, f) or "" for f in self._files(host)}

    def apply(self, host: RemoteHost) -> None:
        for path in self._files(host):
            ok, error = _write(host, path, self.governor)
            if not ok:
                raise Unsupported(self.name, host.name, f"{path}: {error}")

    def restore(self, host: RemoteHost, saved: dict[str, str]) -> None:
        for path, value in saved.items():
            if value:
                _write(host, path, value)

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
            for d in _glob(host, host.platform.cpufreq_root(), "cpu[0-9]*")
            if _read(host, f"{d}/cpufreq/scaling_max_freq")
        ]
        if not dirs:
            raise Unsupported(self.name, host.name, "no cpufreq on this host")
        low = int(_read(host, f"{dirs[0]}/cpufreq/cpuinfo_min_freq") or 0)
        high = int(_read(host, f"{dirs[0]}/cpufreq/cpuinfo_max_freq") or 0)
        if not low <= self.mhz * 1000 <= high:
            raise Unsupported(
                self.name, host.name, f"{self.mhz} MHz outside {low // 1000}-{high // 1000} MHz"
            )
        return dirs

    def read(self, host: RemoteHost) -> dict[str, tuple[str, str]]:
        return {
            d: (
                _read(host, f"{d}/cpufreq/scaling_min_freq") or "",
                _read(host, f"{d}/cpufreq/scaling_max_freq") or "",
            )
            for d in self._cpus(host)
        }

    def apply(self, host: RemoteHost) -> None:
        khz = str(self.mhz * 1000)
        for d in self._cpus(host):
            # Raise max first when going up, lower min first when going down.
            for name in ("scaling_max_freq", "scaling_min_freq", "scaling_max_freq"):
                _write(host, f"{d}/cpufreq/{name}", khz)

    def restore(self, host: RemoteHost, saved: dict[str, tuple[str, str]]) -> None:
        for d, (low, high) in saved.items():
            _write(host, f"{d}/cpufreq/scaling_max_freq", high)
            _write(host, f"{d}/cpufreq/scaling_min_freq", low)

    def is_applied(self, host: RemoteHost) -> bool:
        khz = str(self.mhz * 1000)
        return all(v == (khz, khz) for v in self.read(host).values())


@dataclass
class Sysctl(Tunable):
    """A kernel parameter (``net.ipv4.ip_forward`` is the routing tests' one)."""

    key: str
    value: str
    name: str = "sysctl"

    def __post_init__(self) -> None:
        if not SYSCTL_KEY.match(self.key) or ".." in self.key:
            raise ValueError(f"not a sysctl key: {self.key!r}")

    def describe(self) -> str:
        return f"sysctl {self.key}={self.value}"

    def read(self, host: RemoteHost) -> str:
        result = host.run(host.platform.sysctl_read(self.key), timeout=15)
        if not result.ok:
            raise Unsupported(self.name, host.name, f"{self.key}: {result.stderr.strip() or 'unknown key'}")
        return " ".join(result.stdout.split())

    def apply(self, host: RemoteHost) -> None:
        result = host.run(host.platform.sysctl_write(self.key, self.value), timeout=15, root=True)
        if not result.ok:
            raise Unsupported(self.name, host.name, f"{self.key}={self.value}: {result.stderr.strip()}")

    def restore(self, host: RemoteHost, saved: str) -> None:
        host.run(host.platform.sysctl_write(self.key, saved), timeout=15, root=True)

    def is_applied(self, host: RemoteHost) -> bool:
        return self.read(host) == " ".join(self.value.split())


@dataclass
class HostRoute(Tunable):
    """A route to one host through a gateway: how a peer reaches the other side of the board.

    Host routes (/32, /128) need no knowledge of the lab's subnets, and replacing then
    restoring exactly one route leaves a peer's own routing table as it was.
    """

    destination: str
    gateway: str
    name: str = "route"

    def __post_init__(self) -> None:
        for value in (self.destination, self.gateway):
            ipaddress.ip_address(value)  # ValueError for anything that is not an address

    @property
    def _prefix(self) -> str:
        bits = 32 if ipaddress.ip_address(self.destination).version == 4 else 128
        return f"{self.destination}/{bits}"

    def describe(self) -> str:
        return f"route {self._prefix} via {self.gateway}"

    def read(self, host: RemoteHost) -> list[str]:
        result = host.run(host.platform.route_show(self._prefix), timeout=15)
        if not result.ok:
            raise Unsupported(self.name, host.name, f"cannot read routes: {result.stderr.strip()}")
        line = result.stdout.strip().splitlines()[0] if result.stdout.strip() else ""
        return line.split()

    def apply(self, host: RemoteHost) -> None:
        result = host.run(
            host.platform.route_replace([self._prefix, "via", self.gateway]), timeout=15, root=True
        )
        if not result.ok:
            raise Unsupported(self.name, host.name, f"{self.describe()}: {result.stderr.strip()}")

    def restore(self, host: RemoteHost, saved: list[str]) -> None:
        # Remove exactly the route this tunable added, then put back what was there.
        host.run(host.platform.route_delete([self._prefix, "via", self.gateway]), timeout=15, root=True)
        if saved:
            host.check(host.platform.route_replace(saved), timeout=15, root=True)
        elif host.run(host.platform.route_show(self._prefix), timeout=15).stdout.strip():
            raise LabFault("command", f"{host.name}: route {self._prefix} still present after restore")

    def is_applied(self, host: RemoteHost) -> bool:
        fields = self.read(host)
        return "via" in fields and fields[fields.index("via") + 1 : fields.index("via") + 2] == [self.gateway]


@dataclass
class Mtu(Tunable):
    """Interface MTU."""

    interface: str
    mtu: int
    name: str = "mtu"

    def __post_init__(self) -> None:
        checked_interface(self.interface)

    def describe(self) -> str:
        return f"MTU {self.mtu} on {self.interface}"

    def read(self, host: RemoteHost) -> int:
        result = host.run_shell(host.platform.mtu_read_script(self.interface), timeout=15)
        value = result.stdout.strip() if result.ok else None
        if value is None or not value.isdigit():
            raise Unsupported(self.name, host.name, f"no interface {self.interface}")
        return int(value)

    def apply(self, host: RemoteHost) -> None:
        result = host.run(host.platform.set_mtu(self.interface, self.mtu), timeout=15, root=True)
        if not result.ok:
            raise Unsupported(
                self.name, host.name, f"MTU {self.mtu} on {self.interface}: {result.stderr.strip()}"
            )

    def restore(self, host: RemoteHost, saved: int) -> None:
        host.run(host.platform.set_mtu(self.interface, saved), timeout=15, root=True)

    def is_applied(self, host: RemoteHost) -> bool:
        return self.read(host) == self.mtu


# ethtool -K takes short names; ethtool -k prints long ones.
OFFLOAD_ALIASES = {
    "sg": "scatter-gather",
    "tso": "tcp-segmentation-offload",
    "gso": "generic-segmentation-offload",
    "gro": "generic-receive-offload",
    "lro": "large-receive-offload",
    "rx": "rx-checksumming",
    "tx": "tx-checksumming",
    "rxvlan": "rx-vlan-offload",
    "txvlan": "tx-vlan-offload",
    "ufo": "udp-fragmentation-offload",
}


@dataclass
class Offloads(Tunable):
    """NIC offloads (``ethtool -K``): {feature: on/off}."""

    interface: str
    features: dict[str, bool]
    name: str = "offloads"

    def __post_init__(self) -> None:
        checked_interface(self.interface)
        for feature in self.features:
            if not re.fullmatch(r"[a-z0-9-]+", feature):
                raise ValueError(f"not an offload name: {feature!r}")

    def describe(self) -> str:
        return f"offloads on {self.interface}: " + ", ".join(
            f"{k} {'on' if v else 'off'}" for k, v in self.features.items()
        )

    def read(self, host: RemoteHost) -> dict[str, bool]:
        result = host.run(host.platform.offloads_read(self.interface), timeout=15)
        if not result.ok:
            raise Unsupported(
                self.name, host.name, f"reading offloads of {self.interface}: {result.stderr.strip()}"
            )
        return host.platform.parse_offloads(result.stdout, self.interface)

    def apply(self, host: RemoteHost) -> None:
        switches = host.platform.offload_switches()
        unknown = sorted(set(self.features) - switches) if switches is not None else []
        if unknown:
            raise Unsupported(
                self.name,
                host.name,
                f"{host.platform.name} cannot switch {', '.join(unknown)} "
                f"(only {', '.join(sorted(switches or ()))})",
            )
        result = host.run(host.platform.offloads_write(self.interface, self.features), timeout=15, root=True)
        if not result.ok:
            raise Unsupported(self.name, host.name, result.stderr.strip() or "ethtool -K failed")

    def restore(self, host: RemoteHost, saved: dict[str, bool]) -> None:
        back = {
            feature: saved[OFFLOAD_ALIASES.get(feature, feature)]
            for feature in self.features
            if OFFLOAD_ALIASES.get(feature, feature) in saved
        }
        host.run(host.platform.offloads_write(self.interface, back), timeout=15, root=True)

    def is_applied(self, host: RemoteHost) -> bool:
        state = self.read(host)
        return all(state.get(OFFLOAD_ALIASES.get(f, f)) == on for f, on in self.features.items())


QDISC_TOKEN = re.compile(r"^[a-z0-9_.]+$")


@dataclass
class Qdisc(Tunable):
    """The queueing discipline of an interface (``sfq quantum 1500``, ``fq_codel`` ...).

    On an emulated link the root qdisc is the tbf shaper that makes a veth a GbE cable; the
    tunable then installs the discipline as the shaper's child, where the queue actually
    builds, instead of replacing the shaper.
    """

    interface: str
    spec: tuple[str, ...]
    name: str = "qdisc"

    def __post_init__(self) -> None:
        checked_interface(self.interface)
        if not self.spec or not all(QDISC_TOKEN.match(t) for t in self.spec):
            raise ValueError(f"not a qdisc spec: {' '.join(self.spec)!r}")

    def describe(self) -> str:
        return f"qdisc {' '.join(self.spec)} on {self.interface}"

    def _root(self, host: RemoteHost) -> str:
        result = host.run(host.platform.qdisc_show(self.interface, root=True), timeout=15)
        if not result.ok:
            raise Unsupported(self.name, host.name, f"no interface {self.interface}: {result.stderr.strip()}")
        return result.stdout.strip().splitlines()[0] if result.stdout.strip() else ""

    def _parent(self, host: RemoteHost) -> list[str]:
        root = self._root(host).split()
        if len(root) >= 3 and root[1] == "tbf":
            return ["parent", f"{root[2].rstrip(':')}:1"]
        return ["root"]

    def read(self, host: RemoteHost) -> list[str]:
        """Where the qdisc goes, and what to put back there afterwards.

        Under a tbf shaper the child must be *replaced* on restore, never deleted: deleting
        a tbf's child grafts the noop qdisc, which drops every packet (seen: a link that
        carried nothing after a routing test).  tbf's own default child is a bfifo of
        rate x latency + burst bytes, which is what restore puts back.
        """
        where = self._parent(host)
        if where[0] != "parent":
            return where
        shown = host.run(host.platform.qdisc_show(self.interface, root=True, detail=True), timeout=15).stdout
        return [*where, "bfifo", "limit", str(tbf_default_limit(shown))]

    def apply(self, host: RemoteHost) -> None:
        where = self._parent(host)
        result = host.run(
            host.platform.qdisc_replace(self.interface, where, self.spec), timeout=15, root=True
        )
        if not result.ok:
            error = result.stderr.strip()
            if any(
                t in error.lower()
                for t in ("unknown qdisc", "qdisc kind is unknown", "no such file", "not supported")
            ):
                raise Unsupported(
                    self.name, host.name, f"kernel lacks {self.spec[0]} (sch_{self.spec[0]}): {error}"
                )
            raise Unsupported(self.name, host.name, f"{self.describe()}: {error}")

    def restore(self, host: RemoteHost, saved: list[str]) -> None:
        if saved[0] == "parent":
            shown = host.run(host.platform.qdisc_show(self.interface), timeout=15).stdout
            if f"parent {saved[1]} " not in shown + " ":
                return  # never replaced: the shaper's own hidden default child is still there
            # Put the shaper's default FIFO back in place of ours (see read()).
            host.check(host.platform.qdisc_replace(self.interface, saved, []), timeout=15, root=True)
        else:
            # A root qdisc of ours: deleting it returns the interface to the kernel's default.
            host.run(host.platform.qdisc_delete(self.interface, saved), timeout=15, root=True)

    def is_applied(self, host: RemoteHost) -> bool:
        out = host.run(host.platform.qdisc_show(self.interface), timeout=15).stdout
        return any(line.split()[1:2] == [self.spec[0]] for line in out.splitlines() if line.strip())


UNIT = {"": 1.0, "K": 1e3, "M": 1e6, "G": 1e9}
TIME = {"s": 1.0, "ms": 1e-3, "us": 1e-6}


def tbf_default_limit(shown: str) -> int:
    """Bytes of the bfifo tbf creates as its child: rate x latency + burst, as tc computes it.

    From ``tc -d qdisc show`` ("rate 988333Kbit burst 1048497b/1 mpu 83b lat 50ms"); a line
    it cannot read gives 10 MB, deep enough for any GbE shaper's queue.
    """
    rate = re.search(r"rate (\d+(?:\.\d+)?)([KMG]?)bit", shown)
    burst = re.search(r"burst (\d+(?:\.\d+)?)([KM]?)b", shown)
    latency = re.search(r"lat (\d+(?:\.\d+)?)(s|ms|us)\b", shown)
    if not (rate and burst and latency):
        return 10_000_000
    bytes_per_s = float(rate.group(1)) * UNIT[rate.group(2)] / 8
    burst_bytes = float(burst.group(1)) * {"": 1, "K": 1024, "M": 1048576}[burst.group(2)]
    return int(bytes_per_s * float(latency.group(1)) * TIME[latency.group(2)] + burst_bytes)


def apply_checked(tunable: Tunable, host: RemoteHost) -> Any:
    """Read, apply and read back; return the saved state for :meth:`Tunable.restore`.

    A read-back that differs from the wanted state is an Unsupported (the host silently
    ignored the write); anything else failing is a lab fault.
    """
    reason = host.platform.cannot(tunable.name)
    if reason is not None:
        raise Unsupported(tunable.name, host.name, reason)
    saved = tunable.read(host)
    try:
        tunable.apply(host)
        if not tunable.is_applied(host):
            raise Unsupported(
                tunable.name, host.name, f"read-back differs after setting {tunable.describe()}"
            )
    except Unsupported:
        tunable.restore(host, saved)
        raise
    except LabFault:
        try:  # half-applied on a host that still answers: put it back before reporting
            tunable.restore(host, saved)
        except LabFault:
            pass
        raise
    return saved
