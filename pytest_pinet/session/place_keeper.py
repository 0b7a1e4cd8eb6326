"""Which place this pytest process uses, taken on first need and always given back.

One keeper per process.  An xdist worker ``gwN`` prefers place N, so ``pytest -n K`` over K
places gives every worker its own and no two workers ever drive the same board; a run with
fewer places than workers makes the spare workers wait for a place to free up.

Given back on every way out: normal end and Ctrl-C through pytest's session end; a crashed
or killed worker through the kernel (local ``flock``) and through the controller, which
releases every coordinator place a worker of this run recorded and did not release.
"""

from __future__ import annotations

import dataclasses
import os
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ..errors import ConfigError, LabFault
from ..lab.places import Place, PlaceLock, hold_hosts, take_place, worker_count, worker_index
from ..virtlab.topology import DEFAULT_STATE_ROOT, STATE_ROOT_ENV
from .settings import PinetSettings

# Given the candidate places and this process's preferred index, the places to try in order
# (a lab's conftest may implement the ``pytest_pinet_choose_place`` hook to pick by its own rule).
PlaceChooser = Callable[[Sequence[Place], int], Sequence[Place] | None]


def local_lock_dir() -> Path:
    """Where this machine's place locks live: the virtual labs' state root if writable."""
    root = Path(os.environ.get(STATE_ROOT_ENV, DEFAULT_STATE_ROOT))
    if os.access(root if root.exists() else root.parent, os.W_OK):
        return root
    return Path(tempfile.gettempdir()) / f"pinet-places-{os.getuid()}"


def virtual_place_names(settings: PinetSettings) -> list[str]:
    """The virtual labs a run spreads over: one per worker (or ``--pinet-places``), else the one."""
    count = settings.places or (worker_count() if worker_index() is not None else 0)
    if count == 0:
        return [settings.virtual_lab]
    return [f"pinet{number}" for number in range(1, count + 1)]


def env_places(settings: PinetSettings) -> list[Place]:
    """One place per env file of ``--pinet-lab a.yaml,b.yaml``."""
    return [Place(str(path), "env", path) for path in settings.lab_files]


def say_waiting(line: str) -> None:
    """Tell the user at once what the run waits for, past pytest's output capture (the wait
    happens inside a fixture, whose output pytest would show only after the test)."""
    stream = sys.__stderr__
    if stream is not None:
        stream.write(line + "\n")
        stream.flush()


