"""What a host was doing while traffic ran: the deltas ``traffic.observers`` measures."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class CpuUse:
    """Share of one core's time over the run, in percent.  ``steal`` is the time a hypervisor
    gave to other guests while this host wanted the core (counted in ``busy``, as the host
    could not idle then): on a virtual machine (the virtual lab's hosts, a cloud runner) a slow
    figure beside a high steal is the machine's, not the board's, and the load line says so."""

    cpu: str
    busy: float
    softirq: float
    irq: float
    system: float
    user: float
    steal: float = 0.0


@dataclass(frozen=True)
class Observation:
    """Deltas of one host over one traffic run."""

    host: str
    interface: str
    interrupts_per_cpu: dict[str, tuple[int, ...]] = field(default_factory=dict)
    cpu: tuple[CpuUse, ...] = ()
    nic: dict[str, int] = field(default_factory=dict)
    temperature_c: tuple[float | None, float | None] = (None, None)
    throttled: tuple[int | None, int | None] = (None, None)

    @property
    def busiest_core(self) -> CpuUse | None:
        """The core with the highest busy share (a saturated core caps throughput)."""
        return max((c for c in self.cpu if c.cpu != "cpu"), key=lambda c: c.busy, default=None)
