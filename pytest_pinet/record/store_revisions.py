"""What changed in a context's history, counted, and the standings kept against those counts.

A context's standing (judge/standing.py) is a fold over its nights, so it can be kept and
walked on from: but only while nothing it was walked from has changed. Every change to what a
standing reads (a row stored, a verdict set, a run excluded or included, an acceptance made or
undone) gives the (context, run) pair it touches a new *revision* from one store-wide counter
that only grows. A set of pairs is then known by its count and its highest revision: a set
with a pair the other lacks, or a pair touched since, has a higher one (see
:meth:`Revisions.before`). A standing is kept under the count and highest revision of the pairs
it was walked from, and found again only while they are the same.

PostgreSQL hands out revisions from a sequence with each context's row locked while its pairs
change, so two runners touching one context take turns and revisions of a context are
committed in order; SQLite has one writer at a time.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

# The tables, added by migration 4 (store_schema), and what each dialect counts with.
TABLES = (
    """CREATE TABLE IF NOT EXISTS context_runs (
        context_key TEXT NOT NULL,
        run_id TEXT NOT NULL,
        first_started DOUBLE PRECISION NOT NULL,
        last_started DOUBLE PRECISION NOT NULL,
        revision BIGINT NOT NULL,
        PRIMARY KEY (context_key, run_id)
    )""",
    """CREATE INDEX IF NOT EXISTS context_runs_run ON context_runs (run_id)""",
    # Everything a standing's pairs are counted from, in the index: a year of a context's
    # pairs counted without reading a row of them.
    """CREATE INDEX IF NOT EXISTS context_runs_counted ON context_runs
        (context_key, first_started, revision, last_started, run_id)""",
    """CREATE TABLE IF NOT EXISTS contexts (
        context_key TEXT PRIMARY KEY,
        lab TEXT NOT NULL,
        runs BIGINT NOT NULL,
        revision BIGINT NOT NULL
    )""",
    """CREATE INDEX IF NOT EXISTS contexts_lab ON contexts (lab)""",
    """CREATE TABLE IF NOT EXISTS standings (
        context_key TEXT NOT NULL,
        metric TEXT NOT NULL,
        rules TEXT NOT NULL,
        runs BIGINT NOT NULL,
        revision BIGINT NOT NULL,
        regressed INTEGER NOT NULL,
        state TEXT NOT NULL,
        PRIMARY KEY (context_key, metric, rules, runs, revision)
    )""",
    # The pairs of every stored measurement, at revision 1: a store's history as it is when
    # it first counts; everything after gets a higher revision.
    """INSERT INTO context_runs (context_key, run_id, first_started, last_started, revision)
        SELECT context_key, run_id, MIN(started), MAX(started), 1 FROM measurements WHERE 1 = 1
        GROUP BY context_key, run_id
        ON CONFLICT (context_key, run_id) DO NOTHING""",
    """INSERT INTO contexts (context_key, lab, runs, revision)
        SELECT context_key, MIN(lab), COUNT(DISTINCT run_id), 1 FROM measurements WHERE 1 = 1
        GROUP BY context_key
        ON CONFLICT (context_key) DO NOTHING""",
)
SQLITE_COUNTER = (
    "CREATE TABLE IF NOT EXISTS pinet_sequence (value BIGINT NOT NULL)",
    "INSERT INTO pinet_sequence (value) SELECT 1 WHERE NOT EXISTS (SELECT 1 FROM pinet_sequence)",
    # SQLite keeps a row's columns in one record, the JSON data (kilobytes, in overflow pages)
    # before the columns added later: reading a verdict or the figures of a row walks its data.
    # This index holds everything a goodput history reads, so a year of it is read from the
    # index alone. (PostgreSQL keeps large values apart from the row: it needs none.)
    "CREATE INDEX IF NOT EXISTS measurements_goodput_history ON measurements "
    "(context_key, started, id, run_id, test_id, goodput_mbps, kernel, os, adapter, board, verdict, "
    "latency_verdict, interval_mbps, load_p99_ms)",
)
POSTGRES_COUNTER = ("CREATE SEQUENCE IF NOT EXISTS pinet_revisions START 2",)
# A pair touched again takes the new revision and widens to the rows given.
_WIDENED = (
    "ON CONFLICT (context_key, run_id) DO UPDATE SET revision = excluded.revision, "
    "first_started = CASE WHEN excluded.first_started < context_runs.first_started "
    "THEN excluded.first_started ELSE context_runs.first_started END, "
    "last_started = CASE WHEN excluded.last_started > context_runs.last_started "
    "THEN excluded.last_started ELSE context_runs.last_started END"
)


@dataclass(frozen=True)
class PairSet:
    """A set of a context's (context, run) pairs, by what identifies it: how many, the highest
    revision; and the last row any of them holds (a set read up to a cut must end before it)."""

    runs: int
    revision: int
    last_started: float = float("-inf")


class Revisions:
    """The counting, on a cursor of the store's transaction (after its first write, which holds
    SQLite's lock); ``param`` is the store's placeholder, which names the dialect."""

    def __init__(self, param: str) -> None:
        self.postgres = param == "%s"
        self._param = param

    def _sql(self, statement: str) -> str:
        return statement.replace("?", self._param)

    @staticmethod
    def _revisions(cur: Any, count: int) -> list[int]:
        """``count`` new revisions, in order (SQLite's counter: PostgreSQL draws its own)."""
        cur.execute("UPDATE pinet_sequence SET value = value + ?", (count,))
        cur.execute("SELECT value FROM pinet_sequence")
        last = int(cur.fetchone()[0])
        return list(range(last - count + 1, last + 1))

    def touch(self, cur: Any, pairs: Iterable[tuple[str, str, float, float, str]]) -> None:
        """New revisions for (context, run, first started, last started, lab) pairs: a pair
        not counted yet is added, one counted widens to the rows given. One statement of each
        kind for all the pairs (a night's import touches hundreds); SQLite's are in-process,
        where a statement costs next to nothing."""
        pairs = list(pairs)
        if not pairs:
            return
        keys = sorted({key for key, *_ in pairs})
        labs = {key: lab for key, _, _, _, lab in pairs}
        if self.postgres:
            self._touch_postgres(cur, keys, labs, pairs)
            return
        _each(
            cur,
            "INSERT INTO contexts (context_key, lab, runs, revision) VALUES (?, ?, 0, 0) "
            "ON CONFLICT (context_key) DO NOTHING",
            [(key, labs[key]) for key in keys],
        )
        numbers = self._revisions(cur, len(pairs))
        rows = [(k, r, f, last, n) for (k, r, f, last, _), n in zip(pairs, numbers, strict=True)]
        newest = {key: max(n for k, _, _, _, n in rows if k == key) for key in keys}
        upsert = "INSERT INTO context_runs (context_key, run_id, first_started, last_started, revision) "
        _each(cur, upsert + f"VALUES (?, ?, ?, ?, ?) {_WIDENED}", rows)
        # The revisions just drawn are the highest of their contexts: no pair need be read.
        _each(
            cur,
            "UPDATE contexts SET revision = ?, "
            "runs = (SELECT COUNT(*) FROM context_runs p WHERE p.context_key = ?) WHERE context_key = ?",
            [(newest[key], key, key) for key in keys],
        )

    @staticmethod
    def _touch_postgres(
        cur: Any, keys: list[str], labs: dict[str, str], pairs: list[tuple[str, str, float, float, str]]
    ) -> None:
        """:meth:`touch` on PostgreSQL in two statements, not four (a night's verdicts touch
        hundreds of times, and a statement costs the client more than the server): the upsert
        locks each context's row (in key order: no deadlock), so one runner at a time draws a
        context's revisions and they are committed in order; then each pair draws its revision
        in the statement that writes it, which also moves its context's highest revision and
        count (one more run when the pair is new: ``xmax = 0`` marks a row the upsert inserted)."""
        _each(
            cur,
            "INSERT INTO contexts (context_key, lab, runs, revision) VALUES (%s, %s, 0, 0) "
            "ON CONFLICT (context_key) DO UPDATE SET lab = contexts.lab",
            [(key, labs[key]) for key in keys],
        )
        _each(
            cur,
            "WITH pair AS (INSERT INTO context_runs "  # noqa: S608 - constants
            "(context_key, run_id, first_started, last_started, revision) "
            f"VALUES (%s, %s, %s, %s, nextval('pinet_revisions')) {_WIDENED} "
            "RETURNING context_key, revision, xmax = 0 AS added) "
            "UPDATE contexts c SET revision = pair.revision, "
            "runs = c.runs + CASE WHEN pair.added THEN 1 ELSE 0 END "
            "FROM pair WHERE c.context_key = pair.context_key",
            [(key, run_id, first, last) for key, run_id, first, last, _ in pairs],
        )

    @staticmethod
    def touching(update: str) -> str:
        """PostgreSQL: ``update`` (of one measurement) and the touch of its pair in one
        statement, taking the steps of :meth:`_touch_postgres` in the same order: the context's
        row locked (it was made when the row was stored), then the pair's revision drawn."""
        return (
            f"WITH m AS ({update} RETURNING context_key, run_id, started), "  # noqa: S608 - constants
            "locked AS (SELECT c.context_key FROM contexts c JOIN m ON c.context_key = m.context_key "
            "FOR UPDATE OF c), "
            "pair AS (INSERT INTO context_runs "
            "(context_key, run_id, first_started, last_started, revision) "
            "SELECT m.context_key, m.run_id, m.started, m.started, nextval('pinet_revisions') "
            f"FROM m JOIN locked ON locked.context_key = m.context_key {_WIDENED} "
            "RETURNING context_key, revision, xmax = 0 AS added) "
            "UPDATE contexts c SET revision = pair.revision, "
            "runs = c.runs + CASE WHEN pair.added THEN 1 ELSE 0 END "
            "FROM pair WHERE c.context_key = pair.context_key"
        )

    def touch_found(self, cur: Any, found: Sequence[Any] | None) -> None:
        """A new revision for the pair of a measurement whose verdict changed, given as the
        (context, run, started, lab) its update returned (None: no such measurement)."""
        if found is not None:
            key, run_id, started, lab = found
            self.touch(cur, [(key, run_id, float(started), float(started), lab)])

    def of_run(self, cur: Any, run_id: str) -> dict[str, tuple[PairSet, PairSet | None, float]]:
        """For each context run ``run_id`` measured: all its pairs, those before the run (see
        :meth:`before`) and the run's first row: one question for a whole night."""
        cur.execute(
            self._sql(
                "SELECT t.context_key, c.runs, c.revision, t.first_started, "
                "COUNT(p.run_id), MAX(p.revision), MAX(p.last_started) "
                "FROM context_runs t JOIN contexts c ON c.context_key = t.context_key "
                "LEFT JOIN context_runs p ON p.context_key = t.context_key "
                "AND p.run_id <> t.run_id AND p.first_started < t.first_started "
                "WHERE t.run_id = ? GROUP BY t.context_key, c.runs, c.revision, t.first_started"
            ),
            (run_id,),
        )
        return {
            str(key): (
                PairSet(int(runs), int(revision)),
                PairSet(int(n), int(rev), float(last)) if n else None,
                float(cut),
            )
            for key, runs, revision, cut, n, rev, last in cur.fetchall()
        }

    def every_of_run(self, cur: Any, run_id: str) -> dict[str, PairSet]:
        """All the pairs of each context run ``run_id`` measured (:meth:`of_run`'s first part),
        read from the contexts alone: what a night's end checks before keeping standings."""
        cur.execute(
            self._sql(
                "SELECT c.context_key, c.runs, c.revision FROM context_runs t "
                "JOIN contexts c ON c.context_key = t.context_key WHERE t.run_id = ?"
            ),
            (run_id,),
        )
        return {str(key): PairSet(int(runs), int(revision)) for key, runs, revision in cur.fetchall()}

    def kept_of(self, cur: Any, metric: str, rules: str, wanted: dict[str, PairSet]) -> dict[str, str]:
        """The standings kept for exactly the pairs ``wanted`` names per context, by context."""
        found: dict[str, str] = {}
        for chunk, marks in in_chunks(wanted):
            cur.execute(
                self._sql(
                    "SELECT context_key, runs, revision, state FROM standings "  # noqa: S608 - marks
                    f"WHERE metric = ? AND rules = ? AND context_key IN ({marks})"
                ),
                (metric, rules, *chunk),
            )
            for key, runs, revision, state in cur.fetchall():
                if wanted[key] == PairSet(int(runs), int(revision), wanted[key].last_started):
                    found[str(key)] = str(state)
        return found

    def touch_run(self, cur: Any, run_id: str, key: str | None = None) -> None:
        """New revisions for every pair of run ``run_id`` (of context ``key`` only, when named):
        the run was excluded or included, or an acceptance of it made or undone."""
        query = "SELECT p.context_key, p.first_started, p.last_started, c.lab FROM context_runs p "
        query += "JOIN contexts c ON c.context_key = p.context_key WHERE p.run_id = ?"
        args: tuple[Any, ...] = (run_id,)
        if key is not None:
            query += " AND p.context_key = ?"
            args = (run_id, key)
        cur.execute(self._sql(query), args)
        pairs = [(k, run_id, float(first), float(last), lab) for k, first, last, lab in cur.fetchall()]
        self.touch(cur, pairs)

    def every(self, cur: Any, key: str) -> PairSet | None:
        """The set of all of context ``key``'s pairs (None: it has none)."""
        cur.execute(self._sql("SELECT runs, revision FROM contexts WHERE context_key = ?"), (key,))
        found = cur.fetchone()
        return PairSet(int(found[0]), int(found[1])) if found is not None and found[0] else None

    def before(self, cur: Any, key: str, run_id: str) -> tuple[PairSet | None, float | None]:
        """The set of ``key``'s pairs a standing before run ``run_id`` reads (those of other runs
        that began before its first row), and that cut (None: the run holds no row of ``key``).

        Two such sets, or such a set and one of all pairs, with the same count and highest
        revision are the same: pairs are never removed and every pair added or touched after a
        set was counted has a higher revision than any in it, so a different set of the same
        size would hold one."""
        cur.execute(
            self._sql(
                "SELECT t.first_started, COUNT(p.run_id), MAX(p.revision), MAX(p.last_started) "
                "FROM context_runs t LEFT JOIN context_runs p ON p.context_key = t.context_key "
                "AND p.run_id <> t.run_id AND p.first_started < t.first_started "
                "WHERE t.context_key = ? AND t.run_id = ? GROUP BY t.first_started"
            ),
            (key, run_id),
        )
        found = cur.fetchone()
        if found is None:
            return self.every(cur, key), None
        cut, runs, revision, last = found
        return (PairSet(int(runs), int(revision), float(last)) if runs else None), float(cut)

    def before_kept(
        self, cur: Any, key: str, run_id: str, metric: str, rules: str
    ) -> tuple[PairSet | None, float | None, str | None]:
        """:meth:`before` and the standing kept for those pairs (its JSON, if any) in one
        question: a night asks it for every verdict."""
        cur.execute(
            self._sql(
                "SELECT b.cut, b.runs, b.revision, b.last, s.state FROM ("
                "SELECT t.first_started AS cut, COUNT(p.run_id) AS runs, MAX(p.revision) AS revision, "
                "MAX(p.last_started) AS last "
                "FROM context_runs t LEFT JOIN context_runs p ON p.context_key = t.context_key "
                "AND p.run_id <> t.run_id AND p.first_started < t.first_started "
                "WHERE t.context_key = ? AND t.run_id = ? GROUP BY t.first_started) b "
                "LEFT JOIN standings s ON s.context_key = ? AND s.metric = ? AND s.rules = ? "
                "AND s.runs = b.runs AND s.revision = b.revision"
            ),
            (key, run_id, key, metric, rules),
        )
        found = cur.fetchone()
        if found is None:
            return self.every(cur, key), None, None
        cut, runs, revision, last, state = found
        if not runs:
            return None, float(cut), None
        return PairSet(int(runs), int(revision), float(last)), float(cut), state

    def kept(self, cur: Any, key: str, metric: str, rules: str, pairs: PairSet) -> str | None:
        """The standing kept for exactly ``pairs`` (its JSON), if any."""
        cur.execute(
            self._sql(
                "SELECT state FROM standings WHERE context_key = ? AND metric = ? AND rules = ? "
                "AND runs = ? AND revision = ?"
            ),
            (key, metric, rules, pairs.runs, pairs.revision),
        )
        found = cur.fetchone()
        return str(found[0]) if found is not None else None

    def keep(
        self, cur: Any, key: str, metric: str, rules: str, pairs: PairSet, regressed: bool, state: str
    ) -> None:
        """Keep a standing for ``pairs``; those kept for fewer runs than one less go."""
        self.keep_many(cur, metric, rules, [(key, pairs, regressed, state)])

    def keep_many(
        self, cur: Any, metric: str, rules: str, standings: Sequence[tuple[str, PairSet, bool, str]]
    ) -> None:
        """Keep (context, pairs, in regression, standing) at once; as :meth:`keep`."""
        if not standings:
            return
        _each(
            cur,
            self._sql(
                "INSERT INTO standings (context_key, metric, rules, runs, revision, regressed, state) "
                "VALUES (?, ?, ?, ?, ?, ?, ?) "
                "ON CONFLICT (context_key, metric, rules, runs, revision) DO NOTHING"
            ),
            [(key, metric, rules, p.runs, p.revision, int(flag), state) for key, p, flag, state in standings],
        )
        # What a night reads next is this standing (all pairs) and the one before its run
        # (one run fewer): those of fewer runs are not asked for again.
        _each(
            cur,
            self._sql(
                "DELETE FROM standings WHERE context_key = ? AND metric = ? AND rules = ? AND runs < ?"
            ),
            [(key, metric, rules, p.runs - 1) for key, p, _, _ in standings],
        )

    def listing(
        self, cur: Any, metric: str, rules: str, lab: str | None
    ) -> list[tuple[str, str, PairSet, int | None, str | None]]:
        """Every context (of ``lab``): key, lab, its pairs, and for the standing kept for them
        whether it is in regression (None: none kept) and, when it is, the standing."""
        query = (
            "SELECT c.context_key, c.lab, c.runs, c.revision, s.regressed, "
            "CASE WHEN s.regressed = 1 THEN s.state ELSE NULL END FROM contexts c "
            "LEFT JOIN standings s ON s.context_key = c.context_key AND s.metric = ? AND s.rules = ? "
            "AND s.runs = c.runs AND s.revision = c.revision WHERE c.runs > 0"
        )
        args: list[Any] = [metric, rules]
        if lab is not None:
            query += " AND c.lab = ?"
            args.append(lab)
        cur.execute(self._sql(query + " ORDER BY c.context_key"), tuple(args))
        return [
            (
                str(k),
                str(lab_of),
                PairSet(int(runs), int(revision)),
                None if flag is None else int(flag),
                state,
            )
            for k, lab_of, runs, revision, flag, state in cur.fetchall()
        ]


def in_chunks(keys: Iterable[str], size: int = 400) -> Iterator[tuple[list[str], str]]:
    """``keys`` (sorted, once each) a chunk at a time, with the chunk's ``?`` marks for an
    ``IN (...)``: a lab group's thousands of contexts stay within SQLite's bound parameters."""
    ordered = sorted(set(keys))
    for start in range(0, len(ordered), size):
        chunk = ordered[start : start + size]
        yield chunk, ", ".join("?" for _ in chunk)


def _each(cur: Any, sql: str, rows: Sequence[tuple[Any, ...]]) -> None:
    """``sql`` for each of ``rows``: one plain statement for one row (psycopg's executemany
    opens a pipeline, a round trip more for the common single verdict)."""
    if len(rows) == 1:
        cur.execute(sql, rows[0])
    elif rows:
        cur.executemany(sql, rows)


def pairs_of_rows(rows: Sequence[Mapping[str, Any]]) -> list[tuple[str, str, float, float, str]]:
    """The (context, run, first, last, lab) pairs whole rows touch."""
    spans: dict[tuple[str, str], list[Any]] = {}
    for row in rows:
        pair = (str(row["context_key"]), str(row["run_id"]))
        started = float(row["started"])
        span = spans.setdefault(pair, [started, started, str(row["lab"])])
        span[0], span[1] = min(span[0], started), max(span[1], started)
    return [(key, run, first, last, lab) for (key, run), (first, last, lab) in spans.items()]
