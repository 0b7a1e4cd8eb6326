"""The results store's kept standings (record/standing_memo.py): the pairs a standing reads,
and the standings kept for them, as methods of :class:`..store.ResultsStore`."""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Any

from .store_revisions import PairSet, Revisions


class KeptStandings:
    """What a store answers about kept standings; the store supplies its transactions."""

    _revisions: Revisions

    def _tx(self) -> AbstractContextManager[Any]:
        raise NotImplementedError

    def _sql(self, statement: str) -> str:
        raise NotImplementedError

    def standing_pairs(self, key: str, run_id: str | None) -> tuple[PairSet | None, float | None]:
        """The pairs a standing of context ``key`` before run ``run_id`` reads (None: all of
        them) and the cut it reads them up to (record/store_revisions.py)."""
        with self._tx() as cur:
            if run_id is None:
                return self._revisions.every(cur, key), None
            return self._revisions.before(cur, key, run_id)

    def standing_pairs_kept(
        self, key: str, run_id: str, metric: str, rules: str
    ) -> tuple[PairSet | None, float | None, str | None]:
        """:meth:`standing_pairs` before run ``run_id`` and the standing of ``metric`` kept for
        them under ``rules`` (None: none), in one question."""
        with self._tx() as cur:
            return self._revisions.before_kept(cur, key, run_id, metric, rules)

    def newest_run_of(self, key: str) -> str | None:
        """The run whose rows of context ``key`` began last."""
        with self._tx() as cur:
            cur.execute(
                self._sql(
                    "SELECT run_id FROM context_runs WHERE context_key = ? "
                    "ORDER BY first_started DESC LIMIT 1"
                ),
                (key,),
            )
            found = cur.fetchone()
        return str(found[0]) if found is not None else None

    def kept_standing(self, key: str, metric: str, rules: str, pairs: PairSet) -> str | None:
        """The standing kept for exactly ``pairs`` (record/standing_memo.py), if any."""
        with self._tx() as cur:
            return self._revisions.kept(cur, key, metric, rules, pairs)

    def keep_standing(
        self, key: str, metric: str, rules: str, pairs: PairSet, regressed: bool, state: str
    ) -> None:
        """Keep a standing for ``pairs``. A store this user may only read keeps none: the
        standing is walked again next time, the answer the same."""
        try:
            with self._tx() as cur:
                self._revisions.keep(cur, key, metric, rules, pairs, regressed, state)
        except Exception as exc:
            if not _read_only(exc):
                raise

    def pairs_of_run(self, run_id: str) -> dict[str, tuple[PairSet, PairSet | None, float]]:
        """Each context run ``run_id`` measured: all its pairs, those before the run, the cut."""
        with self._tx() as cur:
            return self._revisions.of_run(cur, run_id)

    def every_pairs_of_run(self, run_id: str) -> dict[str, PairSet]:
        """All the pairs of each context run ``run_id`` measured, by context."""
        with self._tx() as cur:
            return self._revisions.every_of_run(cur, run_id)

    def kept_standings(self, metric: str, rules: str, wanted: dict[str, PairSet]) -> dict[str, str]:
        """The standings kept for exactly the pairs ``wanted`` names, by context."""
        with self._tx() as cur:
            return self._revisions.kept_of(cur, metric, rules, wanted)

    def keep_standings(
        self, metric: str, rules: str, standings: list[tuple[str, PairSet, bool, str]]
    ) -> None:
        """Keep many standings at once (a night's); a store this user may only read keeps none."""
        try:
            with self._tx() as cur:
                self._revisions.keep_many(cur, metric, rules, standings)
        except Exception as exc:
            if not _read_only(exc):
                raise

    def standings_listing(
        self, metric: str, rules: str, lab: str | None
    ) -> list[tuple[str, int | None, str | None]]:
        """Every context (of ``lab``) with whether its kept standing for its pairs now is in
        regression (None: none kept) and, when it is, the standing."""
        with self._tx() as cur:
            return [
                (key, flag, state)
                for key, _, _, flag, state in self._revisions.listing(cur, metric, rules, lab)
            ]


def _read_only(exc: Exception) -> bool:
    """Whether ``exc`` says the store may only be read (a file or a role without writes)."""
    text = str(exc).lower()
    return "readonly" in text or "read-only" in text or "permission denied" in text
