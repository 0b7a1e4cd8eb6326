"""Recover from a lab fault in the middle of a measurement: power-cycle the place, retry once.

A dropped SSH session, a cable that went down, a hung board or a stuck iperf3 server says
nothing about the device under test, and a nightly run must not lose the rest of the night to
it.  When a measurement raises a :class:`LabFault` of a kind a power-cycle cures, pinet

1. collects evidence (the fault, what each host answers, the consoles' tails),
2. power-cycles every host of the place that has a power driver (board first) and waits
   until each answers SSH again,
3. puts back every profile and routing setup the process had in force,
4. measures once more.

Every fault is recorded as a fact of the run (category, host, test, evidence, recovered or
not), so the report can count them.  Measurements taken before the fault were committed
when they were taken; nothing here can lose them.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from ..errors import LabFault
from ..host.profiles import AppliedProfile
from ..host.remote import RemoteHost
from .inventory import Inventory

T = TypeVar("T")

# Kinds of fault a power-cycle of the place can cure.  A missing tool, a board that lacks a
# kernel feature or a too-hot board will be the same after a cycle: those are not retried.
RECOVERABLE = frozenset(
    {
        "unreachable",
        "ssh",
        "ssh-dropped",
        "timeout",
        "command",
        "facts",
        "iperf3-server",
        "iperf3-output",
        "iperf3-server-busy",
        "iperf3-connect",
        "iperf3-interrupted",
        "iperf3-stalled",
        "iperf3-short",
        "iperf3-control-socket",
        "iperf3-iperf3",
        "udpgen",
        "udpgen-output",
        "console",
    }
)


@dataclass
class FaultRecord:
    """One lab fault as the run's facts keep it."""

    test_id: str
    category: str
    host: str | None
    message: str
    evidence: dict[str, str] = field(default_factory=dict)
    recovered: bool = False
    action: str = "none"
    recovery_seconds: float | None = None
    retry_error: str | None = None

    def as_fact(self) -> dict[str, Any]:
        """The record as a JSON-able fact."""
        return dict(self.__dict__)

    def as_text(self) -> str:
        """Evidence for a report attachment."""
        lines = [
            f"test: {self.test_id}",
            f"fault: {self.category} on {self.host or 'unknown host'}",
            f"message: {self.message}",
            f"recovery: {self.action}"
            + (f" in {self.recovery_seconds:.1f} s" if self.recovery_seconds is not None else ""),
            f"recovered: {'yes, the retry measured' if self.recovered else 'no'}",
        ]
        if self.retry_error:
            lines.append(f"retry: {self.retry_error}")
        for name, text in self.evidence.items():
            lines += ["", f"--- {name} ---", text.rstrip()]
        return "\n".join(lines) + "\n"


