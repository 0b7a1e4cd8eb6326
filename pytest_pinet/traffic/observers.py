"""What the hosts were doing while traffic ran: interrupts, CPU, softirq, NIC counters, heat.

Sampled on both ends right before and right after a run (one SSH round trip each), the
deltas say where a bottleneck sits: all of a NIC's interrupts on one core, a core saturated
by softirq (the seed's full-duplex finding), drops in the driver.  NIC byte counters also
cross-check iperf3's own figure: if they disagree, the measurement is suspect.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from ..host.facts_parse import interrupt_deltas
from ..host.platform import LINUX, SNAPSHOT_MARK, Platform, platform_named
from ..host.remote import RemoteHost
from ..host.shell import section, split_sections
from ..model.observation import CpuUse, Observation

MARK = SNAPSHOT_MARK
# Between the snapshots of several interfaces of one host taken in one script; no line of a
# snapshot starts with it (theirs start with ``MARK``).
END_MARK = "@@obs-end:"
NIC_COUNTERS = ("rx_bytes", "tx_bytes", "rx_packets", "tx_packets", "rx_dropped", "tx_dropped", "rx_errors")


@dataclass(frozen=True)
class Snapshot:
    """Raw counters of one host at one moment."""

    interrupts: str
    stat: str
    nic: dict[str, int]
    temperature_c: float | None
    throttled: int | None = None  # Raspberry Pi firmware flags (vcgencmd get_throttled)
    os: str = "linux"  # whose platform reads ``interrupts`` and ``stat``


def snapshot_script(interface: str, platform: Platform = LINUX) -> str:
    """Shell that prints everything one snapshot needs, behind section markers."""
    return platform.snapshot_script(interface, NIC_COUNTERS)


def parse_snapshot(text: str, platform: Platform = LINUX, interface: str = "") -> Snapshot:
    """Split a snapshot script's output into its parts (``platform`` reads them)."""
    sections = split_sections(text, MARK)
    flags = re.search(r"throttled=(0x[0-9a-fA-F]+)", sections.get("throttled", "").replace("\n", ""))
    return Snapshot(
        interrupts=sections.get("interrupts", ""),
        stat=sections.get("stat", ""),
        nic=platform.nic_counters(sections.get("nic", ""), interface),
        temperature_c=platform.temperature_c(sections.get("temp", "")),
        throttled=int(flags.group(1), 16) if flags else None,
        os=platform.name,
    )


def cpu_use(before: str, after: str, platform: Platform = LINUX) -> tuple[CpuUse, ...]:
    """Per-core shares from two CPU time samples (``cpu`` = all cores)."""
    old, new = platform.cpu_rows(before), platform.cpu_rows(after)
    result = []
    for name, values in new.items():
        if name not in old:
            continue
        delta = [b - a for a, b in zip(old[name], values, strict=False)]
        total = sum(delta[:8]) or 1  # user nice system idle iowait irq softirq steal
        idle = delta[3] + (delta[4] if len(delta) > 4 else 0)

        def share(index: int, d: list[int] = delta, t: int = total) -> float:
            return 100.0 * d[index] / t if len(d) > index else 0.0

        busy = 100.0 * (total - idle) / total
        result.append(CpuUse(name, busy, share(6), share(5), share(2), share(0), share(7)))
    return tuple(result)


def take_snapshot(host: RemoteHost, interface: str) -> Snapshot:
    """One snapshot of ``host`` for ``interface``."""
    platform = host.platform
    return parse_snapshot(
        host.run_shell(snapshot_script(interface, platform), timeout=20).stdout, platform, interface
    )


def take_snapshots(host: RemoteHost, interfaces: Sequence[str]) -> list[Snapshot]:
    """Snapshots of ``host`` for each of ``interfaces``, in one round trip.

    A routed test watches both ports of the board: two commands at once into a QEMU board
    took 0.9 to 1.3 s before and again after every run, one with both parts about half.
    """
    if len(interfaces) == 1:
        return [take_snapshot(host, interfaces[0])]
    platform = host.platform
    script = "; ".join(
        f"{section(END_MARK, str(index))}; {snapshot_script(interface, platform)}"
        for index, interface in enumerate(interfaces)
    )
    parts = split_sections(host.run_shell(script, timeout=20).stdout, END_MARK)
    return [
        parse_snapshot(parts.get(str(index), ""), platform, interface)
        for index, interface in enumerate(interfaces)
    ]


def observe(host_name: str, interface: str, before: Snapshot, after: Snapshot) -> Observation:
    """Deltas between two snapshots of one host."""
    platform = platform_named(after.os)
    irq_before = platform.interrupt_table(before.interrupts)
    irq_after = platform.interrupt_table(after.interrupts)
    return Observation(
        host=host_name,
        interface=interface,
        interrupts_per_cpu=interrupt_deltas(irq_before, irq_after, interface),
        cpu=cpu_use(before.stat, after.stat, platform),
        nic={k: after.nic[k] - before.nic[k] for k in after.nic if k in before.nic},
        temperature_c=(before.temperature_c, after.temperature_c),
        throttled=(before.throttled, after.throttled),
    )
