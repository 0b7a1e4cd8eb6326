"""The spread prior each night was judged with, kept in the store (judge/spread_prior.py).

A context's verdict pools its own spread with its group's (the contexts of one board and
scenario: the same CPU, cables and luck of the night).  The group's prior for a run is fitted
once, from the standings before the run, and kept here under the run, the group and the
metric, before the first verdict that uses it; every later reader (another xdist worker,
tomorrow's walk of the context, ``pinet regressions``) reads the one kept, so a walk from the
first night judges each night with the prior it was judged with.  A run that judged nothing
of a group has no prior for it; its nights are walked without one, as they were judged.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Any

from ..judge.spread_prior import SpreadPrior
from ..model.context_key import ContextKey

# The fields of a context key whose contexts share their noise.
GROUP_FIELDS = ("lab", "board", "scenario")

TABLE = """CREATE TABLE IF NOT EXISTS spread_priors (
        run_id TEXT NOT NULL,
        grp TEXT NOT NULL,
        metric TEXT NOT NULL,
        prior TEXT NOT NULL,
        PRIMARY KEY (run_id, grp, metric)
    )"""


def group_of(key: str) -> str:
    """The group of context ``key``: the contexts its spread is pooled with."""
    return str(ContextKey.parse(key).only(GROUP_FIELDS))


class SpreadPriors:
    """What a store keeps of spread priors; the store supplies its transactions."""

    def _tx(self) -> AbstractContextManager[Any]:
        raise NotImplementedError

    def _sql(self, statement: str) -> str:
        raise NotImplementedError

    def spread_priors(self, group: str, metric: str) -> dict[str, SpreadPrior | None]:
        """Every kept prior of ``group`` and ``metric``, by run (None: the run found none)."""
        with self._tx() as cur:
            cur.execute(
                self._sql("SELECT run_id, prior FROM spread_priors WHERE grp = ? AND metric = ?"),
                (group, metric),
            )
            return {str(run_id): SpreadPrior.parse(str(text)) for run_id, text in cur.fetchall()}

    def keep_spread_prior(
        self, run_id: str, group: str, metric: str, prior: SpreadPrior | None
    ) -> SpreadPrior | None:
        """Keep ``prior`` for the run, group and metric unless one is kept already (another
        worker's, fitted at the same moment); return the one kept."""
        with self._tx() as cur:
            cur.execute(
                self._sql(
                    "INSERT INTO spread_priors (run_id, grp, metric, prior) VALUES (?, ?, ?, ?) "
                    "ON CONFLICT (run_id, grp, metric) DO NOTHING"
                ),
                (run_id, group, metric, prior.text() if prior is not None else ""),
            )
            cur.execute(
                self._sql("SELECT prior FROM spread_priors WHERE run_id = ? AND grp = ? AND metric = ?"),
                (run_id, group, metric),
            )
            return SpreadPrior.parse(str(cur.fetchone()[0]))
