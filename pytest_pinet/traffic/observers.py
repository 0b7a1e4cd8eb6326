"""What the hosts were doing while traffic ran: interrupts, CPU, softirq, NIC counters, heat.

Sampled on both ends right before and right after a run (one SSH round trip each), the
deltas say where a bottleneck sits: all of a NIC's interrupts on one core, a core saturated
by softirq (the seed's full-duplex finding), drops in the driver.  NIC byte counters also
cross-check iperf3's own figure: if they disagree, the measurement is suspect.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..lab.facts_parse import interrupt_deltas, parse_proc_interrupts
from ..lab.platform import LINUX, SNAPSHOT_MARK, Platform
from ..lab.remote import RemoteHost
from ..model.observation import CpuUse, Observation

MARK = SNAPSHOT_MARK
NIC_COUNTERS = ("rx_bytes", "tx_bytes", "rx_packets", "tx_packets", "rx_dropped", "tx_dropped", "rx_errors")


@dataclass(frozen=True)
class Snapshot:
    """Raw counters of one host at one moment."""

    interrupts: str
    stat: str
    nic: dict[str, int]
    temperature_c: float | None
    throttled: int | None = None  # Raspberry Pi firmware flags (vcgencmd get_throttled)


def snapshot_script(interface: str, platform: Platform = LINUX) -> str:
    """Shell that prints everything one snapshot needs, behind section markers."""
    return platform.snapshot_script(interface, NIC_COUNTERS)


def parse_snapshot(text: str) -> Snapshot:
    """Split a snapshot script's output into its parts."""
    sections: dict[str, list[str]] = {}
    current = ""
    for line in text.splitlines():
        if line.startswith(MARK):
            current = line[len(MARK) :].strip()
            sections[current] = []
        elif current:
            sections[current].append(line)
    nic = {}
    for line in sections.get("nic", []):
        name, _, value = line.partition(" ")
        if value.strip().isdigit():
            nic[name] = int(value)
    temp = "".join(sections.get("temp", [])).strip()
    flags = re.search(r"throttled=(0x[0-9a-fA-F]+)", "".join(sections.get("throttled", [])))
    return Snapshot(
        interrupts="\n".join(sections.get("interrupts", [])),
        stat="\n".join(sections.get("stat", [])),
        nic=nic,
        temperature_c=int(temp) / 1000 if temp.lstrip("-").isdigit() else None,
        throttled=int(flags.group(1), 16) if flags else None,
    )


def cpu_use(before: str, after: str) -> tuple[CpuUse, ...]:
    """Per-core shares from two /proc/stat samples (``cpu`` = all cores)."""

    def table(text: str) -> dict[str, list[int]]:
        rows = {}
        for line in text.splitlines():
            parts = line.split()
            if parts and parts[0].startswith("cpu") and all(p.isdigit() for p in parts[1:]):
                rows[parts[0]] = [int(p) for p in parts[1:]]
        return rows

    old, new = table(before), table(after)
    result = []
    for name, values in new.items():
        if name not in old:
            continue
        delta = [b - a for a, b in zip(old[name], values, strict=False)]
        total = sum(delta[:8]) or 1  # user nice system idle iowait irq softirq steal
        idle = delta[3] + (delta[4] if len(delta) > 4 else 0)

        def share(index: int, d: list[int] = delta, t: int = total) -> float:
            return 100.0 * d[index] / t if len(d) > index else 0.0

        result.append(CpuUse(name, 100.0 * (total - idle) / total, share(6), share(5), share(2), share(0)))
    return tuple(result)


def take_snapshot(host: RemoteHost, interface: str) -> Snapshot:
    """One snapshot of ``host`` for ``interface``."""
    return parse_snapshot(host.run_shell(snapshot_script(interface, host.platform), timeout=20).stdout)


def observe(host_name: str, interface: str, before: Snapshot, after: Snapshot) -> Observation:
    """Deltas between two snapshots of one host."""
    irq_before = parse_proc_interrupts(before.interrupts)
    irq_after = parse_proc_interrupts(after.interrupts)
    return Observation(
        host=host_name,
        interface=interface,
        interrupts_per_cpu=interrupt_deltas(irq_before, irq_after, interface),
        cpu=cpu_use(before.stat, after.stat),
        nic={k: after.nic[k] - before.nic[k] for k in after.nic if k in before.nic},
        temperature_c=(before.temperature_c, after.temperature_c),
        throttled=(before.throttled, after.throttled),
    )
