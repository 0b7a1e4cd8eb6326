"""Boards out of service: what failed its health check night after night is left out.

LAVA takes a device whose health check fails out of the scheduler until someone returns it;
a lab without that schedules a dead board every night, and its lab faults pile up until
nobody reads them.  Every night's health check is kept here per subject, as the health gate
checks them (``board pi5``, ``link pi5-builtin``; one row per check: the run, healthy or not,
the first reason).  A subject whose last ``after`` nights' checks all failed, counted since
its board was last returned, is *out of service*: the night leaves out its tests (all of the
board's for the board itself, a link's for a cable) and says so in one line, "pi5 link
pi5-builtin out of service since run R: reason", neither red nor green, until ``pinet lab
return BOARD`` (a row of ``board_returns``) or, where the lab chooses it
(``--pinet-return-when healthy``), a health check that passes.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any

TABLES_SQLITE = (
    """CREATE TABLE IF NOT EXISTS board_checks (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        lab TEXT NOT NULL, board TEXT NOT NULL, subject TEXT NOT NULL, run_id TEXT NOT NULL,
        at DOUBLE PRECISION NOT NULL, healthy INTEGER NOT NULL, reason TEXT NOT NULL DEFAULT ''
    )""",
    """CREATE TABLE IF NOT EXISTS board_returns (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        lab TEXT NOT NULL, board TEXT NOT NULL, at DOUBLE PRECISION NOT NULL,
        who TEXT NOT NULL, why TEXT NOT NULL DEFAULT ''
    )""",
    "CREATE INDEX IF NOT EXISTS board_checks_board ON board_checks (lab, board, at)",
)
TABLES_POSTGRESQL = tuple(
    statement.replace("INTEGER PRIMARY KEY AUTOINCREMENT", "BIGSERIAL PRIMARY KEY")
    for statement in TABLES_SQLITE
)
OUT_AFTER_BY_DEFAULT = 3  # nights of failed checks in a row
# When a board out of service is measured again: once returned by a person, or also once a
# night's health check of it passes.
RETURN_WHEN = ("returned", "healthy")


@dataclass(frozen=True)
class Check:
    """One night's health check of a board: its run, when, healthy or not, and why not."""

    run_id: str
    at: float
    healthy: bool
    reason: str = ""


@dataclass(frozen=True)
class OutOfService:
    """A board, or a link of it, left out of the nights: since which run, why (its last failed
    check), and how many nights in a row its check failed."""

    board: str
    subject: str  # "board pi5" or "link pi5-builtin", as the health gate names it
    since_run: str
    reason: str
    nights: int

    @property
    def name(self) -> str:
        """``pi5`` for the board itself, ``pi5 link pi5-builtin`` for one of its links."""
        return self.board if self.subject == f"board {self.board}" else f"{self.board} {self.subject}"

    def line(self) -> str:
        """The one line a night, the summary and the morning page say of it."""
        return (
            f"{self.name} out of service since run {self.since_run}: {self.reason} "
            f"({self.nights} failed health checks in a row; back with `pinet lab return {self.board}`)"
        )


def nights(checks: Sequence[Check]) -> list[Check]:
    """One verdict per run, oldest first: a run's check failed if any of its checks did (two
    workers, or a re-check after a power-cycle that did not cure it)."""
    by_run: dict[str, Check] = {}
    for check in sorted(checks, key=lambda c: c.at):
        kept = by_run.get(check.run_id)
        if kept is None or (kept.healthy and not check.healthy):
            by_run[check.run_id] = check
        elif not kept.healthy and not check.healthy:
            by_run[check.run_id] = Check(kept.run_id, kept.at, False, check.reason)
    return sorted(by_run.values(), key=lambda c: c.at)


