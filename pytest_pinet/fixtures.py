"""Fixtures that give tests the lab: inventory, hosts, links, and measuring and judging.

The expensive parts are session-scoped (the lab, one SSH connection per host); what a test
calls is cheap.  A lab that cannot be reached skips the tests that need it with the reason,
instead of failing every one of them.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import os
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, NoReturn

import pytest

from .errors import ConfigError, LabFault, PinetError
from .judge.baseline import BaselinePolicy, judge_baseline
from .judge.linerate import tcp_goodput_limit
from .judge.thermal import thermal_evidence
from .judge.thresholds import Thresholds, load_thresholds
from .lab.facts import HostFacts, gather_facts
from .lab.inventory import HostEntry, Inventory, LinkEntry, load_inventory, resolve_remote
from .lab.profiles import AppliedProfile, Profile, apply_profile, load_profiles
from .lab.recovery import LabRecovery
from .lab.remote import RemoteHost
from .lab.tunables import Unsupported
from .measurement import Measurement, TrafficContext
from .record.allure_out import attach_measurement, write_metric
from .record.store import context_key, jain_fairness
from .secrets import mask
from .settings import PinetSettings
from .traffic.adaptive import SettleRule
from .traffic.iperf3_runner import AdaptiveStop, Iperf3Options, Iperf3Run, run_iperf3, run_iperf3_both_ways
from .traffic.observers import Snapshot, observe, take_snapshot

DIRECTIONS = ("board->peer", "peer->board")


def _run(config: pytest.Config) -> Any:
    from .plugin import PINET_RUN

    return config.stash[PINET_RUN]


@pytest.fixture(scope="session")
def pinet_settings(pytestconfig: pytest.Config) -> PinetSettings:
    """The effective pinet settings of this run."""
    settings: PinetSettings = _run(pytestconfig).settings
    return settings


@pytest.fixture(scope="session")
def pinet_inventory(pytestconfig: pytest.Config, pinet_settings: PinetSettings) -> Inventory:
    """The lab inventory; the virtual lab is built here on first need."""
    if pinet_settings.virtual and os.geteuid() != 0:
        pytest.skip(
            "the virtual lab needs root (network namespaces): run as root, "
            "or point --pinet-lab at a labgrid env file of a real lab"
        )
    try:
        env_file = _run(pytestconfig).env_file()
        return resolve_remote(load_inventory(env_file))
    except ConfigError as exc:
        pytest.fail(str(exc), pytrace=False)
    except PinetError as exc:
        pytest.skip(f"lab not available: {exc}")


@pytest.fixture(scope="session")
def pinet_hosts(
    request: pytest.FixtureRequest, pinet_inventory: Inventory
) -> Iterator[dict[str, RemoteHost]]:
    """One reusable SSH connection per host of the lab.

    Hosts the lab keeps off between runs (``power_on_at_start``: the QEMU board) are booted
    here through labgrid first, and switched off again when the session ends.
    """
    hosts = {name: RemoteHost(entry.endpoint) for name, entry in pinet_inventory.hosts.items()}
    dark = [entry for entry in pinet_inventory.hosts.values() if entry.power_on_at_start]
    strategies = _strategies(request.config)
    try:
        for entry in dark:
            env = request.getfixturevalue("labgrid_env")
            strategy = _strategy_for(env, entry, hosts[entry.name])
            strategies[entry.name] = strategy
            strategy.transition("reachable")
            _record_boot(request, entry, strategy)
        yield hosts
    finally:
        dark_names = {entry.name for entry in dark}
        for name, strategy in list(strategies.items()):
            # Only what the lab keeps dark goes dark again: a host power-cycled by a test or
            # by fault recovery stays on for the next session, as it was found.
            if name in dark_names:
                with contextlib.suppress(Exception):  # the run's results matter more than a clean off
                    strategy.transition("off")
            strategies.pop(name, None)
        for host in hosts.values():
            host.close()


def _strategies(config: pytest.Config) -> dict[str, Any]:
    """The session's board strategies by host: one per board, shared by every fixture."""
    strategies: dict[str, Any] = _run(config).strategies
    return strategies


