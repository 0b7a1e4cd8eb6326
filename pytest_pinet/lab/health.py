"""Lab health: is each board and link the lab the inventory describes?  A pure comparison.

A GbE cable that negotiated 100 Mbit/s, a USB 3 adapter that enumerated on a USB 2 port, the
wrong adapter plugged after someone borrowed one, a board still hot from the last run: each
makes a board look slow, and none is the board's regression.  This module compares a host's
facts (what it reports) with what the inventory and the adapter table expect, and returns
one :class:`Finding` per check with both values side by side.  It touches no host, so every
rule is tested on recorded outputs; :mod:`.health_gate` gathers the facts, tries the cures and
turns what stays into lab faults.

A check whose figure the host did not report is ``unknown`` (shown, never a pass and never a
fault): a virtio NIC reports no speed, a VM no temperature.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ..model.board_models import usb_speed_expected
from ..model.host_facts import HostFacts, InterfaceFacts
from ..model.lab import LinkEntry
from .health_table import HealthTable

OK = "ok"
FAULT = "FAULT"
UNKNOWN = "unknown"

# What cures a category: renegotiating the link, then a power-cycle of the place; None when
# neither can (a wrong adapter stays wrong until someone swaps it).
CURES: dict[str, tuple[str, ...]] = {
    "link-down": ("renegotiate", "power-cycle"),
    "link-negotiation": ("renegotiate", "power-cycle"),
    "usb-speed": ("power-cycle",),
    "adapter-mismatch": (),
    "mtu": (),
    "thermal": (),
    "image-mismatch": (),
    "kernel-pending": ("power-cycle",),  # a kernel installed and not booted: a boot cures it
    "facts": ("power-cycle",),
}
# vcgencmd's flags that make a board unfit to measure right now (the "-occurred" ones are history).
THROTTLE_NOW = frozenset({"under-voltage", "arm-frequency-capped", "throttled", "soft-temperature-limit"})


@dataclass(frozen=True)
class Finding:
    """One check of one subject: what was expected, what the host reported, the verdict."""

    subject: str  # "board pi", "link eth"
    host: str
    check: str  # "speed", "driver", "usb-speed", "temperature" ...
    expected: str
    found: str
    verdict: str  # OK, FAULT or UNKNOWN
    category: str  # the lab-fault category when FAULT

    @property
    def cures(self) -> tuple[str, ...]:
        """What may cure it, in the order to try."""
        return CURES.get(self.category, ())

    def line(self) -> str:
        """``link eth: pc speed: expected 1000 Mbit/s, found 100 Mbit/s``"""
        return f"{self.subject}: {self.host} {self.check}: expected {self.expected}, found {self.found}"


@dataclass(frozen=True)
class HealthReport:
    """Every finding of a place (or a lab), in check order."""

    findings: tuple[Finding, ...]

    def faults(self, subject: str | None = None) -> list[Finding]:
        """The failed checks (of ``subject`` only, when given)."""
        return [f for f in self.findings if f.verdict == FAULT and subject in (None, f.subject)]

    def subjects(self) -> list[str]:
        """Every subject checked, unhealthy ones first (then in check order)."""
        names = list(dict.fromkeys(f.subject for f in self.findings))
        bad = {f.subject for f in self.faults()}
        return [s for s in names if s in bad] + [s for s in names if s not in bad]

    def healthy(self, subject: str) -> bool:
        """No failed check of ``subject``."""
        return not self.faults(subject)


def board_subject(board: str) -> str:
    """The subject name of a board's checks."""
    return f"board {board}"


def link_subject(link: str) -> str:
    """The subject name of a link's checks."""
    return f"link {link}"


def _check(
    subject: str, host: str, check: str, expected: str, found: str | None, good: bool, category: str
) -> Finding:
    if found is None:
        return Finding(subject, host, check, expected, "not reported", UNKNOWN, category)
    return Finding(subject, host, check, expected, found, OK if good else FAULT, category)


def _mbps(value: float | None) -> str | None:
    return None if value is None else f"{value:g} Mbit/s"


def _speed(iface: InterfaceFacts) -> str | None:
    """The negotiated speed, and what reported it when not the NIC (an emulated cable)."""
    if iface.speed_mbps is None:
        return None
    return f"{iface.speed_mbps} Mbit/s" + (f" ({iface.reported_by})" if iface.reported_by else "")


