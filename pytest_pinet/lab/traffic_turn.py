"""Traffic that takes turns: the labs that name one turn file measure one test's traffic at a
time, across every process on this machine (xdist workers, a second run, a bench).

Why: a virtual lab's links are this machine's kernel and its iperf3 runs on this machine's
cores.  Two xdist workers measuring two namespace boards at once each measured the other's
load as well: on CI's two cores one direction of four read 893 Mbit/s with 659 retransmits
where the same link alone reads 941.  On hardware two such boards are two machines and need
no turns, unless they share something the lab file knows (a peer, a switch uplink): then
their labs name one turn file too (``pinet.traffic_turn``, docs/inventory.md).

Only the traffic takes turns, not a test's set-up: flashing, booting and provisioning of one
board still overlap another's measurement, as a board rebooting beside a busy one does in a
rack.  The turn is an ``flock``, so a killed holder frees it at once; it is re-entrant within
a process, because one measurement may be made of others.
"""

from __future__ import annotations

import fcntl
import logging
import os
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ..errors import LabFault
from ..polling import wait_until

log = logging.getLogger(__name__)

# The longest a measurement waits for its turn: a long sweep of another worker (the routing
# upload sweep on a QEMU board, about 4 minutes under TCG) ends well within it; a turn held
# longer is a hung holder, and the waiting test's lab is at fault, not its board.
TURN_WAIT_S = 900.0
POLL_S = 0.2
WAIT_TOLD_S = 1.0  # a wait longer than this is logged: it is time the run spent on nothing


def machine_turn_file() -> Path:
    """The turn file every virtual lab on this machine names: they all share its cores."""
    run_lock = Path("/run/lock")
    where = run_lock if run_lock.is_dir() and os.access(run_lock, os.W_OK) else Path(tempfile.gettempdir())
    return where / "pinet-virtual-traffic.lock"


class _Held:
    """This process's hold on one turn file: its descriptor and how deep the nesting is."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.depth = 0


_HELD: dict[Path, _Held] = {}
_GUARD = threading.Lock()


def _holder(path: Path) -> str:
    """Who holds the turn, as its file says, for the lab fault's message."""
    try:
        pid = path.read_text().strip()
    except OSError:
        return "another process"
    return f"pid {pid}" if pid.isdigit() else "another process"


def _take(path: Path, wait_s: float) -> tuple[int, float]:
    """Open and lock ``path``; returns the descriptor and the seconds waited."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    except OSError as exc:
        raise LabFault("traffic-turn", f"cannot open the traffic turn file {path}: {exc.strerror}") from exc
    started = time.monotonic()

    def locked() -> bool:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        return True

    def held_too_long() -> LabFault:
        holder = _holder(path)
        os.close(fd)
        return LabFault(
            "traffic-turn",
            f"waited {time.monotonic() - started:.0f} s for the traffic turn ({path}), held by {holder}: "
            "another measurement on the machines this lab shares has not ended",
        )

    wait_until(locked, timeout=wait_s, pace=POLL_S, on_timeout=held_too_long)
    os.ftruncate(fd, 0)
    os.write(fd, f"{os.getpid()}\n".encode())
    return fd, time.monotonic() - started


@contextmanager
def traffic_turn(path: Path | None, wait_s: float = TURN_WAIT_S) -> Iterator[float]:
    """Hold the turn of ``path`` (None: this lab takes no turns) while the block runs; yields
    the seconds waited for it (0 when already held by this process)."""
    if path is None:
        yield 0.0
        return
    with _GUARD:
        held = _HELD.get(path)
    waited = 0.0
    if held is None:
        fd, waited = _take(path, wait_s)
        held = _Held(fd)
        with _GUARD:
            _HELD[path] = held
        if waited > WAIT_TOLD_S:
            log.info("waited %.1f s for the traffic turn (%s)", waited, path)
    held.depth += 1
    try:
        yield waited
    finally:
        held.depth -= 1
        if held.depth == 0:
            with _GUARD:
                del _HELD[path]
            fcntl.flock(held.fd, fcntl.LOCK_UN)
            os.close(held.fd)