def _strategy_for(labgrid_env: Any, entry: HostEntry, remote: RemoteHost) -> Any:
    """The host's PinetBoardStrategy: the env's if it declares one, else created on demand."""
    from .lab.strategy import PinetBoardStrategy, new_strategy

    target = labgrid_env.get_target(entry.name)
    try:
        strategy = target.get_driver(PinetBoardStrategy, activate=False)
    except Exception:  # labgrid raises NoDriverFoundError when the env declares none
        try:
            strategy = new_strategy(target, entry.name)
        except Exception as exc:  # e.g. no power driver: the board cannot be power-cycled
            pytest.skip(f"{entry.name} cannot be power-cycled: {exc}")
    strategy.remote = remote
    return strategy


def _record_boot(request: pytest.FixtureRequest, entry: HostEntry, strategy: Any) -> None:
    """Boot time, the kernel seen on the console and the console log, with the run's facts."""
    _run(request.config).results.record_fact(
        "boot",
        {
            "host": entry.name,
            "boot_seconds": strategy.boot_seconds,
            "console_login_seconds": strategy.console_login_seconds,
            "console_kernel": strategy.console_kernel,
            "console": strategy.console_log[-20000:],
        },
    )


@pytest.fixture(scope="session")
def board_entry(pinet_inventory: Inventory) -> HostEntry:
    """The first board of the lab."""
    if not pinet_inventory.boards:
        pytest.skip(f"{pinet_inventory.source}: the lab declares no board")
    return pinet_inventory.boards[0]


@pytest.fixture(scope="session")
def ethernet_link(pinet_inventory: Inventory, board_entry: HostEntry) -> LinkEntry:
    """The board's first link to a peer."""
    for link in pinet_inventory.links:
        if link.board == board_entry.name:
            return link
    pytest.skip(f"{pinet_inventory.source}: board {board_entry.name} has no link to a peer")


@pytest.fixture
def link_name(ethernet_link: LinkEntry) -> str:
    """Name of the link under test: the board's first link, unless a test parametrizes it
    (the adapter matrix runs over every link of the board)."""
    return ethernet_link.name


@pytest.fixture
def link_under_test(pinet_inventory: Inventory, link_name: str) -> LinkEntry:
    """The link the profile is applied to and measured over."""
    try:
        return pinet_inventory.link(link_name)
    except ConfigError as exc:
        pytest.skip(str(exc))


@pytest.fixture(scope="session")
def labgrid_env(pinet_inventory: Inventory) -> Any:
    """The labgrid Environment of the lab (the same file the inventory came from)."""
    from labgrid import Environment

    return Environment(config_file=str(pinet_inventory.source))


@pytest.fixture(scope="session")
def board_strategy(
    request: pytest.FixtureRequest,
    labgrid_env: Any,
    board_entry: HostEntry,
    pinet_hosts: dict[str, RemoteHost],
) -> Any:
    """The board's PinetBoardStrategy (the one that booted it, if the session did)."""
    strategies = _strategies(request.config)
    if board_entry.name not in strategies:
        strategies[board_entry.name] = _strategy_for(labgrid_env, board_entry, pinet_hosts[board_entry.name])
    return strategies[board_entry.name]


@pytest.fixture(scope="session")
def powered_board(request: pytest.FixtureRequest, board_strategy: Any, board_entry: HostEntry) -> HostEntry:
    """The board, freshly power-cycled and provisioned (off -> on -> reachable -> provisioned).

    The boot time and any console output are recorded with the run's facts.
    """
    board_strategy.transition("provisioned")
    try:
        import allure

        allure.attach(
            mask(board_strategy.console_log or "(no console on this target)"),
            f"{board_entry.name}: boot console",
            allure.attachment_type.TEXT,
        )
    except ImportError:
        pass
    _record_boot(request, board_entry, board_strategy)
    return board_entry