class LabRecovery:
    """Runs measurements of one process's place with fault recovery.

    ``strategy_for(host)`` returns the host's PinetBoardStrategy, or None when the host has
    no power driver (a peer PC on no PDU: it is only reconnected).
    """

    def __init__(
        self,
        lab: Callable[[], tuple[Inventory, Mapping[str, RemoteHost]]],
        strategy_for: Callable[[str], Any],
        record_fact: Callable[[str, dict[str, Any]], None],
        attach: Callable[[str, str], None],
    ) -> None:
        self._lab = lab  # the place is looked up only when a fault needs it
        self.strategy_for = strategy_for
        self.record_fact = record_fact
        self.attach = attach
        # What this process has in force on its place, so that a retry after a power-cycle
        # measures under the same profile, not on a stock board.
        self.in_force: list[AppliedProfile] = []
        # Called after every power-cycle of the place (the health gate checks it again).
        self.after_cycle: list[Callable[[], None]] = []

    def hold(self, applied: AppliedProfile) -> AppliedProfile:
        """Keep ``applied`` to re-apply after a power-cycle, until :meth:`drop`."""
        self.in_force.append(applied)
        return applied

    def drop(self, applied: AppliedProfile) -> None:
        """``applied`` is being restored: no longer re-applied."""
        self.in_force = [held for held in self.in_force if held is not applied]

    @property
    def inventory(self) -> Inventory:
        """The place's inventory (taking the place if this process has not yet)."""
        return self._lab()[0]

    @property
    def hosts(self) -> Mapping[str, RemoteHost]:
        """The place's hosts, with this process's SSH connections."""
        return self._lab()[1]

    def measure(self, test_id: str, measure: Callable[[], T]) -> T:
        """``measure()``; after a recoverable lab fault, recover the place and retry once."""
        try:
            return measure()
        except LabFault as fault:
            if fault.category not in RECOVERABLE:
                raise
            record = FaultRecord(test_id, fault.category, fault.host, str(fault), dict(fault.evidence))
        record.evidence.update(self.evidence())
        started = time.monotonic()
        try:
            record.action = self.power_cycle_place()
        except LabFault as power_fault:
            record.action = f"power-cycle failed: {power_fault}"
            record.retry_error = "not retried: the place could not be power-cycled"
            self._keep(record)
            raise _kept(
                LabFault(
                    "recovery-failed",
                    f"{record.message}; recovery by power-cycle failed: {power_fault}",
                    power_fault.host,
                )
            ) from None
        record.recovery_seconds = time.monotonic() - started
        try:
            result = measure()
        except LabFault as again:
            record.retry_error = str(again)
            self._keep(record)
            raise _kept(
                LabFault(
                    again.category,
                    f"{again} (the retry after recovering from {record.category} by power-cycle)",
                    again.host,
                )
            ) from None
        record.recovered = True
        self._keep(record)
        return result

    def _keep(self, record: FaultRecord) -> None:
        self.record_fact("lab-fault", record.as_fact())
        self.attach(
            record.as_text(),
            f"lab fault: {record.category} ({'recovered' if record.recovered else 'not recovered'})",
        )

    def evidence(self) -> dict[str, str]:
        """What every host answers right now, and any console's tail."""
        found: dict[str, str] = {}
        for name, host in self.hosts.items():
            try:
                result = host.run(["sh", "-c", "uptime; ip -o -brief link"], timeout=5, cleanup=True)
                found[name] = result.stdout or result.stderr or f"exit {result.exit_code}"
                if result.exit_code == -1:  # no exit status: the command never came back
                    host.mark_silent("it gave no exit status to the evidence after the fault")
            except LabFault as exc:
                found[name] = f"no answer: {exc}"
                if host.silent is None and exc.category in ("timeout", "unreachable", "ssh-dropped"):
                    # A board that cannot say its uptime will not restore its qdisc either:
                    # each restore after a hang waited 10 s more (a rack trial).
                    host.mark_silent(f"it gave no answer to the evidence after the fault ({exc})")
            strategy = self.strategy_for(name)
            read = getattr(strategy, "console_now", None)
            console = read() if read is not None else None
            if console is not None:
                # A silent console is evidence too: a board hung before it printed anything,
                # or a boot that reached SSH before its login prompt (a quiet kernel).
                found[f"{name} console"] = console[-3000:] if console.strip() else "(nothing since power on)"
        return found

    def power_cycle_place(self) -> str:
        """Power-cycle every host that can be (the board first); reconnect the others."""
        order = sorted(self.hosts, key=lambda name: self.inventory.hosts[name].role != "board")
        done = []
        for name in order:
            self.hosts[name].close()
            strategy = self.strategy_for(name)
            if strategy is None:
                done.append(f"{name}: reconnected (no power driver)")
                continue
            try:
                strategy.transition("off")
                strategy.transition("reachable")
            except LabFault as fault:
                raise LabFault(fault.category, f"{name}: {fault}", name) from None
            except Exception as exc:  # noqa: BLE001 - labgrid's ExecutionError of a failing power command
                raise LabFault(
                    "power", f"{name}: power-cycle failed: {type(exc).__name__}: {exc}", name
                ) from None
            seconds = strategy.boot_seconds
            done.append(
                f"{name}: power-cycled, SSH after {seconds:.1f} s" if seconds else f"{name}: power-cycled"
            )
        for applied in list(self.in_force):
            again = applied.reapply()
            if again:
                done.append(f"re-applied {applied.profile.name}: {'; '.join(again)}")
        for cycled in self.after_cycle:
            cycled()
        return "; ".join(done)


def _kept(fault: LabFault) -> LabFault:
    """Mark a fault as already recorded, so the test report does not count it twice."""
    fault.recorded = True
    return fault