def _duplex(subject: str, host: str, name: str, iface: InterfaceFacts) -> Finding:
    """Full duplex expected.  A NIC that reports no speed negotiated nothing, so its duplex is a
    driver's default (an emulated USB NIC says "Half"): unknown, shown as it said."""
    if iface.speed_mbps is None and iface.duplex is not None:
        said = f"{iface.duplex} (no speed reported: not negotiated)"
        return Finding(subject, host, f"{name} duplex", "full", said, UNKNOWN, "link-negotiation")
    return _check(
        subject, host, f"{name} duplex", "full", iface.duplex, iface.duplex == "full", "link-negotiation"
    )


def interface_findings(
    subject: str, host: str, link: LinkEntry, iface: InterfaceFacts | None
) -> list[Finding]:
    """Carrier, negotiated speed and duplex, MTU of one end of ``link``."""
    name = link.board_interface if host == link.board else link.peer_interface
    if iface is None:
        return [Finding(subject, host, f"{name}", "an interface", "not reported", UNKNOWN, "facts")]
    carrier = None if iface.carrier is None else ("up" if iface.carrier else "no carrier")
    found = [_check(subject, host, f"{name} carrier", "up", carrier, iface.carrier is True, "link-down")]
    if iface.carrier is False:
        return found  # speed and duplex mean nothing without a carrier
    found += [
        _check(
            subject,
            host,
            f"{name} speed",
            f"{link.speed_mbps} Mbit/s",
            _speed(iface),
            iface.speed_mbps == link.speed_mbps,
            "link-negotiation",
        ),
        _duplex(subject, host, name, iface),
        _check(
            subject,
            host,
            f"{name} MTU",
            str(link.mtu),
            None if iface.mtu is None else str(iface.mtu),
            iface.mtu == link.mtu,
            "mtu",
        ),
    ]
    return found


def adapter_findings(
    link: LinkEntry,
    os_name: str,
    iface: InterfaceFacts | None,
    table: HealthTable,
    undriven_usb3: tuple[str, ...] = (),
    model: str = "",
) -> list[Finding]:
    """The board's adapter of ``link``: its driver, USB IDs and USB bus speed against the table
    (``undriven_usb3``: USB 3 controllers of the board with no driver, the evidence of why an
    adapter cannot reach USB 3 speed). The speed expected is the adapter's, capped by the USB
    ports of the board's ``model`` (a USB 3 adapter on a Pi 3B+ is expected at 480)."""
    subject, host = link_subject(link.name), link.board
    where = f"{link.board_interface} adapter"
    spec = table.adapters.get(link.adapter)
    if spec is None:
        driver = iface.driver if iface is not None else None
        return [
            Finding(
                subject,
                host,
                where,
                f"{link.adapter} (not in the adapter table: add it to lab/lab_health.yaml)",
                driver or "not reported",
                UNKNOWN,
                "adapter-mismatch",
            )
        ]
    if iface is None:
        return []
    found = []
    drivers = spec.drivers.get(os_name)
    if drivers:
        found.append(
            _check(
                subject,
                host,
                f"{link.board_interface} driver",
                f"{' or '.join(drivers)} ({link.adapter})",
                iface.driver,
                iface.driver in drivers,
                "adapter-mismatch",
            )
        )
    if spec.usb_ids:
        found.append(
            _check(
                subject,
                host,
                f"{link.board_interface} USB ID",
                f"{' or '.join(spec.usb_ids)} ({link.adapter})",
                iface.usb_id,
                (iface.usb_id or "").lower() in spec.usb_ids,
                "adapter-mismatch",
            )
        )
    if spec.usb_mbps is not None:
        usb = usb_speed_expected(spec.usb_mbps, model)
        capped = f" (a {model}'s USB ports)" if usb < spec.usb_mbps else ""
        found.append(
            _check(
                subject,
                host,
                f"{link.board_interface} USB bus",
                f">= {usb:g} Mbit/s{capped}",
                _usb_found(iface.usb_speed_mbps, undriven_usb3 if usb > 480 else ()),
                iface.usb_speed_mbps is not None and iface.usb_speed_mbps >= usb,
                "usb-speed",
            )
        )
    return found


def _usb_found(speed: float | None, undriven: tuple[str, ...]) -> str | None:
    """The bus speed found, with the controllers that have no driver as its explanation."""
    if not undriven:
        return _mbps(speed)
    return f"{_mbps(speed) or 'not reported'}; no driver for {', '.join(undriven)}"