@pytest.fixture(scope="session")
def pinet_recovery(request: pytest.FixtureRequest) -> LabRecovery:
    """Recovery from lab faults for this process's place: power-cycle, re-provision, retry once.

    The place is looked up only when a fault happens: judging measurements that a test took
    without the lab must not make the process take (and perhaps wait for) a place.
    """
    strategies = _strategies(request.config)

    def lab() -> tuple[Inventory, dict[str, RemoteHost]]:
        return request.getfixturevalue("pinet_inventory"), request.getfixturevalue("pinet_hosts")

    def strategy_for(name: str) -> Any:
        if name not in strategies:
            from .lab.strategy import new_strategy

            try:
                target = request.getfixturevalue("labgrid_env").get_target(name)
                strategy = new_strategy(target, name, "pinet-recovery")
            except Exception:  # no power driver: this host can only be reconnected
                return None
            strategy.remote = lab()[1][name]
            strategies[name] = strategy
        return strategies[name]

    def attach(text: str, name: str) -> None:
        try:
            import allure

            allure.attach(mask(text), name, allure.attachment_type.TEXT)
        except ImportError:
            pass

    return LabRecovery(lab, strategy_for, _run(request.config).results.record_fact, attach)


@pytest.fixture(scope="session")
def pinet_thresholds(pinet_settings: PinetSettings) -> Thresholds:
    """The thresholds file, validated."""
    try:
        return load_thresholds(pinet_settings.thresholds)
    except ConfigError as exc:
        pytest.fail(str(exc), pytrace=False)


@pytest.fixture(scope="session")
def iperf3_options(pinet_settings: PinetSettings) -> Iperf3Options:
    """iperf3 options from the settings (streams, duration, omit)."""
    return Iperf3Options(
        streams=pinet_settings.streams, duration=pinet_settings.duration, omit=pinet_settings.omit
    )


class FactsCache:
    """Facts per host, gathered on first use and kept for the session."""

    def __init__(self, inventory: Inventory, hosts: dict[str, RemoteHost]) -> None:
        self.inventory = inventory
        self.hosts = hosts
        self._facts: dict[str, HostFacts] = {}

    def interfaces_of(self, host: str) -> list[str]:
        names = [link.board_interface for link in self.inventory.links if link.board == host]
        names += [link.peer_interface for link in self.inventory.links if link.peer == host]
        return sorted(set(names))

    def __getitem__(self, host: str) -> HostFacts:
        if host not in self._facts:
            self._facts[host] = gather_facts(self.hosts[host], self.interfaces_of(host))
        return self._facts[host]


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
        "peer": cable.peer,
        "link": cable.name,
        "adapter": cable.adapter,
        "link_speed_mbps": cable.speed_mbps,
        "mtu": cable.mtu,
        "kernel": board_facts.kernel,
        "os": board_facts.os_name,
        "driver": (board_if.driver or "") if board_if else "",
    }
    return TrafficContext(**{**over_link, **fields})


@pytest.fixture(scope="session")
def host_facts(pinet_inventory: Inventory, pinet_hosts: dict[str, RemoteHost]) -> FactsCache:
    """Facts of every host (kernel, OS, board, CPU, interfaces), gathered once per session."""
    return FactsCache(pinet_inventory, pinet_hosts)


