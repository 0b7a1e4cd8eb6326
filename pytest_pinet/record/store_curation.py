"""A person's word on the store's history: a known-bad run taken out of the baselines (or
put back), and a changed level accepted (or the acceptance undone); each touches the
revisions of the pairs it concerns (record/store_revisions.py), as methods of
:class:`..store.ResultsStore`."""

from __future__ import annotations

import re
import time
from contextlib import AbstractContextManager
from typing import Any

from ..errors import ConfigError
from ..judge.standing import EVERY_CONTEXT, Acceptance
from .store_revisions import Revisions


def masked_url(url: str) -> str:
    """A database URL with its password replaced, for messages and logs."""
    return re.sub(r"(://[^:/@]+:)[^@]*@", r"\1***@", url)


class Curation:
    """Exclusions and acceptances; the store supplies its transactions and its listings."""

    url: str
    _param: str
    _revisions: Revisions

    def _tx(self) -> AbstractContextManager[Any]:
        raise NotImplementedError

    def _sql(self, statement: str) -> str:
        raise NotImplementedError

    def runs(self) -> list[dict[str, Any]]:
        raise NotImplementedError

    def context_keys(self, lab: str | None = None) -> list[str]:
        raise NotImplementedError

    def exclude_run(self, run_id: str, why: str) -> None:
        """Take a run out of every baseline and trend (its rows stay); ``why`` is required."""
        if not why.strip():
            raise ConfigError("--why", "say why the run is excluded: it is shown wherever the run is")
        if run_id not in {run["run_id"] for run in self.runs()}:
            raise ConfigError(run_id, f"no such run in {masked_url(self.url)}", "see `pinet runs list`")
        with self._tx() as cur:
            cur.execute(self._sql("DELETE FROM run_exclusions WHERE run_id = ?"), (run_id,))
            cur.execute(
                self._sql("INSERT INTO run_exclusions (run_id, why, at) VALUES (?, ?, ?)"),
                (run_id, why.strip(), time.time()),
            )
            self._revisions.touch_run(cur, run_id)

    def include_run(self, run_id: str) -> bool:
        """Undo :meth:`exclude_run`; False if the run was not excluded."""
        with self._tx() as cur:
            cur.execute(self._sql("DELETE FROM run_exclusions WHERE run_id = ?"), (run_id,))
            included = bool(cur.rowcount)
            if included:
                self._revisions.touch_run(cur, run_id)
            return included

    def accept(self, run_id: str, context: str, why: str, who: str) -> Acceptance:
        """Record that the level from run ``run_id`` on is accepted in ``context`` (or
        ``EVERY_CONTEXT``); ``why`` and ``who`` are required, as they are shown with it."""
        if not why.strip():
            raise ConfigError("--why", "say why the change is accepted: it is shown wherever the change is")
        if not who.strip():
            raise ConfigError("--who", "name who accepts the change")
        if run_id not in {run["run_id"] for run in self.runs()}:
            raise ConfigError(run_id, f"no such run in {masked_url(self.url)}", "see `pinet runs list`")
        if context != EVERY_CONTEXT and context not in self.context_keys():
            raise ConfigError(
                context, f"no such context in {masked_url(self.url)}", "see `pinet regressions`"
            )
        at = time.time()
        row = (run_id, context, why.strip(), who.strip(), at)
        statement = "INSERT INTO acceptances (run_id, context_key, why, who, at) VALUES (?, ?, ?, ?, ?)"
        with self._tx() as cur:
            if self._param == "%s":
                cur.execute(self._sql(statement + " RETURNING id"), row)
                row_id = int(cur.fetchone()[0])
            else:
                cur.execute(statement, row)
                row_id = int(cur.lastrowid)
            self._revisions.touch_run(cur, run_id, None if context == EVERY_CONTEXT else context)
        return Acceptance(row_id, run_id, context, why.strip(), who.strip(), at)

    def undo_acceptance(self, acceptance_id: int, who: str) -> Acceptance:
        """Take an acceptance back (its row stays, marked undone by ``who``); the regression it
        ended is a regression again."""
        found = [a for a in self.acceptances() if a.id == acceptance_id]
        if not found:
            raise ConfigError(
                f"accept #{acceptance_id}", "no such standing acceptance", "see `pinet accept --list`"
            )
        with self._tx() as cur:
            cur.execute(
                self._sql("UPDATE acceptances SET undone_at = ?, undone_by = ? WHERE id = ?"),
                (time.time(), who, acceptance_id),
            )
            undone = found[0]
            self._revisions.touch_run(
                cur, undone.run_id, None if undone.context_key == EVERY_CONTEXT else undone.context_key
            )
        return found[0]

    def acceptances(self, *, since: float | None = None) -> list[Acceptance]:
        """Standing acceptances (not undone), oldest first; ``since``: made at or after it."""
        query = "SELECT id, run_id, context_key, why, who, at FROM acceptances WHERE undone_at IS NULL"
        args: tuple[Any, ...] = ()
        if since is not None:
            query += " AND at >= ?"
            args = (since,)
        with self._tx() as cur:
            cur.execute(self._sql(query + " ORDER BY at, id"), args)
            return [Acceptance(int(r[0]), r[1], r[2], r[3], r[4], float(r[5])) for r in cur.fetchall()]
