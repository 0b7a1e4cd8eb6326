"""The results store: every measurement, with its full context, committed the moment it exists.

SQLite (WAL) by default, one file per lab or developer; ``postgresql://`` for a lab's shared
store, with the same schema.  A measurement is one row of context columns (what baselines
and trends group by) plus its values as JSON (per-stream figures, intervals, observers,
facts), so a killed run loses nothing already measured and history stays queryable.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from ..model import Measurement
from ..polling import Pace, poll_for
from .board_service import BoardService
from .known_issues import KnownIssues
from .store_curation import Curation, masked_url
from .store_fingerprints import Fingerprints
from .store_floors import Floors
from .store_priors import SpreadPriors
from .store_revisions import Revisions, pairs_of_rows
from .store_rows import GOODPUT_COLUMNS, STORED_COLUMNS, by_name, missing_figures, stored_row
from .store_rows import StoredMeasurement as StoredMeasurement  # re-exported: rows read back
from .store_schema import (
    BASE_SCHEMA,
    FIGURE_COLUMNS,
    IMPORTED_COLUMNS,
    MIGRATIONS,
    SCHEMA_VERSION,
    figure_columns,
    measurement_row,
)
from .store_standings import KeptStandings

SCHEMA_LOCK_KEY = 7_205_449_001  # PostgreSQL advisory lock of pinet's schema changes
# How long a new store waits for another process creating the same SQLite schema (or filling a
# migration's columns of a large store: a year of one lab's nights takes about a minute).
SCHEMA_LOCK_WAIT_S = 300.0


# A whole row as exported and imported: its columns, then the figure columns its data gives.
WHOLE_ROW = (*IMPORTED_COLUMNS, *FIGURE_COLUMNS)


def _insert_of(names: Sequence[str]) -> str:
    """The one INSERT of measurement rows: the column names are constants (store_schema's, or
    measurement_row's keys), every value is bound."""
    return f"INSERT INTO measurements ({', '.join(names)}) VALUES ({', '.join('?' for _ in names)})"  # noqa: S608


def _whole_row(row: Mapping[str, Any]) -> tuple[Any, ...]:
    """A whole row's values in :data:`WHOLE_ROW`'s order."""
    return tuple(row[c] for c in IMPORTED_COLUMNS) + tuple(figure_columns(json.loads(row["data"])).values())


class ResultsStore(Curation, KeptStandings, Floors, Fingerprints, KnownIssues, SpreadPriors, BoardService):
    """SQLite or PostgreSQL behind one small interface; safe to share between threads."""

    def __init__(self, url: str) -> None:
        self.url = url
        self._lock = threading.RLock()
        self._depth = 0  # transactions open on this connection: only the outermost commits
        if url.startswith(("postgresql://", "postgres://")):
            try:
                import psycopg
            except ImportError:
                raise ConfigError(
                    "--pinet-db", "PostgreSQL needs psycopg: pip install 'psycopg[binary]'"
                ) from None
            try:
                self._conn: Any = psycopg.connect(url, autocommit=False, connect_timeout=10)
            except psycopg.Error as exc:
                raise ConfigError(
                    "--pinet-db", f"cannot connect to {masked_url(url)}: {str(exc).strip()}"
                ) from None
            self._param = "%s"
            serial = "BIGSERIAL PRIMARY KEY"
        else:
            path = url.removeprefix("sqlite:///") if url.startswith("sqlite:///") else url
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            self._conn = sqlite3.connect(path, timeout=30, check_same_thread=False)
            self._param = "?"
            serial = "INTEGER PRIMARY KEY AUTOINCREMENT"
        self._revisions = Revisions(self._param)
        # xdist workers open the same SQLite file at once; switching to WAL and creating the
        # schema need a lock that the busy timeout does not always wait for: retry briefly.
        locked: list[sqlite3.OperationalError] = []

        def init_once() -> bool | None:
            try:
                self._init_schema(serial)
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc):
                    raise
                locked.append(exc)
                return None
            return True

        poll_for(
            init_once,
            timeout=SCHEMA_LOCK_WAIT_S,
            pace=Pace(0.05, backoff=1.2, longest=1.0),
            on_timeout=lambda: locked[-1],
        )

    def _init_schema(self, serial: str) -> None:
        if self._param == "?":
            if self._conn.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
                self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("PRAGMA synchronous=FULL")
        if self._version() >= SCHEMA_VERSION:
            return  # nothing to make or migrate: no lock taken (a reader may only read)
        with self._tx() as cur:
            # One opener at a time makes or migrates the schema, and reads the version only
            # once it holds the lock: two xdist workers (or two runners) opening an older store
            # at once would otherwise both add its columns (sqlite3 runs DDL outside a
            # transaction unless one is open) or both create its tables.
            if self._param == "?":
                cur.execute("BEGIN IMMEDIATE")
            else:
                cur.execute("SELECT pg_advisory_xact_lock(%s)", (SCHEMA_LOCK_KEY,))
            for statement in BASE_SCHEMA:
                cur.execute(statement.format(serial=serial))
            cur.execute("SELECT version FROM pinet_schema")
            found = cur.fetchone()
            if found is None:
                cur.execute(self._sql("INSERT INTO pinet_schema (version) VALUES (?)"), (1,))
            version = int(found[0]) if found is not None else 1
            for migration in (m for m in MIGRATIONS if m.version > version):
                have = self._columns(cur)
                for column, definition in migration.add_columns.items():
                    if column not in have:
                        # Names and definitions are constants of store_schema.
                        cur.execute(f"ALTER TABLE measurements ADD COLUMN {column} {definition}")
                dialect = migration.postgresql if self._param == "%s" else migration.sqlite
                for statement in (*dialect, *migration.statements):
                    cur.execute(statement)
                if migration.derived:
                    self._fill_derived(cur, migration.derived)
                cur.execute(
                    self._sql("UPDATE pinet_schema SET version = ? WHERE version < ?"),
                    (migration.version, migration.version),
                )

    def _version(self) -> int:
        """The schema version the store records (0: none yet, a new store)."""
        try:
            with self._tx() as cur:
                cur.execute("SELECT version FROM pinet_schema")
                found = cur.fetchone()
        except Exception as exc:
            if "pinet_schema" not in str(exc):
                raise
            return 0
        return int(found[0]) if found is not None else 0

    def _fill_derived(self, cur: Any, columns: tuple[str, ...]) -> None:
        """Fill ``columns`` (store_schema.figure_columns) of the rows stored before they existed,
        from each row's JSON data: once, when the store is opened by a pinet that has them."""
        cur.execute(f"SELECT id, data FROM measurements WHERE {columns[0]} IS NULL")  # noqa: S608 - constant
        rows = cur.fetchall()
        settings = ", ".join(f"{column} = ?" for column in columns)
        update = self._sql(f"UPDATE measurements SET {settings} WHERE id = ?")  # noqa: S608 - constants
        values = []
        for row_id, data in rows:
            derived = figure_columns(json.loads(data))
            values.append((*(derived[column] for column in columns), row_id))
        if values:
            cur.executemany(update, values)

    def _columns(self, cur: Any) -> set[str]:
        """The columns the measurements table has now (SQLite or PostgreSQL)."""
        if self._param == "?":
            cur.execute("PRAGMA table_info(measurements)")
            return {str(row[1]) for row in cur.fetchall()}
        cur.execute(
            "SELECT column_name FROM information_schema.columns "
            "WHERE table_name = 'measurements' AND table_schema = current_schema()"
        )
        return {str(row[0]) for row in cur.fetchall()}

    def _sql(self, statement: str) -> str:
        return statement.replace("?", self._param)

    @contextmanager
    def _tx(self) -> Iterator[Any]:
        with self._lock:
            cur = self._conn.cursor()
            self._depth += 1
            try:
                yield cur
                if self._depth == 1:
                    self._conn.commit()
            except BaseException:
                if self._depth == 1:
                    self._conn.rollback()
                raise
            finally:
                self._depth -= 1
                cur.close()

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """Group the store calls of the block into one transaction, committed once at its end
        (keeping a night's standings: one commit, not one per context); a failure undoes them."""
        with self._tx():
            yield

    def verdict_counts(self, run_id: str) -> dict[str, int]:
        """How many measurements of ``run_id`` got each verdict ("unjudged": none yet)."""
        with self._tx() as cur:
            cur.execute(
                self._sql("SELECT verdict, COUNT(*) FROM measurements WHERE run_id = ? GROUP BY verdict"),
                (run_id,),
            )
            return {str(v or "unjudged"): int(n) for v, n in cur.fetchall()}

    def add_run(
        self, run_id: str, lab: str, suite_version: str, note: str = "", started: float | None = None
    ) -> None:
        """Register a run (idempotent: xdist workers may all call it, at the same moment; the
        database settles who was first, a check-then-insert would race); ``started``: now."""
        with self._tx() as cur:
            cur.execute(
                self._sql(
                    "INSERT INTO runs (run_id, started, lab, suite_version, note) VALUES (?, ?, ?, ?, ?) "
                    "ON CONFLICT (run_id) DO NOTHING"
                ),
                (run_id, time.time() if started is None else started, lab, suite_version, note),
            )

    def add(self, run_id: str, measurement: Measurement, suite_version: str) -> int:
        """Commit one measurement now; return its row id."""
        row = measurement_row(run_id, measurement, suite_version)
        with self._tx() as cur:
            row_id = self._insert(cur, tuple(row), tuple(row.values()))
            started = float(row["started"])
            self._revisions.touch(cur, [(row["context_key"], run_id, started, started, row["lab"])])
            return row_id

    def add_rows(self, rows: Sequence[Mapping[str, Any]]) -> None:
        """Write whole rows (:data:`IMPORTED_COLUMNS`, verdicts included) in one transaction: a
        night exported from another store, or the history benchmark's synthetic nights."""
        if not rows:
            return
        with self._tx() as cur:
            cur.executemany(self._sql(_insert_of(WHOLE_ROW)), [_whole_row(row) for row in rows])
            self._revisions.touch(cur, pairs_of_rows(rows))

    def add_row(self, row: Mapping[str, Any]) -> int:
        """Write one whole row (as :meth:`add_rows`) and return its id, as :meth:`add` does for
        a measurement: the history benchmark's night, stored a measurement at a time."""
        with self._tx() as cur:
            row_id = self._insert(cur, WHOLE_ROW, _whole_row(row))
            self._revisions.touch(cur, pairs_of_rows([row]))
            return row_id

    def _insert(self, cur: Any, names: Sequence[str], values: Sequence[Any]) -> int:
        """Insert one measurement row; its id, as each database gives it back."""
        statement = self._sql(_insert_of(names))
        if self._param == "%s":
            cur.execute(statement + " RETURNING id", tuple(values))
            return int(cur.fetchone()[0])
        cur.execute(statement, tuple(values))
        return int(cur.lastrowid)

    def rows_of_run(self, run_id: str) -> list[dict[str, Any]]:
        """Every measurement of ``run_id`` as whole rows (:data:`IMPORTED_COLUMNS`), in the order taken."""
        columns = ", ".join(IMPORTED_COLUMNS)
        with self._tx() as cur:
            query = f"SELECT {columns} FROM measurements WHERE run_id = ? ORDER BY started"  # noqa: S608
            cur.execute(self._sql(query), (run_id,))
            return [dict(zip(IMPORTED_COLUMNS, row, strict=True)) for row in cur.fetchall()]

    def set_verdict(self, row_id: int, verdict: str, reason: str, floor_mbps: float | None = None) -> None:
        """Record the verdict a measurement got (pass, below-threshold, regression, ...) and
        the floor its threshold rule held it to (None: no rule did)."""
        self._set_verdict(
            "verdict = ?, verdict_reason = ?, floor_mbps = ?", (verdict, reason, floor_mbps, row_id)
        )

    def set_latency_verdict(self, row_id: int, verdict: str, reason: str) -> None:
        """Record the verdict a measurement's latency under load got (pass, above-ceiling,
        regression, not-measured), beside its goodput verdict."""
        self._set_verdict("latency_verdict = ?, latency_reason = ?", (verdict, reason, row_id))

    def _set_verdict(self, assignments: str, values: tuple[Any, ...]) -> None:
        """Update a measurement (``values``: the assignments', then its id) and touch its pair:
        a verdict decides whether the row is evidence, so standings kept with it are stale."""
        update = self._sql(f"UPDATE measurements SET {assignments} WHERE id = ?")  # noqa: S608 - constants
        with self._tx() as cur:
            if self._revisions.postgres:
                cur.execute(self._revisions.touching(update), values)
            else:
                cur.execute(update + " RETURNING context_key, run_id, started, lab", values)
                self._revisions.touch_found(cur, cur.fetchone())

    def latency_verdict_counts(self, run_id: str) -> dict[str, int]:
        """How many measurements of ``run_id`` got each latency verdict (those judged)."""
        with self._tx() as cur:
            cur.execute(
                self._sql(
                    "SELECT latency_verdict, COUNT(*) FROM measurements "
                    "WHERE run_id = ? AND latency_verdict <> '' GROUP BY latency_verdict"
                ),
                (run_id,),
            )
            return {str(v): int(n) for v, n in cur.fetchall()}

    def history(
        self,
        key: str,
        *,
        before_run: str | None = None,
        limit: int | None = 1000,
        excluded: bool = False,
        probes: bool = True,
        of_run: str | None = None,
    ) -> list[StoredMeasurement]:
        """Measurements of one context, oldest first (optionally only runs other than one).

        Runs excluded with :meth:`exclude_run` are left out (they are no baseline and no
        trend) unless ``excluded`` asks for them. ``probes=False``: without every probe's RTT
        under load (a goodput question need not read a year of them). ``limit``: the newest
        that many (None: all); ``of_run``: that run's only.
        """
        columns = STORED_COLUMNS if probes else GOODPUT_COLUMNS
        query = f"SELECT {columns} FROM measurements WHERE context_key = ?"  # noqa: S608 - constant columns
        args: list[Any] = [key]
        if before_run is not None:
            query += " AND run_id <> ?"
            args.append(before_run)
        if of_run is not None:
            query += " AND run_id = ?"
            args.append(of_run)
        if not excluded:
            query += " AND run_id NOT IN (SELECT run_id FROM run_exclusions)"
        query += " ORDER BY started DESC"
        if limit is not None:
            query += " LIMIT ?"
            args.append(limit)
        with self._tx() as cur:
            cur.execute(self._sql(query), tuple(args))
            return self._read_rows(cur, list(reversed(cur.fetchall())))

    def _read_rows(self, cur: Any, rows: list[Any]) -> list[StoredMeasurement]:
        """Read rows as measurements, the JSON data of those without figure columns read too."""
        rows = [by_name(r) for r in rows]
        missing = missing_figures(rows)
        data: dict[int, str] = {}
        for start in range(0, len(missing), 500):
            chunk = missing[start : start + 500]
            marks = ", ".join("?" for _ in chunk)
            cur.execute(self._sql(f"SELECT id, data FROM measurements WHERE id IN ({marks})"), tuple(chunk))  # noqa: S608
            data.update((int(i), str(d)) for i, d in cur.fetchall())
        return [stored_row(r, data.get(int(r["id"]))) for r in rows]

    def of_run(self, run_id: str) -> list[StoredMeasurement]:
        """Every measurement of one run, in the order taken."""
        query = f"SELECT {STORED_COLUMNS} FROM measurements WHERE run_id = ? ORDER BY started"  # noqa: S608
        with self._tx() as cur:
            cur.execute(self._sql(query), (run_id,))
            return self._read_rows(cur, cur.fetchall())

    def latest_of_test(self, test_id: str) -> dict[str, Any] | None:
        """The stored data (context, figures) of the newest measurement of ``test_id``: the
        exact id, else the newest whose id contains it; None when the store has none."""
        with self._tx() as cur:
            escaped = test_id.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
            for clause, value in (("test_id = ?", test_id), ("test_id LIKE ? ESCAPE '\\'", f"%{escaped}%")):
                query = f"SELECT data FROM measurements WHERE {clause} ORDER BY started DESC LIMIT 1"  # noqa: S608
                cur.execute(self._sql(query), (value,))
                found = cur.fetchone()
                if found is not None:
                    return dict(json.loads(found[0]))
        return None

    def runs(self) -> list[dict[str, Any]]:
        """Every run, oldest first: id, start, lab, measurement count and why it is excluded."""
        with self._tx() as cur:
            cur.execute(
                "SELECT r.run_id, r.started, r.lab, "
                "(SELECT COUNT(*) FROM measurements m WHERE m.run_id = r.run_id), "
                "(SELECT why FROM run_exclusions x WHERE x.run_id = r.run_id) "
                "FROM runs r ORDER BY r.started"
            )
            return [
                {
                    "run_id": r[0],
                    "started": float(r[1]),
                    "lab": r[2],
                    "measurements": int(r[3]),
                    "excluded": r[4],
                }
                for r in cur.fetchall()
            ]

    def context_keys(self, lab: str | None = None) -> list[str]:
        """Every context with at least one measurement (of ``lab`` only, when named: several
        labs share one PostgreSQL store), from the contexts the store counts (one row each,
        not a scan of every measurement)."""
        with self._tx() as cur:
            if lab is None:
                cur.execute("SELECT context_key FROM contexts WHERE runs > 0 ORDER BY context_key")
            else:
                query = "SELECT context_key FROM contexts WHERE lab = ? AND runs > 0 ORDER BY context_key"
                cur.execute(self._sql(query), (lab,))
            return [r[0] for r in cur.fetchall()]

    def newest_nights(self) -> list[dict[str, Any]]:
        """Each lab's newest run that measured something, with its measurement count, by lab."""
        with self._tx() as cur:
            cur.execute(
                "SELECT r.lab, r.run_id, r.started FROM runs r "
                "WHERE EXISTS (SELECT 1 FROM measurements m WHERE m.run_id = r.run_id) ORDER BY r.started"
            )
            newest = {str(lab): (str(run_id), float(started)) for lab, run_id, started in cur.fetchall()}
            found = []
            for lab, (run_id, started) in sorted(newest.items()):
                cur.execute(self._sql("SELECT COUNT(*) FROM measurements WHERE run_id = ?"), (run_id,))
                count = int(cur.fetchone()[0])
                found.append({"lab": lab, "run_id": run_id, "started": started, "measurements": count})
            return found

    def count(self, run_id: str | None = None) -> int:
        """Number of measurements (of one run, or all)."""
        with self._tx() as cur:
            if run_id is None:
                cur.execute("SELECT COUNT(*) FROM measurements")
            else:
                cur.execute(self._sql("SELECT COUNT(*) FROM measurements WHERE run_id = ?"), (run_id,))
            return int(cur.fetchone()[0])

    def is_excluded(self, run_id: str) -> bool:
        """Whether run ``run_id`` is taken out of the baselines."""
        with self._tx() as cur:
            cur.execute(self._sql("SELECT 1 FROM run_exclusions WHERE run_id = ?"), (run_id,))
            return cur.fetchone() is not None

    def labs(self) -> list[str]:
        """The labs that have a run in this store."""
        with self._tx() as cur:
            cur.execute("SELECT DISTINCT lab FROM runs ORDER BY lab")
            return [str(r[0]) for r in cur.fetchall()]

    def lab_of_run(self, run_id: str) -> str | None:
        """The lab ``run_id`` measured (None: the run took no measurement)."""
        with self._tx() as cur:
            cur.execute(self._sql("SELECT lab FROM runs WHERE run_id = ?"), (run_id,))
            row = cur.fetchone()
        return str(row[0]) if row is not None else None

    def allure_history(self, lab: str) -> list[str]:
        """The lab's Allure history lines, oldest first."""
        with self._tx() as cur:
            cur.execute(self._sql("SELECT line FROM allure_history WHERE lab = ? ORDER BY id"), (lab,))
            return [str(row[0]) for row in cur.fetchall()]

    def add_allure_history(self, lab: str, lines: list[str]) -> None:
        """Append lines Allure added to the lab's history while building a report."""
        with self._tx() as cur:
            for line in lines:
                cur.execute(
                    self._sql("INSERT INTO allure_history (lab, line, added) VALUES (?, ?, ?)"),
                    (lab, line, time.time()),
                )

    def close(self) -> None:
        """Close the connection."""
        with self._lock:
            self._conn.close()


def store_exists(url: str) -> bool:
    """Whether the store ``url`` names can hold history: a SQLite file that exists, or a server
    (PostgreSQL is asked when opened).  Read-only commands check this first, so they never
    create an empty store by looking."""
    return not url.startswith("sqlite:///") or Path(url.removeprefix("sqlite:///")).exists()
