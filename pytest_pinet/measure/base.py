"""What every measurer shares: the recorder it reports to, the hosts' facts, the context of
traffic over a link, and the observers' snapshots taken on every end at once."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Concatenate, NoReturn, ParamSpec, Protocol, TypeVar

from ..errors import LabFault, Unsupported
from ..host.facts import gather_facts
from ..host.qdisc_stats import QdiscStats
from ..host.remote import RemoteHost
from ..host.tunables import forget_unsupported
from ..judge.path_limit import path_limit
from ..lab.inventory import Inventory
from ..lab.traffic_turn import traffic_turn
from ..model import HostFacts, Measurement, Observation, QdiscUse, TrafficContext
from ..model.lab import LinkEntry
from ..traffic.adaptive import SettleRule
from ..traffic.iperf3_server import forget_iperf3_version
from ..traffic.latency_probe import forget_probe_tools
from ..traffic.observers import Snapshot, observe, take_snapshots
from ..traffic.run_driver import Progress
from ..traffic.udpgen import forget_udpgen

End = tuple[RemoteHost, str]  # a host and the interface watched on it

P = ParamSpec("P")
R = TypeVar("R")
M = TypeVar("M", bound="Measurer")


class Recorder(Protocol):
    """Where measurements go the moment they exist, and what a measurer cannot decide itself."""

    def record(self, measurement: Measurement) -> Measurement:
        """Commit ``measurement`` durably (results files, store, report) and return it."""

    def attach_chart(self, png: bytes | None, name: str) -> None:
        """Show a chart of a sweep beside the results (a report attachment, or nothing)."""

    def unsupported(self, exc: Unsupported, name: str, kind: str) -> NoReturn:
        """A host cannot take what the measurement needs (a filesystem, say): record why and
        stop this measurement without failing the board."""


class FactsCache:
    """Facts per host, gathered on first use and kept for the session."""

    def __init__(self, inventory: Inventory, hosts: dict[str, RemoteHost]) -> None:
        self.inventory = inventory
        self.hosts = hosts
        self._facts: dict[str, HostFacts] = {}

    def interfaces_of(self, host: str) -> list[str]:
        """Every interface of ``host`` that some link of the inventory uses."""
        names = [link.board_interface for link in self.inventory.links if link.board == host]
        names += [link.peer_interface for link in self.inventory.links if link.peer == host]
        return sorted(set(names))

    def forget(self, host: str) -> None:
        """Gather ``host``'s facts afresh on next use (it was reflashed: another kernel, OS,
        iperf3, a card without the UDP generator)."""
        self._facts.pop(host, None)
        if host in self.hosts:
            self.hosts[host].forget_os()
            forget_iperf3_version(self.hosts[host])
            forget_udpgen(self.hosts[host])
            forget_unsupported(self.hosts[host])
            forget_probe_tools(self.hosts[host])

    def __getitem__(self, host: str) -> HostFacts:
        if host not in self._facts:
            self._facts[host] = gather_facts(self.hosts[host], self.interfaces_of(host))
        return self._facts[host]


def limited(context: TrafficContext, **physics: Any) -> tuple[TrafficContext, float]:
    """``context`` with the part of its path that sets its limit, and that limit (Mbit/s, 0:
    none), as :func:`..judge.path_limit.path_limit` finds them; ``physics``: what the ends
    negotiated (``tcp_timestamps``) or send (``payload_bytes``)."""
    path = path_limit(context.as_match(), **physics)
    return dataclasses.replace(context, limited_by=path.part), path.mbps


def link_context(
    inventory: Inventory, facts: FactsCache, cable: LinkEntry, /, **fields: Any
) -> TrafficContext:
    """The context of traffic over ``cable``: lab, ends, cable, and the board's kernel, OS and
    driver of its port; ``fields`` says what was measured (and may override the cable's)."""
    board_facts = facts[cable.board]
    board_if = board_facts.interfaces.get(cable.board_interface)
    over_link: dict[str, Any] = {
        "lab": inventory.lab,
        "board": cable.board,
        "model": inventory.model_of(cable.board),
        "peer": cable.peer,
        "link": cable.name,
        "adapter": cable.adapter,
        "adapter_bus": cable.bus,
        "link_speed_mbps": cable.speed_mbps,
        "mtu": cable.mtu,
        "kernel": board_facts.kernel,
        "os": board_facts.os_name,
        "image": board_facts.image,
        "driver": (board_if.driver or "") if board_if else "",
    }
    return TrafficContext(**{**over_link, **fields})


@dataclass(frozen=True)
class Site:
    """Where a measurer works and reports: the lab (inventory, hosts, their facts), the test
    the results belong to, and the recorder that takes each result at once."""

    recorder: Recorder
    test_id: str
    inventory: Inventory
    facts: FactsCache
    hosts: dict[str, RemoteHost]
    # Where a running measurement reports itself once a second (what, seconds so far, most
    # seconds, per-second Mbit/s); None: nobody is watching.
    progress: Callable[[str, float, float, Sequence[float], bool], None] | None = None
    # The lines (Mbit/s) a verdict on a measurement of this context and line-rate limit will
    # compare its goodput with: an adaptive run is not stopped while its interval contains one.
    decide: Callable[[TrafficContext, float], tuple[float, ...]] | None = None


class Measurer:
    """Base of every measurer: what a :class:`Site` gives, and the snapshots, observations and
    facts every kind of measurement carries."""

    def __init__(self, site: Site) -> None:
        self.recorder = site.recorder
        self.test_id = site.test_id
        self.inventory = site.inventory
        self.facts = site.facts
        self.hosts = site.hosts
        self._progress = site.progress
        self._decide = site.decide
        self._cache: dict[tuple[str, ...], bool] = {}

    def turn(self) -> AbstractContextManager[float]:
        """Hold the lab's traffic turn (a context manager): see :func:`taking_turns`."""
        return traffic_turn(self.inventory.traffic_turn)

    def progress(self, what: str) -> Progress | None:
        """A progress callback for the traffic of ``what`` (a direction), or None."""
        report = self._progress
        if report is None:
            return None
        return lambda elapsed, planned, rates, done: report(what, elapsed, planned, rates, done)

    def decision_lines(self, context: TrafficContext, limit: float) -> tuple[float, ...]:
        """What the verdict on ``context`` will compare with (nothing when nobody judges)."""
        return self._decide(context, limit) if self._decide is not None else ()

    def snapshots(self, ends: Sequence[End]) -> list[Snapshot]:
        """Counters of every end, taken at once: one round trip of wall time, not one per end,
        and one command per host, whatever number of its interfaces are watched."""
        by_host: dict[int, tuple[RemoteHost, list[int]]] = {}
        for index, (host, _) in enumerate(ends):
            by_host.setdefault(id(host), (host, []))[1].append(index)
        groups = list(by_host.values())
        with ThreadPoolExecutor(max_workers=max(1, len(groups))) as pool:
            taken = list(
                pool.map(lambda group: take_snapshots(group[0], [ends[i][1] for i in group[1]]), groups)
            )
        placed: dict[int, Snapshot] = {}
        for (_, indexes), snapshots in zip(groups, taken, strict=True):
            placed.update(zip(indexes, snapshots, strict=True))
        return [placed[index] for index in range(len(ends))]

    @staticmethod
    def observations(
        ends: Sequence[End], before: Sequence[Snapshot], after: Sequence[Snapshot]
    ) -> tuple[Observation, ...]:
        """What each end did between two snapshots."""
        return tuple(
            observe(host.name, interface, old, new)
            for (host, interface), old, new in zip(ends, before, after, strict=True)
        )

    def facts_of(self, **roles: str) -> dict[str, HostFacts]:
        """Facts by role (``board="pi"`` -> ``{"board": facts of pi}``) for a measurement."""
        return {role: self.facts[host] for role, host in roles.items()}

    def tcp_timestamps(self, *hosts: RemoteHost) -> bool:
        """Whether TCP between ``hosts`` carries the timestamp option (12 bytes a segment).

        The option is used only when every end enables it (``net.ipv4.tcp_timestamps``); a
        profile may switch it off, so it is read when a measurer is made, after the profile.
        An end that cannot say is taken to use it (the Linux default and the lower limit):
        the model then never expects more than a wire with timestamps carries.
        """
        key = ("tcp_timestamps", *sorted(h.name for h in hosts))
        if key not in self._cache:

            def enabled(host: RemoteHost) -> bool:
                try:
                    result = host.run(host.platform.sysctl_read("net.ipv4.tcp_timestamps"), timeout=15)
                except (LabFault, Unsupported):
                    return True
                return not (result.ok and result.stdout.strip() == "0")

            with ThreadPoolExecutor(max_workers=max(1, len(hosts))) as pool:
                self._cache[key] = all(pool.map(enabled, hosts))
        return self._cache[key]

    def record(self, measurement: Measurement) -> Measurement:
        """Hand a result to the recorder."""
        return self.recorder.record(measurement)


def board_settle(settle: SettleRule | None, inventory: Inventory, board: str) -> SettleRule | None:
    """The adaptive rule for runs over ``board``: the run's, with the board's own precision
    where that is wider (``adaptive_precision_pct`` in the inventory).

    An emulated board's seconds scatter by 5 to 25 % (TCG), and its runs of one test by 13 to
    41 % from night to night: a 0.5 % rule never stopped one of its 54 runs in a main job
    (568 s of 10 s runs), while knowing one run's mean closer than the runs agree adds nothing.
    The decision lines still hold a run whose interval contains one (:func:`.clear_of`).
    """
    entry = inventory.hosts.get(board)
    wider = entry.adaptive_precision_pct if entry is not None else None
    if settle is None or wider is None or wider <= settle.precision_pct:
        return settle
    return dataclasses.replace(settle, precision_pct=wider)


def qdisc_use(interface: str, delta: QdiscStats) -> QdiscUse:
    """A qdisc's counters over one run as the measurement keeps them."""
    return QdiscUse(
        interface, delta.kind, delta.instances, delta.sent_bytes, delta.sent_packets,
        delta.dropped, delta.overlimits, delta.requeues,
    )  # fmt: skip


def taking_turns(measure: Callable[Concatenate[M, P], R]) -> Callable[Concatenate[M, P], R]:
    """A measurement that waits for its lab's traffic turn and holds it from its first probe
    to its last snapshot, so that no other test's traffic on the same machines is in its
    figures (lab/traffic_turn.py; labs without a turn file do not wait)."""

    @functools.wraps(measure)
    def in_turn(self: M, /, *args: P.args, **kwargs: P.kwargs) -> R:
        with self.turn():
            return measure(self, *args, **kwargs)

    return in_turn