class TcpMeasurer:
    """Takes TCP measurements over one link, with facts and observers, recording each at once."""

    def __init__(
        self,
        request: pytest.FixtureRequest,
        inventory: Inventory,
        hosts: dict[str, RemoteHost],
        link: LinkEntry,
        options: Iperf3Options,
        facts: FactsCache,
        profile: str = "stock",
        settle: SettleRule | None = None,
    ) -> None:
        self.profile = profile
        self.settle = settle
        self.request = request
        self.inventory = inventory
        self.hosts = hosts
        self.link = link
        self.options = options
        self.facts = facts
        self.board = hosts[link.board]
        self.peer = hosts[link.peer]

    def _options(self, sender: RemoteHost) -> Iperf3Options:
        congestion = self.inventory.hosts[sender.name].tcp_congestion
        return dataclasses.replace(self.options, congestion=congestion)

    def _context(self, direction: str, scenario: str, duplex: str) -> TrafficContext:
        return link_context(
            self.inventory,
            self.facts,
            self.link,
            scenario=scenario,
            direction=direction,
            duplex=duplex,
            streams=self.options.streams,
            duration_s=self.options.duration,
            omit_s=self.options.omit,
            profile=self.profile,
        )

    def _snapshots(self) -> list[Snapshot]:
        # Both ends at once: one round trip of wall time instead of two.
        ends = ((self.board, self.link.board_interface), (self.peer, self.link.peer_interface))
        with ThreadPoolExecutor(max_workers=2) as pool:
            return list(pool.map(lambda end: take_snapshot(*end), ends))

    def _observations(self, before: list[Snapshot], after: list[Snapshot]) -> list[dict[str, Any]]:
        ends = ((self.board.name, self.link.board_interface), (self.peer.name, self.link.peer_interface))
        return [
            dataclasses.asdict(observe(name, interface, old, new))
            for (name, interface), old, new in zip(ends, before, after, strict=True)
        ]

    def _record(
        self, context: TrafficContext, run_: Iperf3Run, limit: float, observations: list[dict[str, Any]]
    ) -> Measurement:
        facts = {
            "board": dataclasses.asdict(self.facts[self.link.board]),
            "peer": dataclasses.asdict(self.facts[self.link.peer]),
        }
        test_id = self.request.node.nodeid
        if context.duplex == "full":
            test_id += f"#{context.direction}"
        measurement = Measurement.from_iperf3(test_id, context, run_, limit, facts, observations)
        return record_and_attach(self.request.config, measurement)

    def half_duplex(self, direction: str, scenario: str = "ethernet") -> Measurement:
        """One end sends, the other receives."""
        if direction not in DIRECTIONS:
            raise ValueError(f"direction must be one of {DIRECTIONS}, got {direction!r}")
        link = self.link
        if direction == "board->peer":
            sender, receiver, address, watch = self.board, self.peer, link.peer_address, link.peer_interface
        else:
            sender, receiver, address, watch = self.peer, self.board, link.board_address, link.board_interface
        context = self._context(direction, scenario, "half")
        adaptive = AdaptiveStop(self.settle, watch) if self.settle else None
        before = self._snapshots()
        result = run_iperf3(sender, receiver, address, self._options(sender), adaptive)
        observations = self._observations(before, self._snapshots())
        return self._record(context, result, tcp_goodput_limit(link.speed_mbps, link.mtu), observations)

    def full_duplex(
        self, scenario: str = "ethernet", peer_stream_mbps: int | None = None
    ) -> tuple[Measurement, Measurement]:
        """Both ends send at once; returns (board->peer, peer->board).

        ``peer_stream_mbps`` throttles the peer's streams (iperf3 ``-b`` per stream; the seed
        ran its PC at 40 Mbit/s x 10) to see what the board sends while it also receives.
        """
        link = self.link
        peer_options = self._options(self.peer)
        target = 0
        if peer_stream_mbps is not None:
            peer_options = dataclasses.replace(peer_options, bitrate=f"{peer_stream_mbps}M")
            target = peer_stream_mbps * peer_options.streams
        before = self._snapshots()
        forward, backward = run_iperf3_both_ways(
            self.board,
            self.peer,
            link.board_address,
            link.peer_address,
            self._options(self.board),
            peer_options,
            (self.settle, link.board_interface, link.peer_interface) if self.settle else None,
        )
        observations = self._observations(before, self._snapshots())
        # Upper bound: the ACKs of the other direction cost little with stretch ACKs (the
        # virtual lab measured one ACK per ~33 segments); see LinkModel for the ACK model.
        limit = tcp_goodput_limit(link.speed_mbps, link.mtu)
        back_context = dataclasses.replace(
            self._context("peer->board", scenario, "full"), rate_target_mbps=target
        )
        return (
            self._record(self._context("board->peer", scenario, "full"), forward, limit, observations),
            self._record(back_context, backward, min(limit, target) if target else limit, observations),
        )


