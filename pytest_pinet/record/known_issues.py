"""Known issues: a person's word that a difference on red contexts' paths is understood.

A lab that knows a firmware update made its USB adapters 3 % slower says so once, against
the difference the fingerprints show (``pinet known add --change "board eth1 firmware"
--why "..."``); every red context whose "what changed" names it then shows the issue's words
and counts as known, not new, on the morning page and in ``pinet regressions``.  An issue is
a note, not an acceptance: the contexts stay red until someone accepts the new level
(``pinet accept``) or the level comes back.  Removing one keeps its row.
"""

from __future__ import annotations

import fnmatch
import time
from collections.abc import Iterable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any

TABLE_SQLITE = """CREATE TABLE IF NOT EXISTS known_issues (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        change TEXT NOT NULL, contexts TEXT NOT NULL, why TEXT NOT NULL, who TEXT NOT NULL,
        at DOUBLE PRECISION NOT NULL, removed_at DOUBLE PRECISION, removed_by TEXT NOT NULL DEFAULT ''
    )"""
TABLE_POSTGRESQL = TABLE_SQLITE.replace("INTEGER PRIMARY KEY AUTOINCREMENT", "BIGSERIAL PRIMARY KEY")


@dataclass(frozen=True)
class KnownIssue:
    """One known issue: the difference it names, which contexts (a glob over context keys),
    why, who and when."""

    id: int
    change: str
    contexts: str
    why: str
    who: str
    at: float

    def names(self, context_key: str, lines: Iterable[str]) -> bool:
        """Whether this issue explains a red ``context_key`` whose what-changed ``lines`` are given."""
        wanted = self.change.casefold()
        return fnmatch.fnmatchcase(context_key, self.contexts) and any(
            wanted in line.casefold() for line in lines
        )

    def text(self) -> str:
        """``#3 "board eth1 firmware": why (who)``."""
        return f'#{self.id} "{self.change}": {self.why} ({self.who})'


def matching(issues: Sequence[KnownIssue], context_key: str, lines: Iterable[str]) -> list[str]:
    """The texts of the ``issues`` that explain a red context with these what-changed lines."""
    lines = list(lines)
    return [issue.text() for issue in issues if issue.names(context_key, lines)]


class KnownIssues:
    """What a store answers and keeps about known issues; the store supplies its transactions."""

    def _tx(self) -> AbstractContextManager[Any]:
        raise NotImplementedError

    def _sql(self, statement: str) -> str:
        raise NotImplementedError

    def known_issues(self) -> list[KnownIssue]:
        """The issues not removed, oldest first."""
        with self._tx() as cur:
            cur.execute(
                "SELECT id, change, contexts, why, who, at FROM known_issues "
                "WHERE removed_at IS NULL ORDER BY id"
            )
            return [
                KnownIssue(int(i), str(c), str(x), str(w), str(by), float(at))
                for i, c, x, w, by, at in cur.fetchall()
            ]

    def add_known_issue(self, change: str, why: str, who: str, contexts: str = "*") -> int:
        """Keep a known issue; its id."""
        with self._tx() as cur:
            statement = self._sql(
                "INSERT INTO known_issues (change, contexts, why, who, at) VALUES (?, ?, ?, ?, ?)"
            )
            values = (change, contexts, why, who, time.time())
            if self._sql("?") == "%s":
                cur.execute(statement + " RETURNING id", values)
                return int(cur.fetchone()[0])
            cur.execute(statement, values)
            return int(cur.lastrowid)

    def remove_known_issue(self, issue_id: int, who: str) -> bool:
        """Mark an issue removed (its row stays); False when no such issue is open."""
        with self._tx() as cur:
            cur.execute(
                self._sql(
                    "UPDATE known_issues SET removed_at = ?, removed_by = ? "
                    "WHERE id = ? AND removed_at IS NULL"
                ),
                (time.time(), who, issue_id),
            )
            return bool(cur.rowcount)
