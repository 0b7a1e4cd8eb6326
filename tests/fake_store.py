"""A results store held in memory, for the morning digest's tests: its rows are the history."""

from __future__ import annotations

from typing import Any

from pytest_pinet.record.store import StoredMeasurement


class RowsStore:
    """The questions the morning digest asks of a store, answered from rows in memory."""

    def __init__(self, rows: list[StoredMeasurement]) -> None:
        self.rows = rows

    def of_run(self, run_id: str) -> list[StoredMeasurement]:
        return [r for r in self.rows if r.run_id == run_id]

    def history(self, key: str, before_run: str | None = None) -> list[StoredMeasurement]:
        return [r for r in self.rows if r.context_key == key and r.run_id != before_run]

    def recent_history(
        self, key: str, runs: int, usable: str = "", usable_args: Any = (), before_run: str | None = None
    ) -> tuple[list[StoredMeasurement], int]:
        """Every row of ``key`` before ``before_run`` (these histories are shorter than a walk)."""
        tonight = [r.started for r in self.rows if r.context_key == key and r.run_id == before_run]
        rows = [
            r
            for r in self.history(key, before_run)
            if r.run_id != before_run and (not tonight or r.started < min(tonight))
        ]
        return rows, len({r.run_id for r in rows})

    def acceptances(self, since: float | None = None) -> list[Any]:
        return []