@pytest.fixture(scope="session")
def pinet_profiles(pinet_settings: PinetSettings) -> dict[str, Profile]:
    """The tuning profiles file, validated."""
    try:
        return load_profiles(pinet_settings.profiles)
    except ConfigError as exc:
        pytest.fail(str(exc), pytrace=False)


def skip_unsupported(
    request: pytest.FixtureRequest, exc: Unsupported, name: str, kind: str = "profile"
) -> NoReturn:
    """Record what a host could not take as a fact of the run, then skip the test with it.

    Shared by every fixture that provisions (profiles, the routed path, qdiscs,
    filesystems), so the summary's "unsupported" lines cover them all alike.
    """
    _run(request.config).results.record_fact(
        "unsupported-tunable",
        {
            "test_id": request.node.nodeid,
            "profile": name,
            "what": kind,
            "host": exc.host,
            "tunable": exc.tunable,
            "reason": exc.reason,
        },
    )
    pytest.skip(f"{kind} {name}: {exc}")


@pytest.fixture(params=["stock"])
def profile(
    request: pytest.FixtureRequest,
    pinet_profiles: dict[str, Profile],
    pinet_hosts: dict[str, RemoteHost],
    link_under_test: LinkEntry,
) -> Iterator[AppliedProfile]:
    """Apply a named profile to the board and peer of the link; restore it afterwards.

    Parametrize with ``@pytest.mark.parametrize("profile", [...], indirect=True)``.  A
    tunable the host cannot take skips the test with the reason and records the fact.
    """
    name = request.param
    if name not in pinet_profiles:
        pytest.fail(f"profile {name!r} is not in the profiles file ({sorted(pinet_profiles)})", pytrace=False)
    hosts = {"board": pinet_hosts[link_under_test.board], "peer": pinet_hosts[link_under_test.peer]}
    try:
        applied = apply_profile(pinet_profiles[name], hosts, link_under_test)
    except Unsupported as exc:
        skip_unsupported(request, exc, name)
    yield applied
    problems = applied.restore()
    if problems:
        _run(request.config).results.record_fact("restore-failed", {"profile": name, "problems": problems})
        pytest.fail("restoring the profile failed: " + "; ".join(problems), pytrace=False)


@pytest.fixture
def measure_tcp(
    request: pytest.FixtureRequest,
    pinet_inventory: Inventory,
    pinet_hosts: dict[str, RemoteHost],
    link_under_test: LinkEntry,
    iperf3_options: Iperf3Options,
    host_facts: FactsCache,
    profile: AppliedProfile,
    pinet_settings: PinetSettings,
) -> TcpMeasurer:
    """Measure TCP goodput over ``link_under_test`` under ``profile``; each result is recorded at once."""
    return TcpMeasurer(
        request,
        pinet_inventory,
        pinet_hosts,
        link_under_test,
        iperf3_options,
        host_facts,
        profile.profile.name,
        pinet_settings.settle_rule(),
    )


def record_and_attach(config: pytest.Config, measurement: Measurement) -> Measurement:
    """Commit a measurement (results files, store) first, then add the report evidence."""
    _run(config).record(measurement)
    attach_measurement(measurement)
    alluredir = getattr(config.option, "allure_report_dir", None)
    if alluredir:
        write_metric(Path(alluredir), measurement)
    return measurement


@pytest.fixture
def record_measurement(request: pytest.FixtureRequest) -> Callable[[Measurement], Measurement]:
    """Record a measurement taken by a test's own traffic generator, like the built-in ones."""
    return lambda measurement: record_and_attach(request.config, measurement)


