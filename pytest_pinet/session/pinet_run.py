"""State of one run shared by hooks and fixtures: settings, results, store, place, strategies."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import TYPE_CHECKING

from .. import __version__
from ..lab.inventory import Inventory, load_inventory
from ..model import Measurement
from ..record.data_home import store_url
from ..record.results_dir import ResultsDir
from ..record.store import ResultsStore
from ..virtlab import lifecycle
from .place_keeper import PlaceChooser, PlaceKeeper
from .settings import PinetSettings

if TYPE_CHECKING:
    from ..judge.baseline import BaselinePolicy
    from ..lab.strategy import PinetBoardStrategy
    from ..record.standing_memo import StandingBook


class PinetRun:
    """State of one pytest process's run (each xdist worker has its own, with the same id)."""

    def __init__(
        self, settings: PinetSettings, run_id: str, is_worker: bool, chooser: PlaceChooser | None = None
    ) -> None:
        self.settings = settings
        self.run_id = run_id
        self.is_worker = is_worker
        self.results = ResultsDir(settings.results, run_id)
        self.spec = settings.lab_spec()
        self.lab_error: str | None = None
        self.labgrid_env: object | None = None  # the one labgrid Environment of this process
        self._store: ResultsStore | None = None
        self.row_ids: dict[str, int] = {}  # Measurement.id -> store row
        self._runs_added: set[str] = set()  # labs this run is registered under in the store
        self._books: dict[BaselinePolicy, StandingBook] = {}
        self.strategies: dict[str, PinetBoardStrategy] = {}  # host name -> its strategy, this process
        self.places = PlaceKeeper(settings, run_id, self.results, chooser)
        self._absent_told = False
        self.lab_detect: float | None = None

    @property
    def store(self) -> ResultsStore:
        """The results store, opened on first use (each xdist worker opens its own)."""
        if self._store is None:
            self._store = ResultsStore(store_url(self.settings.db))
        return self._store

    def standings(self, policy: BaselinePolicy) -> StandingBook:
        """The contexts' standings before this run, for ``policy`` (record/standing_memo.py):
        one book for the run, so every verdict of the night reads the acceptances as they
        stood at its first verdict (one made meanwhile counts from the next night on), and
        the store is asked for them once, not twice per measurement."""
        if policy not in self._books:
            from ..record.standing_memo import StandingBook

            self._books[policy] = StandingBook(self.store, policy)
        return self._books[policy]

    def record(self, measurement: Measurement) -> Path:
        """Commit a measurement to the results files and the store; return its raw directory."""
        raw_dir = self.results.record(measurement)
        if measurement.context.lab not in self._runs_added:
            self.store.add_run(self.run_id, measurement.context.lab, __version__)
            self._runs_added.add(measurement.context.lab)
        self.row_ids[measurement.id] = self.store.add(self.run_id, measurement, __version__)
        return raw_dir

    def env_file(self) -> Path:
        """The labgrid env file of this process's place, taking the place on first need
        (and building it, for a virtual place)."""
        place = self.places.take()
        if place.source == "virtual":
            self.spec = dataclasses.replace(self.spec, name=place.name)
            return lifecycle.ensure_up(self.spec, self.run_id)
        assert place.env_file is not None
        return place.env_file

    def inventory(self) -> Inventory:
        """The inventory of this process's place, its templates filled with the place's values."""
        env_file = self.env_file()
        place = self.places.place
        inventory = load_inventory(env_file, dict(place.substitutions) if place is not None else None)
        self.lab_detect = inventory.detect_pct  # the verdicts' detect target when the run sets none
        if inventory.absent and not self._absent_told:
            self._absent_told = True  # what the lab could not bring up, for the summary
            self.results.record_fact("absent", {"absent": dict(inventory.absent)})
        return inventory

    def release_lab(self) -> None:
        """Give back what the run took: its places, and the virtual labs it built (unless kept).

        Called by every process; the controller also releases what a killed worker held.
        """
        self.places.release()
        if self.is_worker:
            return
        self.places.release_leftovers()
        if not self.settings.virtual or os.geteuid() != 0:
            return
        if self.settings.keep_lab:
            for kept in lifecycle.owned_labs(self.spec, self.run_id):
                lifecycle.disown(kept)
        else:
            lifecycle.release_all(self.spec, self.run_id)