def out_of_service(
    board: str, subject: str, checks: Sequence[Check], returned_at: float, after: int
) -> OutOfService | None:
    """Whether ``subject`` of ``board`` is out of service: its last ``after`` nights' checks
    (``checks``: its own) since the board was last returned all failed (``after`` 0: never)."""
    if after <= 0:
        return None
    streak: list[Check] = []
    for night in reversed(nights([c for c in checks if c.at > returned_at])):
        if night.healthy:
            break
        streak.append(night)
    if len(streak) < after:
        return None
    return OutOfService(
        board, subject, streak[-1].run_id, streak[0].reason or "health check failed", len(streak)
    )


class BoardService:
    """What a store keeps and answers about boards' health checks and returns."""

    def _tx(self) -> AbstractContextManager[Any]:
        raise NotImplementedError

    def _sql(self, statement: str) -> str:
        raise NotImplementedError

    def record_board_check(
        self, lab: str, board: str, subject: str, run_id: str, healthy: bool, reason: str = ""
    ) -> None:
        """Keep one health check of ``subject`` (of ``board``) in ``run_id``."""
        with self._tx() as cur:
            cur.execute(
                self._sql(
                    "INSERT INTO board_checks (lab, board, subject, run_id, at, healthy, reason) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?)"
                ),
                (lab, board, subject, run_id, time.time(), 1 if healthy else 0, reason[:500]),
            )

    def return_board(self, lab: str, board: str, who: str, why: str = "") -> None:
        """Put ``board`` back into service: the checks before now no longer count."""
        with self._tx() as cur:
            cur.execute(
                self._sql("INSERT INTO board_returns (lab, board, at, who, why) VALUES (?, ?, ?, ?, ?)"),
                (lab, board, time.time(), who, why),
            )

    def board_checks(self, lab: str, board: str) -> tuple[dict[str, list[Check]], float]:
        """``board``'s checks by subject, oldest first, and when it was last returned (0: never)."""
        with self._tx() as cur:
            cur.execute(
                self._sql(
                    "SELECT subject, run_id, at, healthy, reason FROM board_checks "
                    "WHERE lab = ? AND board = ? ORDER BY at"
                ),
                (lab, board),
            )
            checks: dict[str, list[Check]] = {}
            for subject, run, at, healthy, why in cur.fetchall():
                checks.setdefault(str(subject), []).append(
                    Check(str(run), float(at), bool(healthy), str(why))
                )
            cur.execute(
                self._sql("SELECT MAX(at) FROM board_returns WHERE lab = ? AND board = ?"), (lab, board)
            )
            found = cur.fetchone()
        return checks, float(found[0]) if found and found[0] is not None else 0.0

    def checked_boards(self, lab: str) -> list[str]:
        """Every board of ``lab`` with a health check kept."""
        with self._tx() as cur:
            cur.execute(
                self._sql("SELECT DISTINCT board FROM board_checks WHERE lab = ? ORDER BY board"), (lab,)
            )
            return [str(row[0]) for row in cur.fetchall()]

    def labs_with_board(self, board: str) -> list[str]:
        """The labs whose health checks name ``board``."""
        with self._tx() as cur:
            cur.execute(
                self._sql("SELECT DISTINCT lab FROM board_checks WHERE board = ? ORDER BY lab"), (board,)
            )
            return [str(row[0]) for row in cur.fetchall()]

    def board_out_of_service(
        self, lab: str, board: str, after: int, before_run: str = ""
    ) -> list[OutOfService]:
        """What of ``board`` (of ``lab``) is out of service, the board itself first, by the
        nights before ``before_run`` (a run's own checks never decide that run)."""
        checks, returned_at = self.board_checks(lab, board)
        found = []
        for subject, kept in sorted(checks.items(), key=lambda item: not item[0].startswith("board ")):
            out = out_of_service(
                board, subject, [c for c in kept if c.run_id != before_run], returned_at, after
            )
            if out is not None:
                found.append(out)
        return found

    def boards_out_of_service(self, lab: str, after: int = OUT_AFTER_BY_DEFAULT) -> list[OutOfService]:
        """Everything of ``lab`` out of service."""
        return [
            out for board in self.checked_boards(lab) for out in self.board_out_of_service(lab, board, after)
        ]