def link_findings(
    link: LinkEntry,
    board: HostFacts | None,
    peer: HostFacts | None,
    table: HealthTable,
    os_name: str,
    model: str = "",
) -> list[Finding]:
    """Every check of ``link``: both ends' carrier, speed, duplex and MTU, the board's adapter."""
    subject = link_subject(link.name)
    found: list[Finding] = []
    for host, facts, interface in (
        (link.board, board, link.board_interface),
        (link.peer, peer, link.peer_interface),
    ):
        if facts is None:
            found.append(Finding(subject, host, "facts", "an answer", "no answer", FAULT, "facts"))
            continue
        found += interface_findings(subject, host, link, facts.interfaces.get(interface))
    if board is not None:
        found += adapter_findings(
            link, os_name, board.interfaces.get(link.board_interface), table, board.undriven_usb3, model
        )
    return found


def board_findings(
    board: str, facts: HostFacts | None, table: HealthTable, image: str | None
) -> list[Finding]:
    """The board itself: idle temperature under its throttling point, no throttling now, and
    the image the run asked for (``image``; None when the run pins none)."""
    subject = board_subject(board)
    if facts is None:
        return [Finding(subject, board, "facts", "an answer", "no answer", FAULT, "facts")]
    rule = table.throttle_rule(facts.model)
    temp = None if facts.temperature_c is None else f"{facts.temperature_c:g} °C"
    found = []
    if rule is not None:
        name, limit = rule
        found.append(
            _check(
                subject,
                board,
                "idle temperature",
                f"< {limit:g} °C ("
                + ("the default throttling point)" if name == "default" else f"{name} throttles there)"),
                temp,
                facts.temperature_c is not None and facts.temperature_c < limit,
                "thermal",
            )
        )
    if facts.throttled is not None:
        now = sorted(THROTTLE_NOW.intersection(facts.throttled))
        found.append(
            Finding(
                subject,
                board,
                "throttling",
                "none",
                ", ".join(now) or "none",
                FAULT if now else OK,
                "thermal",
            )
        )
    if facts.kernel_installed:
        found.append(
            _check(
                subject,
                board,
                "kernel",
                f"{facts.kernel_installed} (installed)",
                facts.kernel,
                facts.kernel == facts.kernel_installed,
                "kernel-pending",
            )
        )
    if image:
        kernel = facts.image_marker.get("kernel", "")
        shown = facts.image or (
            f"not {image} (marker says {facts.image_marker.get('name', 'none')}, kernel {facts.kernel}"
            + (f", verified with {kernel})" if kernel else ")")
        )
        found.append(_check(subject, board, "image", image, shown, facts.image == image, "image-mismatch"))
    return found


def place_report(
    links: Iterable[LinkEntry],
    boards: Sequence[str],
    facts: dict[str, HostFacts | None],
    table: HealthTable,
    os_of: dict[str, str],
    images: dict[str, str] | None = None,
    models: dict[str, str] | None = None,
) -> HealthReport:
    """Findings of ``boards`` and every one of ``links`` (the facts of each host, None for a
    host that did not answer; ``os_of`` the platform name of each board, ``models`` the
    inventory's model of each)."""
    found: list[Finding] = []
    for board in boards:
        found += board_findings(board, facts.get(board), table, (images or {}).get(board))
    for link in links:
        found += link_findings(
            link,
            facts.get(link.board),
            facts.get(link.peer),
            table,
            os_of.get(link.board, ""),
            (models or {}).get(link.board, ""),
        )
    return HealthReport(tuple(found))


def report_table(report: HealthReport) -> list[str]:
    """Lines of a table per subject (unhealthy first): host, check, expected, found, verdict."""
    head = ("host", "check", "expected", "found", "verdict")
    rows = [
        (
            f.subject,
            (
                f.host,
                f.check,
                f.expected,
                f.found,
                f"{f.verdict} ({f.category})" if f.verdict == FAULT else f.verdict,
            ),
        )
        for f in report.findings
    ]
    widths = [max([len(head[i])] + [len(cells[i]) for _, cells in rows]) for i in range(4)]

    def line(cells: Sequence[str]) -> str:
        return "  " + " ".join(c.ljust(w) for c, w in zip(cells[:4], widths, strict=True)) + " " + cells[4]

    lines: list[str] = []
    for subject in report.subjects():
        lines.append(f"{subject}: {'healthy' if report.healthy(subject) else 'UNHEALTHY'}")
        lines.append(line(head))
        lines += [line(cells) for name, cells in rows if name == subject]
    return lines
