"""What ends an iperf3 run: its clients' own end, the adaptive rule, or a stall.

The clients run in threads; with watched receivers, the driver reads their counters once a
second and stops every client together once each rate settled (:mod:`.adaptive`), or at once
when a receiver's counters stood still for :data:`.adaptive.STALL_S` within the planned run:
a lab fault (``iperf3-stalled``) found 3 s after the cable went, not at the client's timeout.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_EXCEPTION, Future, ThreadPoolExecutor, wait
from typing import NamedTuple, NoReturn, Protocol

from ..errors import LabFault
from ..host.remote import RemoteHost
from .adaptive import (
    FIXED,
    MAX_DURATION,
    SETTLED,
    STALL_S,
    CounterSample,
    SettleRule,
    clear_of,
    parse_counter_sample,
    per_second_rates,
    sample_phase,
    settled_half_width_pct,
    stalled_for,
    warmup_end,
)

log = logging.getLogger(__name__)

# (seconds so far, seconds planned, the watched directions' latest Mbit/s, finished)
Progress = Callable[[float, float, Sequence[float], bool], None]


class Watch(NamedTuple):
    """A receiving end the adaptive run watches: its counters tell when the run has settled."""

    receiver: RemoteHost
    interface: str
    server_port: int
    decide_mbps: tuple[float, ...]  # the lines the run must end clear of (floor, baseline band)


class _Planned(Protocol):
    @property
    def duration(self) -> int: ...

    @property
    def omit(self) -> int: ...


class DrivenClient(Protocol):
    """What the driver needs of a client (:class:`.iperf3_runner._Client`)."""

    stalled: bool

    @property
    def options(self) -> _Planned: ...

    @property
    def sender(self) -> RemoteHost: ...

    def run(self) -> None: ...

    def interrupt(self) -> None: ...


def drive(
    clients: Sequence[DrivenClient],
    watches: list[Watch],
    rule: SettleRule | None,
    omit: int,
    progress: Progress | None = None,
) -> tuple[str, list[float | None]]:
    """Run the clients to their end, or stop them all once every watched rate settled.

    Returns (what ended the run, each watched direction's half-width in percent when it was
    measured, also for a run that went to its maximum; empty without watches).  A watched
    direction whose interval contains one of its decision lines is not settled (see
    :func:`.adaptive.clear_of`); the lines are only compared with payload counts (``ss``),
    never with an interface counter's frame bytes.
    Sampling that fails (a counter that cannot be read) only means the run goes to its
    configured maximum: adaptive duration saves time, it never costs a measurement.
    """
    with ThreadPoolExecutor(max_workers=len(clients)) as pool:
        running = [pool.submit(client.run) for client in clients]
        planned = max(c.options.duration + c.options.omit for c in clients)
        if rule is None:
            return _drive_fixed(running, planned, progress)
        samples: list[list[CounterSample]] = [[] for _ in watches]
        stalled: tuple[str, float] | None = None
        ended_by = MAX_DURATION
        precision: list[float | None] = [None for _ in watches]
        started = tick = time.monotonic()
        phase = sample_phase(omit)  # after the first reading, read at this fraction of each second
        while not all(f.done() for f in running):
            if any(f.done() and f.exception() is not None for f in running):
                # One direction failed: no rate to wait for; stop the others, keep what they took.
                _interrupt_all(clients)
                break
            if not _sample_receivers(watches, samples):
                break
            still = [stalled_for(s, warmup_end(s, omit)) if s else 0.0 for s in samples]
            # Only within the planned run: after it, still counters are a client's last exchange.
            if max(still, default=0.0) >= STALL_S and time.monotonic() - started <= planned:
                index = still.index(max(still))
                stalled = (watches[index].receiver.name, still[index])
                for client in clients:
                    client.stalled = True
                _interrupt_all(clients)
                break
            rates = [per_second_rates(s, warmup_end(s, omit)) if s else [] for s in samples]
            if progress is not None:
                progress(time.monotonic() - started, planned, [8 * r[-1] / 1e6 for r in rates if r], False)
            log.debug("adaptive: %s", [f"{len(r)} s, {settled_half_width_pct(r):.3f} %" for r in rates])
            precision = [settled_half_width_pct(r) if len(r) >= 2 else None for r in rates]
            decided = [
                clear_of(r, watch.decide_mbps) if s and all(x.tcp_bytes is not None for x in s) else True
                for r, s, watch in zip(rates, samples, watches, strict=True)
            ]
            if all(rule.settled(r) for r in rates) and all(decided):
                # Within 2 s of its own end a client is left to finish: a SIGINT crossing its
                # final exchange with the server can leave the server without a report.
                if planned - (time.monotonic() - started) > 2.0 and not all(f.done() for f in running):
                    _interrupt_all(clients)
                    ended_by = SETTLED
                break
            tick += phase if tick == started else 1.0
            wait(running, timeout=max(0.0, tick - time.monotonic()), return_when=FIRST_EXCEPTION)
        if progress is not None:
            progress(time.monotonic() - started, planned, (), True)
        if stalled is not None:
            raise_stalled(running, *stalled)
        for future in running:
            future.result()
    return ended_by, precision


def _drive_fixed(
    running: list[Future[None]], planned: float, progress: Progress | None
) -> tuple[str, list[float | None]]:
    """A fixed-duration run: wait for the clients, telling ``progress`` once a second."""
    started = time.monotonic()
    while progress is not None and not all(f.done() for f in running):
        progress(time.monotonic() - started, planned, (), False)
        wait(running, timeout=1.0, return_when=FIRST_EXCEPTION)
    if progress is not None:
        progress(time.monotonic() - started, planned, (), True)
    for future in running:
        future.result()
    return FIXED, []


def _sample_receivers(watches: list[Watch], samples: list[list[CounterSample]]) -> bool:
    """One counter reading per watched receiver; False when one cannot be read (the run then
    goes to its configured end: adaptive duration saves time, it never costs a measurement)."""
    try:
        for index, (host, interface, port, _lines) in enumerate(watches):
            sample = parse_counter_sample(
                host.run_shell(host.platform.receive_counter_script(interface, port), timeout=10).stdout
            )
            if sample is not None:
                samples[index].append(sample)
                log.debug("receiver %s sample: %s", host.name, sample)
    except LabFault as exc:
        log.warning("adaptive duration: cannot sample the receiver (%s); running to the end", exc)
        return False
    return True


def raise_stalled(running: list[Future[None]], receiver: str, seconds: float) -> NoReturn:
    """The run stopped moving: a lab fault naming the receiver, the clients' own errors beside."""
    errors = []
    for future in running:
        try:
            future.result()
        except LabFault as exc:
            errors.append(str(exc))
    said = f"; the client said: {'; '.join(errors)}" if errors else ""
    raise LabFault(
        "iperf3-stalled",
        f"{receiver} received nothing for {seconds:.1f} s after the warm-up (a cable down, a host or "
        f"the iperf3 server stopped); the run was stopped{said}",
        receiver,
    )


def _interrupt_all(clients: Sequence[DrivenClient]) -> None:
    """SIGINT to every client; one that cannot be reached just runs to its own end."""
    for client in clients:
        try:
            client.interrupt()
        except LabFault as exc:
            log.warning("adaptive duration: could not stop %s early (%s)", client.sender.name, exc)
