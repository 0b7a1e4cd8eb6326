"""What is set on a host's network stack for a measurement: sysctls (forwarding), host routes,
MTU, offloads and the qdisc of an interface (restored with care under the virtual lab's
shapers).  Each is a :class:`~pytest_pinet.host.tunables.Tunable`: probed, applied, read back and
restored."""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass, field

from ..errors import LabFault, Unsupported
from ..model.units import SI_PREFIX
from .remote import RemoteHost
from .shell import as_root, checked_interface, quote
from .tunables import SYSCTL_KEY, Tunable


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

    def _write_and_read_script(self, host: RemoteHost) -> str:
        """Write, then read the key back: one round trip (``sysctl -n`` prints last)."""
        write = quote(as_root(host.platform.sysctl_write(self.key, self.value), host.sudo))
        read = quote(host.platform.sysctl_read(self.key))
        return f"{write} && {read}"

    def apply_and_read_back(self, host: RemoteHost) -> bool:
        result = host.run_shell(self._write_and_read_script(host), timeout=15, root=True)
        if not result.ok:
            raise Unsupported(self.name, host.name, f"{self.key}={self.value}: {result.stderr.strip()}")
        lines = result.stdout.strip().splitlines()
        return bool(lines) and " ".join(lines[-1].split()) == " ".join(self.value.split())

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

    Each step is one command: on a QEMU board a command costs 0.2 s, and a routed test sets
    and restores the qdisc of two interfaces around every run (ten commands had been 2.3 s of
    each test's set-up).
    """

    interface: str
    spec: tuple[str, ...]
    name: str = "qdisc"
    # Where :meth:`read` found the qdisc goes, for the apply that follows it at once.
    _where: list[str] | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        checked_interface(self.interface)
        if not self.spec or not all(QDISC_TOKEN.match(t) for t in self.spec):
            raise ValueError(f"not a qdisc spec: {' '.join(self.spec)!r}")

    def describe(self) -> str:
        return f"qdisc {' '.join(self.spec)} on {self.interface}"

    def _root(self, host: RemoteHost) -> tuple[list[str], str]:
        """Where the qdisc goes (a tbf shaper's child, else the root) and the root's
        detailed line (``tc -d``: the shaper's rate, bucket and queue)."""
        result = host.run(host.platform.qdisc_show(self.interface, root=True, detail=True), timeout=15)
        if not result.ok:
            raise Unsupported(self.name, host.name, f"no interface {self.interface}: {result.stderr.strip()}")
        shown = result.stdout.strip()
        root = shown.splitlines()[0].split() if shown else []
        if len(root) >= 3 and root[1] == "tbf":
            return ["parent", f"{root[2].rstrip(':')}:1"], shown
        return ["root"], shown

    def read(self, host: RemoteHost) -> list[str]:
        """Where the qdisc goes, and what to put back there afterwards.

        Under a tbf shaper the child must be *replaced* on restore, never deleted: deleting
        a tbf's child grafts the noop qdisc, which drops every packet (seen: a link that
        carried nothing after a routing test).  tbf's own default child is a bfifo of
        rate x latency + burst bytes, which is what restore puts back.
        """
        where, shown = self._root(host)
        self._where = where
        if where[0] != "parent":
            return where
        return [*where, "bfifo", "limit", str(tbf_default_limit(shown))]

    def _replace_script(self, host: RemoteHost, where: list[str]) -> str:
        """Replace, then show the interface's qdiscs: one round trip."""
        replace = quote(as_root(host.platform.qdisc_replace(self.interface, where, self.spec), host.sudo))
        show = quote(host.platform.qdisc_show(self.interface))
        return f"{replace} && {show}"

    def _restore_script(self, host: RemoteHost, saved: list[str]) -> str:
        """Only where ours still is (never replaced: the shaper's own hidden default child is
        still there), put the shaper's default FIFO back in its place (see read())."""
        show = quote(host.platform.qdisc_show(self.interface))
        ours = quote(["grep", "-qE", f"parent {saved[1]}( |$)"])
        replace = quote(as_root(host.platform.qdisc_replace(self.interface, saved, []), host.sudo))
        return f"if {show} | {ours}; then {replace}; fi"

    def _replace(self, host: RemoteHost, where: list[str]) -> str:
        """Replace, then show the interface's qdiscs (one round trip); what tc showed."""
        result = host.run_shell(self._replace_script(host, where), timeout=15, root=True)
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
        return result.stdout

    def apply(self, host: RemoteHost) -> None:
        # Placement read afresh: after a power cycle the board's shaper may have a new handle.
        self._replace(host, self._root(host)[0])

    def apply_and_read_back(self, host: RemoteHost) -> bool:
        where = self._where if self._where is not None else self._root(host)[0]
        return self._holds(self._replace(host, where))

    def restore(self, host: RemoteHost, saved: list[str]) -> None:
        self._where = None
        if saved[0] == "parent":
            result = host.run_shell(self._restore_script(host, saved), timeout=15, root=True)
            if not result.ok:
                error = f"exited {result.exit_code}: {result.stderr.strip()[:500]}"
                raise LabFault("command", f"{host.name}: `{result.command}` {error}")
        else:
            # A root qdisc of ours: deleting it returns the interface to the kernel's default.
            host.run(host.platform.qdisc_delete(self.interface, saved), timeout=15, root=True)

    def _holds(self, shown: str) -> bool:
        return any(line.split()[1:2] == [self.spec[0]] for line in shown.splitlines() if line.strip())

    def is_applied(self, host: RemoteHost) -> bool:
        return self._holds(host.run(host.platform.qdisc_show(self.interface), timeout=15).stdout)


TIME = {"s": 1.0, "ms": 1e-3, "us": 1e-6}


def tbf_default_limit(shown: str) -> int:
    """Bytes of the bfifo tbf creates as its child: rate x latency + burst, as tc computes it.

    From ``tc -d qdisc show`` ("rate 988333Kbit burst 1048497b/1 mpu 83b lat 50ms", or "...
    limit 77909b" for a shaper given its queue in bytes); a line it cannot read gives 10 MB,
    deep enough for any GbE shaper's queue.
    """
    limit = re.search(r"\blimit (\d+)b\b", shown)
    if limit:  # a shaper given its queue in bytes (the QEMU board's) shows it so
        return int(limit.group(1))
    rate = re.search(r"rate (\d+(?:\.\d+)?)([KMG]?)bit", shown)
    burst = re.search(r"burst (\d+(?:\.\d+)?)([KM]?)b", shown)
    latency = re.search(r"lat (\d+(?:\.\d+)?)(s|ms|us)\b", shown)
    if not (rate and burst and latency):
        return 10_000_000
    bytes_per_s = float(rate.group(1)) * SI_PREFIX[rate.group(2)] / 8
    burst_bytes = float(burst.group(1)) * {"": 1, "K": 1024, "M": 1048576}[burst.group(2)]
    return int(bytes_per_s * float(latency.group(1)) * TIME[latency.group(2)] + burst_bytes)
