"""Health before blame: check a place's boards and links before any of their figures is judged.

When a board of the place is first needed, and again after any power-cycle, the gate gathers
fresh facts of the board and its peers and compares them with the inventory
(:mod:`.health`).  What a renegotiation or a power-cycle can cure is tried, in that order,
and checked again.  What stays makes every test on that board (a board fault) or link (a
link fault) end as a lab fault of the finding's category, with expected and found side by
side, without measuring: never a regression, never a silent skip.  Every other board and link
of the place goes on.  Each check is kept as a ``health`` fact of the run for the summary and
the report.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ..errors import LabFault
from ..host.facts import gather_facts
from ..host.remote import RemoteHost
from ..model.host_facts import HostFacts
from ..model.lab import LinkEntry
from ..polling import wait_until
from .health import Finding, HealthReport, board_subject, link_subject, place_report, report_table
from .health_table import HealthTable
from .inventory import Inventory

SETTLE_SECONDS = 10.0  # how long a renegotiated link may take to come back


def gather_place(
    inventory: Inventory, hosts: Mapping[str, RemoteHost], board: str
) -> tuple[list[LinkEntry], dict[str, HostFacts | None], dict[str, str]]:
    """The board's links, fresh facts of the board and its peers (None for one that did not
    answer) and the evidence of those that did not."""
    links = [link for link in inventory.links if link.board == board]
    names = [board, *dict.fromkeys(link.peer for link in links)]
    facts: dict[str, HostFacts | None] = {}
    missing: dict[str, str] = {}
    for name in names:
        interfaces = sorted(
            {link.board_interface for link in links if link.board == name}
            | {link.peer_interface for link in links if link.peer == name}
        )
        try:
            facts[name] = gather_facts(hosts[name], interfaces)
        except LabFault as exc:
            facts[name] = None
            missing[name] = str(exc)
    return links, facts, missing


def check_place(
    inventory: Inventory,
    hosts: Mapping[str, RemoteHost],
    board: str,
    table: HealthTable,
    image: str | None = None,
) -> HealthReport:
    """One check of ``board`` and its links, no cure tried (``pinet lab check --live`` too)."""
    links, facts, missing = gather_place(inventory, hosts, board)
    os_name = hosts[board].platform.name if facts.get(board) is not None else ""
    images = {board: image} if image else None
    report = place_report(
        links, [board], facts, table, {board: os_name}, images, {board: inventory.model_of(board)}
    )
    # A host that did not answer: say what it answered instead.
    return HealthReport(
        tuple(
            dataclasses.replace(f, found=f"no answer: {missing[f.host]}")
            if f.check == "facts" and f.host in missing
            else f
            for f in report.findings
        )
    )


def fault_of(subject: str, faults: list[Finding]) -> LabFault:
    """The lab fault a subject's failed checks become: the first one's category, every one's
    expected and found in the message and the evidence."""
    first = faults[0]
    lines = "; ".join(f"{f.host} {f.check}: expected {f.expected}, found {f.found}" for f in faults)
    fault = LabFault(first.category, f"{subject} failed its health check: {lines}", first.host)
    fault.evidence = {"health check": "\n".join(f.line() + f" [{f.category}]" for f in faults)}
    return fault


class HealthGate:
    """The health of one process's place: checked per board on first need and again after a
    power-cycle; the verdicts kept so each test of a board or link asks once."""

    def __init__(
        self,
        lab: Callable[[], tuple[Inventory, Mapping[str, RemoteHost]]],
        table: HealthTable,
        power_cycle: Callable[[], str],
        record_fact: Callable[[str, dict[str, Any]], None],
        attach: Callable[[str, str], None],
        image_of: Callable[[str], str | None] = lambda board: None,
        on_checked: Callable[[str, str, bool, str], None] = lambda board, subject, healthy, reason: None,
    ) -> None:
        self._lab = lab
        self.on_checked = on_checked  # (board, subject, healthy, why not): the store's nightly record
        self.table = table
        self.power_cycle = power_cycle
        self.record_fact = record_fact
        self.attach = attach
        self.image_of = image_of
        self.reports: dict[str, HealthReport] = {}  # board -> its last report
        # Subjects out of service, by board (record/board_service.py): still checked and kept,
        # but no cure is tried for them and their failure is no lab fault of tonight's.
        self.left_out: dict[str, set[str]] = {}
        self._busy = False  # a cure's own power-cycle must not forget what it is checking

    def forget(self) -> None:
        """Every host may have changed (a power-cycle): check again on next need."""
        if not self._busy:
            self.reports.clear()

    def require(self, links: Iterable[LinkEntry]) -> None:
        """Raise the lab fault of the first unhealthy board or link among ``links``."""
        links = list(links)
        for board in dict.fromkeys(link.board for link in links):
            report = self.reports.get(board) or self._examine(board)
            subjects = [
                board_subject(board),
                *(link_subject(link.name) for link in links if link.board == board),
            ]
            for subject in subjects:
                faults = report.faults(subject)
                if faults:
                    fault = fault_of(subject, faults)
                    fault.recorded = True  # kept as a fact when it was found
                    raise fault

    def healthy(self, board: str, subject: str) -> bool:
        """Whether ``subject`` of ``board`` passes its health check (the board checked once)."""
        report = self.reports.get(board) or self._examine(board)
        return not report.faults(subject)

    def _check(self, board: str) -> HealthReport:
        inventory, hosts = self._lab()
        return check_place(inventory, hosts, board, self.table, self.image_of(board))

    def _examine(self, board: str) -> HealthReport:
        """Check, cure what can be cured, check again; keep the report and its facts."""
        self._busy = True
        try:
            first = report = self._check(board)
            actions: list[str] = []
            if any("renegotiate" in f.cures for f in self._curable(board, report)):
                done, renegotiated = self._renegotiate(board, report)
                actions.append(done)
                if renegotiated:  # nothing to wait for where no interface could renegotiate (veth)
                    report = self._settle(board)
            if any("power-cycle" in f.cures for f in self._curable(board, report)):
                try:
                    actions.append(f"power-cycle: {self.power_cycle()}")
                except LabFault as exc:
                    actions.append(f"power-cycle failed: {exc}")
                report = self._check(board)
        finally:
            self._busy = False
        self.reports[board] = report
        self._keep(board, first, report, actions)
        for subject in report.subjects():
            faults = report.faults(subject)
            self.on_checked(board, subject, not faults, str(fault_of(subject, faults)) if faults else "")
        return report

    def _curable(self, board: str, report: HealthReport) -> list[Finding]:
        """The failed checks a cure is tried for: not those of a subject out of service."""
        return [f for f in report.faults() if f.subject not in self.left_out.get(board, set())]

    def _renegotiate(self, board: str, report: HealthReport) -> tuple[str, bool]:
        """Renegotiate every interface a link-negotiation or carrier finding names; say what
        was done and whether any interface took it."""
        hosts = self._lab()[1]
        done = []
        took = False
        for finding in self._curable(board, report):
            if "renegotiate" not in finding.cures:
                continue
            interface = finding.check.split(" ", 1)[0]
            for argv in hosts[finding.host].platform.renegotiate(interface):
                result = hosts[finding.host].run(argv, timeout=15, root=True)
                said = "ok" if result.ok else (result.stderr.strip() or f"exit {result.exit_code}")[:120]
                took = took or result.ok
                done.append(f"{finding.host}: {' '.join(map(str, argv))}: {said}")
        return "renegotiate: " + "; ".join(dict.fromkeys(done)), took

    def _settle(self, board: str) -> HealthReport:
        """Check until no link is down or mis-negotiated, for at most SETTLE_SECONDS."""
        reports: list[HealthReport] = []

        def settled() -> bool:
            reports.append(self._check(board))
            return not [f for f in reports[-1].faults() if "renegotiate" in f.cures]

        wait_until(settled, timeout=SETTLE_SECONDS, pace=1.0)  # unsettled: the last report says why
        return reports[-1]

    def _keep(self, board: str, first: HealthReport, report: HealthReport, actions: list[str]) -> None:
        """A ``health`` fact per subject; a ``lab-fault`` fact per subject that failed, cured or not."""
        action = "; ".join(actions) or "none"
        for subject in report.subjects():
            rows = [f for f in report.findings if f.subject == subject]
            self.record_fact(
                "health",
                {
                    "board": board,
                    "subject": subject,
                    "healthy": report.healthy(subject),
                    "findings": [f.__dict__ for f in rows],
                    "cured": bool(first.faults(subject)) and report.healthy(subject),
                    "action": action,
                },
            )
            faults = first.faults(subject)
            if faults and subject not in self.left_out.get(board, set()):
                fault = fault_of(subject, report.faults(subject) or faults)
                self.record_fact(
                    "lab-fault",
                    {
                        "test_id": f"health check of {subject}",
                        "category": faults[0].category,
                        "host": faults[0].host,
                        "message": str(fault),
                        "evidence": fault.evidence,
                        "recovered": report.healthy(subject),
                        "action": action,
                    },
                )
        self.attach("\n".join(report_table(report)) + f"\n\ncures tried: {action}\n", f"health of {board}")


def check_lab(inventory: Inventory, table: HealthTable) -> HealthReport:
    """Every board of the lab and its links, checked once over fresh SSH connections and
    no cure tried: what ``pinet lab check --live`` prints."""
    remote = [
        entry.name for entry in inventory.hosts.values() if entry.remote_place and not entry.endpoint.address
    ]
    if remote:
        raise LabFault(
            "unreachable", f"{', '.join(remote)}: a coordinator place; check it from a run that acquired it"
        )
    hosts = {name: entry.connect() for name, entry in inventory.hosts.items()}
    try:
        findings: list[Finding] = []
        for board in inventory.boards:
            findings += check_place(inventory, hosts, board.name, table).findings
        return HealthReport(tuple(findings))
    finally:
        for host in hosts.values():
            host.close()
