"""``tc -s qdisc show`` counters: proof that a queueing discipline was in the traffic's path.

Setting SFQ and measuring fairness proves nothing if the packets never passed the SFQ (a
multiqueue NIC with ``mq`` at the root, a shaper in front, an offload).  The counters of the
qdisc kind under test, read before and after the run, show that it carried the bytes, and
whether it queued (backlog, requeues) or dropped.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..errors import LabFault
from .remote import RemoteHost, stdout_of
from .shell import checked_interface, quote

HEAD = re.compile(r"^qdisc\s+(?P<kind>\S+)\s+(?P<handle>\S+)\s+(?P<where>root|parent\s+\S+)")
SENT = re.compile(
    r"Sent\s+(?P<bytes>\d+)\s+bytes\s+(?P<packets>\d+)\s+pkts?\s+\(dropped\s+(?P<dropped>\d+),\s+"
    r"overlimits\s+(?P<overlimits>\d+)\s+requeues\s+(?P<requeues>\d+)\)"
)


@dataclass(frozen=True)
class QdiscStats:
    """Counters of one qdisc (or the sum of all of one kind on an interface)."""

    kind: str
    sent_bytes: int = 0
    sent_packets: int = 0
    dropped: int = 0
    overlimits: int = 0
    requeues: int = 0
    instances: int = 0
    root: bool = False  # the interface's root qdisc (parse_qdisc_stats says)

    def __sub__(self, earlier: QdiscStats) -> QdiscStats:
        return QdiscStats(
            self.kind,
            self.sent_bytes - earlier.sent_bytes,
            self.sent_packets - earlier.sent_packets,
            self.dropped - earlier.dropped,
            self.overlimits - earlier.overlimits,
            self.requeues - earlier.requeues,
            self.instances,
            self.root,
        )


def parse_qdisc_stats(text: str) -> list[QdiscStats]:
    """Every qdisc in ``tc -s qdisc show dev IF`` output, with its counters, in order."""
    found: list[QdiscStats] = []
    kind: str | None = None
    root = False
    for line in text.splitlines():
        head = HEAD.match(line.strip())
        if head:
            kind, root = head.group("kind"), head.group("where") == "root"
            continue
        sent = SENT.search(line)
        if sent and kind is not None:
            found.append(
                QdiscStats(
                    kind,
                    int(sent.group("bytes")),
                    int(sent.group("packets")),
                    int(sent.group("dropped")),
                    int(sent.group("overlimits")),
                    int(sent.group("requeues")),
                    1,
                    root,
                )
            )
            kind = None
    return found


def total_of_kind(stats: list[QdiscStats], kind: str) -> QdiscStats:
    """Sum of every qdisc of ``kind`` (``mq`` gives one child per TX queue); :data:`ROOT`:
    the root qdisc alone, named by its own kind."""
    if kind == ROOT:
        roots = [item for item in stats if item.root]
        return roots[0] if roots else QdiscStats(ROOT)
    total = QdiscStats(kind)
    for item in stats:
        if item.kind == kind:
            total = QdiscStats(
                kind,
                total.sent_bytes + item.sent_bytes,
                total.sent_packets + item.sent_packets,
                total.dropped + item.dropped,
                total.overlimits + item.overlimits,
                total.requeues + item.requeues,
                total.instances + 1,
            )
    return total


def read_qdisc_stats(host: RemoteHost, interface: str) -> list[QdiscStats]:
    """The qdiscs of ``interface`` on ``host`` with their counters."""
    checked_interface(interface)
    return parse_qdisc_stats(host.check(host.platform.qdisc_show(interface, stats=True), timeout=15))


SECTION = "@@qdisc:"


def qdisc_texts(host: RemoteHost, interfaces: tuple[str, ...], timeout: float = 15) -> dict[str, str]:
    """``tc -s qdisc show`` of each interface, in one command: a board's two ports cost one
    SSH round trip, not two (0.15-0.25 s each on the QEMU board, before, after and once a
    second during every routed run).  Any failing ``tc`` fails it all, naming the command."""
    show = host.platform.qdisc_show
    script = " && ".join(
        f"echo {quote([SECTION + checked_interface(name)])} && {quote(show(name, stats=True))}"
        for name in interfaces
    )
    result = host.run_shell(script, timeout=timeout)
    texts: dict[str, list[str]] = {}
    lines: list[str] | None = None
    for line in stdout_of(host.name, result).splitlines():
        if line.startswith(SECTION):
            lines = texts.setdefault(line[len(SECTION) :].strip(), [])
        elif lines is not None:
            lines.append(line)
    missing = [name for name in interfaces if name not in texts]
    if missing:
        raise LabFault("command", f"{host.name}: `{result.command}` printed nothing for {', '.join(missing)}")
    return {name: "\n".join(found) for name, found in texts.items()}


def read_qdisc_stats_of(host: RemoteHost, interfaces: tuple[str, ...]) -> dict[str, list[QdiscStats]]:
    """:func:`read_qdisc_stats` of several interfaces in one command (:func:`qdisc_texts`)."""
    return {name: parse_qdisc_stats(text) for name, text in qdisc_texts(host, interfaces).items()}


BACKLOG = re.compile(r"backlog\s+(?P<size>\d+(?:\.\d+)?)(?P<unit>[KMG]?)b\s+(?P<packets>\d+)p")
SIZE_UNIT = {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3}  # tc's sprint_size: binary units


ROOT = ""  # as a qdisc kind: whatever qdisc is the interface's root (a link's own queue)
# The kernel keeps a qdisc's backlog in an unsigned 32-bit counter; accounting that went below
# zero (a known class of qdisc bugs) prints as about 4 GiB. No real queue comes near 2 GiB.
WRAPPED_FROM = 2**31


class WrappedBacklog(ValueError):
    """A backlog counter that wrapped below zero: how much is queued is unknown, not 4 GiB."""


def parse_backlog(text: str, kind: str) -> tuple[int, int] | None:
    """The queue held by every qdisc of ``kind`` in ``tc -s qdisc show`` output right now:
    (bytes, packets), or None when no qdisc of that kind is there.  ``tc`` prints large
    backlogs rounded (``150Kb``): the bytes are then as exact as tc made them.  A counter that
    wrapped below zero raises :class:`WrappedBacklog` (the queue is unknown, never 4 GiB).

    ``kind`` :data:`ROOT` takes the root qdisc, whichever it is: a link test puts no qdisc of
    its own, and the root (the virtual lab's cable tbf, a board's mq or pfifo_fast) counts
    every packet queued on the interface, its children's included."""
    found: tuple[int, int] | None = None
    current: str | None = None
    for line in text.splitlines():
        head = HEAD.match(line.strip())
        if head:
            current = head.group("kind") if kind != ROOT or head.group("where") == "root" else None
            continue
        backlog = BACKLOG.search(line)
        if backlog and current is not None and (kind == ROOT or current == kind):
            size = int(float(backlog.group("size")) * SIZE_UNIT[backlog.group("unit")])
            if size >= WRAPPED_FROM:
                raise WrappedBacklog(
                    f"qdisc {current} reports a backlog of {size} bytes with {backlog.group('packets')} "
                    f"packets: its counter wrapped below zero ({size - 2**32} bytes)"
                )
            was = found or (0, 0)
            found = (was[0] + size, was[1] + int(backlog.group("packets")))
            current = None
    return found