@pytest.fixture
def judge_goodput(
    request: pytest.FixtureRequest,
    pinet_thresholds: Thresholds,
    pinet_settings: PinetSettings,
) -> Callable[..., list[Measurement]]:
    """Judge measurements against their threshold rules; a failure states all three figures.

    Pass the measurements, or a callable that takes them: then a result below its floor is
    measured again (``--pinet-remeasure`` times; on the virtual lab once by default, because
    its host is shared and a neighbour's burst is not a regression), and a lab fault while
    measuring is recovered from by power-cycling the place and measuring once more.  Every attempt is
    recorded and shown; the verdict is the last attempt's.  Every direction is judged before
    the test fails, so a full-duplex failure reports both.
    """

    run = _run(request.config)
    policy = BaselinePolicy(
        window=pinet_settings.baseline_window,
        min_history=pinet_settings.baseline_min,
        min_band_percent=pinet_settings.baseline_band,
    )

    known: list[str] = []
    invalid: list[str] = []

    def verdicts(measurements: Sequence[Measurement]) -> list[str]:
        failures = []
        known.clear()
        invalid.clear()
        for measurement in measurements:
            context = measurement.context.as_match()
            row = run.row_ids.get(id(measurement))
            heat = thermal_evidence(
                measurement.observations, measurement.context.board, pinet_settings.max_temp
            )
            if heat:
                # Not judged, not a baseline sample: the board was not in a state to measure.
                invalid.append(f"{measurement.context.direction}: {heat}")
                if row is not None:
                    run.store.set_verdict(row, "invalid-thermal", heat)
                continue
            verdict = pinet_thresholds.judge(
                context,
                measurement.goodput_mbps,
                measurement.limit_mbps,
                jain_fairness(measurement.per_stream_mbps),
            )
            history = [
                h.goodput_mbps
                for h in run.store.history(context_key(context), before_run=run.run_id)
                if h.verdict not in ("", "lab-fault", "invalid-thermal")
            ]
            baseline = judge_baseline(measurement.goodput_mbps, history, policy)
            retr = measurement.retransmits
            tail = f"; retransmits {retr if retr is not None else 'n/a'}"
            kinds = []
            if verdict is None:
                failures.append(f"no rule in {pinet_thresholds.source} matches {context}: add one")
                kinds.append("no-rule")
            elif not verdict.passed and verdict.known_slow:
                known.append(f"{measurement.context.direction}: {verdict.known_slow} ({verdict.explain()})")
                kinds.append("known-slow")
            elif not verdict.passed:
                failures.append(
                    f"below threshold: {measurement.context.direction} goodput {verdict.explain()}{tail}"
                )
                kinds.append("below-threshold")
            if baseline.regression:
                failures.append(
                    f"regression against baseline: {measurement.context.direction} {baseline.explain()}{tail}"
                )
                kinds.insert(0, "regression")
            if row is not None:
                reason = verdict.explain() if verdict else "no threshold rule"
                run.store.set_verdict(
                    row, "+".join(kinds) or "pass", f"{reason}; baseline: {baseline.explain()}"
                )
        return failures

    def judge(*taken: Measurement | Callable[[], Sequence[Measurement]]) -> list[Measurement]:
        measure: Callable[[], Sequence[Measurement]] | None = None
        first = taken[0] if taken else None
        if len(taken) == 1 and callable(first):
            # Only a test that measures here needs the lab (and its recovery); judging
            # measurements taken elsewhere does not.
            recovery: LabRecovery = request.getfixturevalue("pinet_recovery")
            measure = functools.partial(recovery.measure, request.node.nodeid, first)
        measurements = list(measure()) if measure else [m for m in taken if isinstance(m, Measurement)]
        failures = verdicts(measurements)
        earlier: list[str] = []
        attempts = pinet_settings.remeasure if measure else 0
        while failures and attempts > 0 and not any(f.startswith("no rule") for f in failures):
            # A regression against the baseline is re-measured too: noise first, then verdict.
            attempts -= 1
            earlier.append("; ".join(failures))
            _run(request.config).results.record_fact(
                "remeasured", {"test_id": request.node.nodeid, "because": failures}
            )
            measurements = list(measure()) if measure else measurements
            failures = verdicts(measurements)
        if failures:
            history = "".join(f"\n(earlier attempt: {e})" for e in earlier)
            pytest.fail("\n".join(failures) + history, pytrace=False)
        if invalid:
            raise LabFault(
                "thermal", "measurement invalid, board too hot or throttled: " + "; ".join(invalid)
            )
        if known:
            pytest.xfail("known slow: " + "; ".join(known))
        return measurements

    return judge
