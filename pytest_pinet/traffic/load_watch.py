"""Latency under load of one run: an idle probe first, then, beside the load, a probe whose
figures start after the warm-up and the board's qdisc backlog sampled once a second.

irtt starts with the load and its probes of the warm-up are left out by their send times, so
its handshake crosses a path that is still idle.  ping, which stamps nothing, starts after the
warm-up.  Both are stopped with the load (SIGINT), so a run that the adaptive rule ends early
is not followed by seconds of probing nothing (4 s of a namespace half duplex's 13.8).  irtt
is planned to run well past the load (:data:`IRTT_OVERRUN_S`): interrupted while it waits for
late replies after its planned end, it writes nothing ("context canceled"; reproduced with a
SIGINT 50 ms after a 3 s run's end, while 100 ms before and after both gave their file).

:class:`LoadWatch` is a context manager around the traffic::

    watch = LoadWatch(plan_or_reason, board, interfaces, qdisc, omit_s, duration_s)
    watch.probe_idle()
    with released_on_error(watch):
        before = read_counters(...)
    with watch:
        run = run_iperf3(...)
    latency = watch.result()

A probe that cannot run at all (no tool, every idle probe lost) leaves ``not_measured``
with the reason and takes no load probe; one that dies mid-run is a lab fault.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from types import TracebackType

from ..errors import LabFault
from ..host.qdisc_stats import WrappedBacklog, parse_backlog, qdisc_texts
from ..host.remote import RemoteHost
from ..model.latency import BacklogSample, LatencyUse
from .latency_parse import ProbeSeries, figures_of
from .latency_probe import (
    IRTT,
    REPLY_WAIT_FACTOR,
    REPLY_WAIT_S,
    IrttServer,
    Probe,
    ProbePlan,
    idle_interval_s,
    run_probe,
    sleep_until,
)

log = logging.getLogger(__name__)

# Long enough for an idle median: 20 irtt probes (0.4 s at 20 ms) or 10 pings (2 s at 0.2 s; a
# BSD's 1 s interval gives 2).  Every test that measures latency pays it once per run.
IDLE_PROBES = 20
IDLE_SECONDS_MAX = 2.0


def idle_seconds(interval_s: float) -> float:
    """How long the idle probe runs at ``interval_s``: IDLE_PROBES of them, at most
    IDLE_SECONDS_MAX."""
    return min(IDLE_SECONDS_MAX, IDLE_PROBES * interval_s)


BACKLOG_EVERY_S = 1.0

# irtt is planned this much longer than the load, so that the load's end always finds it still
# probing: interrupted after its planned end, while it waits for late replies, irtt exits with
# "context canceled" and writes nothing, and a load ends late whenever iperf3's closing exchange
# waits behind a deep queue.  It is always stopped with the load, so the margin costs no time.
IRTT_OVERRUN_S = 30.0
# What the irtt server's lifetime allows between the idle probe and the load (counters read
# before it, servers started); it is stopped explicitly, the lifetime only bounds a lost pinet.
BEFORE_LOAD_S = 60.0


def not_reported(host: str, system: str) -> str:
    """Why a host gives no queue telemetry: a BSD has no qdisc, so no backlog, overlimits or
    requeues to read (ALTQ queues, when a lab configures them, are not read); the interface's
    output drops are still counted, in its ``netstat -I IF -bdn`` counters (the observers)."""
    return (
        f"{host} runs {system}: no qdisc, so backlog, overlimits and requeues are not reported "
        "(output drops: the interface's netstat counters)"
    )


class LoadWatch:
    """Probes and qdisc backlog beside one run of load."""

    def __init__(
        self,
        plan: ProbePlan | str,
        board: RemoteHost,
        interfaces: tuple[str, ...],
        qdisc: str,
        omit_s: float,
        duration_s: float,
    ) -> None:
        self.plan = plan
        self.board = board
        self.interfaces = interfaces
        self.qdisc = qdisc
        self.omit_s = omit_s
        self.duration_s = duration_s
        self.not_measured = plan if isinstance(plan, str) else None
        self.idle: ProbeSeries | None = None
        self.probe: Probe | None = None
        self.server: IrttServer | None = None
        self.backlog: list[BacklogSample] = []
        system = board.platform.name
        self.backlog_not_reported = None if system == "linux" else not_reported(board.name, system)

        self.wrapped = 0  # backlog samples left out: their counter had wrapped below zero
        self._stop = threading.Event()
        self._pool = ThreadPoolExecutor(max_workers=2)
        self._futures: list[Future[None]] = []
        self._sampler: Future[None] | None = None
        self._load_started = 0.0

    def probe_idle(self) -> None:
        """Probe before the load; all idle probes lost means the probe cannot see this path.

        irtt's server is started here and serves the probe beside the load too: a server
        each cost a QEMU board 0.6 s per test to start and stop again (0.37 + 0.24 s).  Left
        before its load (:meth:`release`), nothing of it stays."""
        if isinstance(self.plan, str):
            return
        every = idle_interval_s(self.plan)
        seconds = idle_seconds(every)
        port = self._server_port(seconds)
        try:
            self.idle = run_probe(self.plan, seconds, port, every)
        except BaseException:
            self.release()
            raise
        if self.idle.received == 0:
            self.not_measured = (
                f"all {self.idle.sent} idle {self.plan.tool} probes from {self.plan.prober.name} to "
                f"{self.plan.address} were lost (ICMP/UDP filtered or no route)"
            )
            self.release()

    def _server_port(self, idle_s: float = 0.0) -> int:
        """The irtt server's port, started on first use (0 for ping, which needs none).  Its
        ``timeout`` outlives the idle probe, the time until the load and the probe beside the
        load; it is always stopped when the load ends."""
        if not isinstance(self.plan, ProbePlan) or self.plan.tool != IRTT:
            return 0
        if self.server is None:
            planned = idle_s + BEFORE_LOAD_S + self.omit_s + self.duration_s + IRTT_OVERRUN_S
            lifetime = planned + REPLY_WAIT_FACTOR * REPLY_WAIT_S + 60
            server = IrttServer(self.plan.target, self.plan.address, lifetime)
            server.start()
            self.server = server
        return self.server.port

    def release(self) -> None:
        """Stop the irtt server: the load ended, or will not come (a failure before it)."""
        server, self.server = self.server, None
        if server is not None:
            server.stop()

    def __enter__(self) -> LoadWatch:
        self._load_started = time.monotonic()
        if self.backlog_not_reported is None:
            self._sampler = self._pool.submit(self._sample_backlog)
        if self.not_measured is None and isinstance(self.plan, ProbePlan):
            try:
                port = self._server_port()
            except BaseException:
                self._stop.set()
                self._pool.shutdown(wait=False)
                raise
            self.probe = (
                Probe(self.plan, self.omit_s + self.duration_s + IRTT_OVERRUN_S, port, self.omit_s)
                if self.plan.tool == IRTT
                else Probe(self.plan, self.duration_s, port)
            )
            self._futures.append(self._pool.submit(self._probe_with_the_load))
        return self

    def _probe_with_the_load(self) -> None:
        if self.probe is not None and not self.probe.keep_from_s:
            sleep_until(self._load_started + self.omit_s)
        if not self._stop.is_set() and self.probe is not None:
            self.probe.run()

    def _sample_backlog(self) -> None:
        tick = self._load_started
        while not self._stop.is_set():
            try:
                texts = qdisc_texts(self.board, self.interfaces, timeout=10)
            except LabFault as exc:
                log.warning("backlog of %s on %s not sampled: %s", self.interfaces, self.board.name, exc)
                texts = {}
            seconds = time.monotonic() - self._load_started
            for interface, text in texts.items():
                try:
                    found = parse_backlog(text, self.qdisc)
                except WrappedBacklog as exc:  # this sample says nothing of the queue: left out
                    log.warning("backlog of %s on %s not sampled: %s", interface, self.board.name, exc)
                    self.wrapped += 1
                    continue
                if found is not None and not self._stop.is_set():  # none taken after the load
                    self.backlog.append(BacklogSample(round(seconds, 2), interface, *found))
            tick += BACKLOG_EVERY_S
            self._stop.wait(max(0.0, tick - time.monotonic()))

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._stop.set()
        left = False
        try:
            if self.probe is not None and self.probe.outcome is None:
                started = self._load_started + (0.0 if self.probe.keep_from_s else self.omit_s)
                if time.monotonic() > started:
                    try:
                        self.probe.stop()  # the load ended before the probe's planned end
                    except LabFault as fault:
                        log.warning("could not stop the latency probe early: %s", fault)
            for future in self._futures:
                future.result()
            left = self._sampler is not None and not _ended_within(self._sampler, BACKLOG_EVERY_S + 1.0)
        finally:
            # A sampler still waiting on a board that stopped answering is left to end by its
            # own timeout: waiting for it held a hung QEMU board's lab fault back by 12 s, and
            # the samples it took before are kept.
            self._pool.shutdown(wait=not left)
            self.release()

    def result(self) -> LatencyUse:
        """The figures of this run; a probe that died is raised here as the lab's fault."""
        plan = self.plan if isinstance(self.plan, ProbePlan) else None
        if self.not_measured is None and self.probe is not None and self.probe.outcome is None:
            self.not_measured = f"the load ended within its {self.omit_s:g} s warm-up: no probe under load"
        series = self.probe.series() if self.not_measured is None and self.probe is not None else None
        if series is not None and not series.sent:
            self.not_measured = f"the load ended within its {self.omit_s:g} s warm-up: no probe under load"
            series = None
        load = figures_of(series) if series is not None else None
        return LatencyUse(
            tool=plan.tool if plan else "",
            prober=plan.prober.name if plan else "",
            target=plan.address if plan else "",
            interval_ms=plan.interval_s * 1000 if plan else 0.0,
            idle=figures_of(self.idle) if self.idle is not None else None,
            load=load,
            not_measured=self.not_measured,
            backlog=tuple(self.backlog),
            backlog_not_reported=self.backlog_not_reported,
            load_rtt_ms=series.rtt_ms if series is not None else (),
        )


@contextmanager
def released_on_error(watch: LoadWatch | None) -> Iterator[None]:
    """Whatever runs between the idle probe and the load: if it fails, the watch's irtt
    server is stopped at once rather than left to its lifetime."""
    try:
        yield
    except BaseException:
        if watch is not None:
            watch.release()
        raise


def _ended_within(future: Future[None], seconds: float) -> bool:
    """True when ``future`` ended within ``seconds`` (its own error then raised), else False."""
    try:
        future.result(timeout=seconds)
    except TimeoutError:
        log.warning("the backlog sampler still waits on its host after the load: not waited for")
        return False
    return True
