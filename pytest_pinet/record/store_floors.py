"""The floor each context's verdict held it to, as a method of :class:`..store.ResultsStore`:
what judge.detection measures a context's margin against (blind or not)."""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Any

from .store_revisions import in_chunks


class Floors:
    """What a store answers about floors; the store supplies its transactions."""

    def _tx(self) -> AbstractContextManager[Any]:
        raise NotImplementedError

    def _sql(self, statement: str) -> str:
        raise NotImplementedError

    def floors(self, keys: Sequence[str]) -> dict[str, float]:
        """The floor the newest measurement of each context of ``keys`` was held to (none for a
        context no rule judged, or whose newest measurement has no verdict yet)."""
        found: dict[str, float] = {}
        with self._tx() as cur:
            for chunk, marks in in_chunks(keys):
                cur.execute(
                    self._sql(
                        # Each context's newest row, from the (context, started) index: one row
                        # read per context, however long its history.
                        "SELECT c.context_key, (SELECT m.floor_mbps FROM measurements m "  # noqa: S608 - marks
                        "WHERE m.context_key = c.context_key ORDER BY m.started DESC LIMIT 1) "
                        f"FROM contexts c WHERE c.context_key IN ({marks})"
                    ),
                    tuple(chunk),
                )
                found |= {str(key): float(floor) for key, floor in cur.fetchall() if floor is not None}
        return found