class PlaceKeeper:
    """Takes this process's place on first need and gives it back exactly once."""

    def __init__(
        self, settings: PinetSettings, run_id: str, results: Any, chooser: PlaceChooser | None = None
    ) -> None:
        self.settings = settings
        self.chooser = chooser
        self.run_id = run_id
        self.results = results  # ResultsDir: where places taken are recorded for the controller
        self.place: Place | None = None
        self._lock: PlaceLock | None = None
        self._reservation: Any = None  # a coordinator.Reservation while one is held
        # One env file of several boards: its hosts are held per test (hold()), not the file.
        self._per_host = False

    def take(self) -> Place:
        """This process's place (taken, locked and recorded on the first call)."""
        if self.place is not None:
            return self.place
        preferred = worker_index() or 0
        if self.settings.coordinator:
            self.place = self._take_from_coordinator()
            return self.place
        if self.settings.virtual:
            candidates = [Place(name, "virtual") for name in virtual_place_names(self.settings)]
            lock_dir = self.settings.lab_spec().state_root  # beside the labs themselves
        else:
            candidates = env_places(self.settings)
            lock_dir = local_lock_dir()
            if len(candidates) == 1:  # nothing to choose between: no chooser is asked
                # One lab file: workers and runs share it and hold the hosts each test uses.
                self.place, self._per_host = candidates[0], True
                self._note("taken", per_host=True)
                return self.place
        if self.chooser is not None:
            chosen = self.chooser(candidates, preferred)
            if chosen is not None:
                candidates, preferred = list(chosen), 0
        self.place, self._lock = take_place(
            candidates, lock_dir, preferred, self.settings.place_wait, say_waiting
        )
        self._note("taken")
        return self.place

    def _take_from_coordinator(self) -> Place:
        from ..lab import coordinator

        client = coordinator.Client(self.settings.coordinator)
        reservation = client.reserve_and_acquire(self.settings.place_tags, self.run_id)
        # Held from here on: recorded before anything else can fail, so that release() and,
        # if this process dies, the controller give it back.
        self._reservation = reservation
        self.place = Place(
            reservation.place,
            "coordinator",
            substitutions=(("LG_COORDINATOR", self.settings.coordinator), ("LG_PLACE", reservation.place)),
        )
        self._note("taken", token=reservation.token)
        self.place = dataclasses.replace(self.place, env_file=self._coordinator_env(reservation.place))
        return self.place

    def _coordinator_env(self, place: str) -> Path:
        """The env file of a reserved place: ``<dir>/<place>.yaml`` when --pinet-lab is a
        directory, else the one env file (which then names its place with ``$LG_PLACE``,
        filled in when the file is read: the process environment is left alone)."""
        lab = Path(self.settings.lab)
        if lab.is_dir():
            env_file = lab / f"{place}.yaml"
            if not env_file.is_file():
                raise ConfigError(
                    str(lab),
                    f"the coordinator gave place {place!r} but there is no {env_file.name}",
                    "add one env file per place, named after it",
                )
            return env_file
        return lab

    def _note(self, event: str, **extra: Any) -> None:
        """Record in the results which place this process took or gave back."""
        assert self.place is not None
        self.results.record_fact(
            "place",
            {
                "event": event,
                "place": self.place.name,
                "source": self.place.source,
                "worker": os.environ.get("PYTEST_XDIST_WORKER", "main"),
                "pid": os.getpid(),
                **extra,
            },
        )

    def hold(self, hosts: Sequence[str]) -> Callable[[], None]:
        """Hold ``hosts`` of this process's lab for one test; returns what gives them back.

        Only a lab shared at host level (one env file) needs it: a virtual place, a place from
        a list of env files or a coordinator's place is this process's alone already.
        """
        place = self.take()
        if not self._per_host:
            return lambda: None
        locks = hold_hosts(local_lock_dir(), place.name, hosts, self.settings.place_wait, say_waiting)

        def give_back() -> None:
            for lock in locks:
                lock.release()

        return give_back

    def release(self) -> None:
        """Give the place back; safe to call more than once."""
        if self.place is None:
            return
        if self._reservation is not None:
            reservation, self._reservation = self._reservation, None
            try:
                still_held = reservation.release()
            except LabFault as fault:
                self._fault("coordinator", f"releasing place {reservation.place} failed: {fault}")
            else:
                if not still_held:
                    self._fault(
                        "coordinator",
                        f"place {reservation.place} was no longer acquired at release: the coordinator "
                        "forgot it (restarted during the run)",
                    )
                if reservation.client.reconnects:
                    self._fault(
                        "coordinator",
                        f"coordinator {reservation.client.address} was unreachable for "
                        f"{reservation.client.reconnects} call(s); waited it out",
                        recovered=True,
                    )
        if self._lock is not None:
            self._lock.release()
            self._lock = None
        self._note("released")
        self.place = None

    def _fault(self, category: str, message: str, recovered: bool = False) -> None:
        self.results.record_fact(
            "lab-fault",
            {
                "test_id": "(session)",
                "category": category,
                "host": self.settings.coordinator,
                "message": message,
                "recovered": recovered,
                "action": "waited for the coordinator" if recovered else "none",
            },
        )

    def release_leftovers(self) -> list[str]:
        """On the controller: release coordinator places whose worker died holding them."""
        if not self.settings.coordinator:
            return []
        from ..lab import coordinator

        held: dict[str, dict[str, Any]] = {}
        for fact in self.results.load_facts():
            if fact.get("kind") != "place" or fact.get("source") != "coordinator":
                continue
            key = f"{fact.get('place')}:{fact.get('pid')}"
            if fact.get("event") == "taken":
                held[key] = fact
            else:
                held.pop(key, None)
        client = coordinator.Client(self.settings.coordinator)
        released = []
        for fact in held.values():
            was_held = client.release_stale(str(fact["place"]), str(fact.get("token", "")))
            released.append(str(fact["place"]))
            self.results.record_fact(
                "place",
                {
                    "event": "released-leftover",
                    "place": fact["place"],
                    "source": "coordinator",
                    "worker": fact.get("worker"),
                    "pid": fact.get("pid"),
                    "still_held": was_held,
                },
            )
        return released
