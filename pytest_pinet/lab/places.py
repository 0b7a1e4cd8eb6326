"""Places: which board and peers one test process may use, and the lock that makes it its own.

labgrid has no pytest-xdist support: every worker would build the same Environment and drive
the same board.  pinet gives each worker its own *place* (a board with its peers: a virtual
lab ``pinetN``, one env file of a list, or a place reserved from a labgrid coordinator).

Places on this machine are locked with ``flock`` on a lock file per place.  The kernel drops
such a lock when its process dies, so a worker killed with SIGKILL still frees its place:
nothing has to notice the death.  Each lock file is unlinked by its holder on release, and a
taker re-checks after locking that the file it holds is still the one at the path, so two
processes can never both believe they hold a place.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..errors import LabFault
from ..polling import Pace, poll_for

WORKER_ID = re.compile(r"^gw([0-9]+)$")


@dataclass(frozen=True)
class Place:
    """One place: its name, how it was found, and its env file once known."""

    name: str
    source: str  # "virtual", "env" or "coordinator"
    env_file: Path | None = None
    # What the env file's ``!template $LG_PLACE`` / ``$LG_COORDINATOR`` stand for at this place.
    substitutions: tuple[tuple[str, str], ...] = ()


def worker_index() -> int | None:
    """This process's pytest-xdist worker number (gw3 -> 3), or None outside xdist."""
    match = WORKER_ID.match(os.environ.get("PYTEST_XDIST_WORKER", ""))
    return int(match.group(1)) if match else None


def worker_count() -> int:
    """How many xdist workers the run has (1 outside xdist)."""
    try:
        return max(1, int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")))
    except ValueError:
        return 1


def lock_name(place: str) -> str:
    """A file name for a place's lock: readable, and safe for any place name or path."""
    readable = re.sub(r"[^A-Za-z0-9_.-]", "_", place)[-40:]
    digest = hashlib.sha256(place.encode("utf-8")).hexdigest()[:12]
    return f"{readable}-{digest}.lock"


class PlaceLock:
    """An exclusive hold on one place on this machine, released on close or process death."""

    def __init__(self, lock_dir: Path, place: str) -> None:
        self.place = place
        self.path = lock_dir / lock_name(place)
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        """True while this object holds the place."""
        return self._fd is not None

    def holder(self) -> str:
        """Who holds the place, as its lock file says ("pid 1234"), for a waiting message."""
        try:
            pid = self.path.read_text().strip()
        except OSError:
            return "another run"
        return f"pid {pid}" if pid.isdigit() else "another run"

    def try_take(self) -> bool:
        """Take the place if nobody holds it; never waits."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        while True:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                return False
            # The holder before us may have unlinked the file between our open and our lock:
            # then we hold a lock nobody else can see.  Start again on the current file.
            try:
                same = os.stat(self.path).st_ino == os.fstat(fd).st_ino
            except FileNotFoundError:
                same = False
            if same:
                os.ftruncate(fd, 0)
                os.write(fd, f"{os.getpid()}\n".encode())
                self._fd = fd
                return True
            os.close(fd)

    def release(self) -> None:
        """Give the place back (unlinking the lock file first, so no file is left behind)."""
        if self._fd is None:
            return
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()
        os.close(self._fd)
        self._fd = None
        with contextlib.suppress(OSError):
            self.path.parent.rmdir()  # only when no other place is held


Waiting = Callable[[str], None]  # told once, when a take has to wait, what it waits for


def _waiting_line(lock: PlaceLock, wait: float) -> str:
    """What a run that has to wait is waiting for: a silent wait of minutes looks like a hang."""
    return (
        f"pinet: waiting up to {wait:.0f} s for place {lock.place} "
        f"(held by {lock.holder()}, lock {lock.path}; --pinet-place-wait sets the bound)"
    )


def hold_hosts(
    lock_dir: Path, lab: str, hosts: Sequence[str], wait: float = 3600.0, waiting: Waiting | None = None
) -> list[PlaceLock]:
    """Hold every host of ``hosts`` of one lab, all at once or none: a board and its peers.

    Several workers (or several runs) on one env file each measure their own board; a peer
    two boards share is measured by one of them at a time.  Taking all or none, and trying
    again after a pause, means no process ever waits while holding part of what another
    needs, so two of them can never wait for each other.
    """
    names = sorted(set(hosts))
    told: list[bool] = []

    def take_all() -> list[PlaceLock] | None:
        taken: list[PlaceLock] = []
        for name in names:
            lock = PlaceLock(lock_dir, f"{lab}#{name}")
            if not lock.try_take():
                if waiting is not None and not told:
                    waiting(_waiting_line(lock, wait))
                    told.append(True)
                for held in taken:
                    held.release()
                return None
            taken.append(lock)
        return taken

    def busy() -> LabFault:
        return LabFault("place-busy", f"{lab}: hosts {names} stayed in use by another run for {wait:.0f} s")

    held = poll_for(take_all, timeout=wait, pace=Pace(0.05, backoff=2, longest=1.0), on_timeout=busy)
    assert held is not None  # poll_for raises on timeout
    return held


def take_place(
    candidates: Sequence[Place],
    lock_dir: Path,
    preferred: int = 0,
    wait: float = 3600.0,
    waiting: Waiting | None = None,
) -> tuple[Place, PlaceLock]:
    """Take the first free place, starting at ``preferred`` (a worker's own index).

    Worker ``gwN`` first tries place N, so a run with as many places as workers gives each
    worker its own without contention; with fewer places, workers wait for one to free up.
    """
    if not candidates:
        raise ValueError("no places to choose from")
    order = [candidates[(preferred + i) % len(candidates)] for i in range(len(candidates))]
    told: list[bool] = []

    def first_free() -> tuple[Place, PlaceLock] | None:
        for place in order:
            lock = PlaceLock(lock_dir, place.name)
            if lock.try_take():
                return place, lock
            if waiting is not None and place is order[-1] and not told:
                waiting(_waiting_line(lock, wait))
                told.append(True)
        return None

    def all_taken() -> LabFault:
        names = ", ".join(p.name for p in candidates)
        return LabFault("place-busy", f"every place ({names}) stayed taken for {wait:.0f} s")

    taken = poll_for(first_free, timeout=wait, pace=Pace(0.1, backoff=2, longest=2.0), on_timeout=all_taken)
    assert taken is not None  # poll_for raises on timeout
    return taken
