"""The results store's schema: the tables a new store starts with (version 1), the numbered
migrations that bring any store to the latest version, and the one mapping from a measurement
to the values of its row.

A store is never rebuilt: a lab's history is the point of it. Each migration names its version
and what it adds; opening a store applies, in order, those above the version it records, and
records the new one (never a lower one: an older pinet opening a newer store leaves its version
as it is). Each step may run twice (two processes opening one store at once), so a column is
added only when missing and every statement says ``IF NOT EXISTS``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from ..judge.fairness import jain_fairness
from ..model import Measurement
from ..model.context_key import context_key
from .board_service import TABLES_POSTGRESQL as BOARD_SERVICE_POSTGRESQL
from .board_service import TABLES_SQLITE as BOARD_SERVICE_SQLITE
from .known_issues import TABLE_POSTGRESQL as KNOWN_ISSUES_POSTGRESQL
from .known_issues import TABLE_SQLITE as KNOWN_ISSUES_SQLITE
from .store_priors import TABLE as SPREAD_PRIORS
from .store_revisions import POSTGRES_COUNTER, SQLITE_COUNTER, TABLES
from .store_rows import latency_p99_of, latency_rtts_of

# Version 1: what every store starts from; the migrations below bring it to the latest.
BASE_SCHEMA = [
    """CREATE TABLE IF NOT EXISTS pinet_schema (version INTEGER NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS runs (
        run_id TEXT PRIMARY KEY,
        started DOUBLE PRECISION NOT NULL,
        lab TEXT NOT NULL,
        suite_version TEXT NOT NULL,
        note TEXT NOT NULL DEFAULT ''
    )""",
    """CREATE TABLE IF NOT EXISTS measurements (
        id {serial},
        run_id TEXT NOT NULL,
        test_id TEXT NOT NULL,
        context_key TEXT NOT NULL,
        started DOUBLE PRECISION NOT NULL,
        finished DOUBLE PRECISION NOT NULL,
        lab TEXT NOT NULL, board TEXT NOT NULL, peer TEXT NOT NULL, link TEXT NOT NULL,
        adapter TEXT NOT NULL, driver TEXT NOT NULL, firmware TEXT NOT NULL,
        kernel TEXT NOT NULL, os TEXT NOT NULL,
        scenario TEXT NOT NULL, direction TEXT NOT NULL, duplex TEXT NOT NULL,
        profile TEXT NOT NULL, qdisc TEXT NOT NULL, protocol TEXT NOT NULL,
        streams INTEGER NOT NULL, duration_s INTEGER NOT NULL, omit_s INTEGER NOT NULL,
        mtu INTEGER NOT NULL, link_speed_mbps INTEGER NOT NULL,
        iperf3_version TEXT NOT NULL, suite_version TEXT NOT NULL,
        goodput_mbps DOUBLE PRECISION NOT NULL,
        sent_mbps DOUBLE PRECISION,
        retransmits INTEGER,
        limit_mbps DOUBLE PRECISION NOT NULL,
        fairness DOUBLE PRECISION,
        verdict TEXT NOT NULL DEFAULT '',
        verdict_reason TEXT NOT NULL DEFAULT '',
        data TEXT NOT NULL
    )""",
    """CREATE INDEX IF NOT EXISTS measurements_context ON measurements (context_key, started)""",
    """CREATE INDEX IF NOT EXISTS measurements_run ON measurements (run_id)""",
    # Runs a user took out of the baselines (a known-bad night); their rows stay, and say so.
    """CREATE TABLE IF NOT EXISTS run_exclusions (
        run_id TEXT PRIMARY KEY,
        why TEXT NOT NULL,
        at DOUBLE PRECISION NOT NULL
    )""",
    # A person's word that a changed level is the new normal (judge/standing.py): the run it
    # starts at, one context or '*' for every context, who, when and why; undoing keeps the row.
    """CREATE TABLE IF NOT EXISTS acceptances (
        id {serial},
        run_id TEXT NOT NULL,
        context_key TEXT NOT NULL,
        why TEXT NOT NULL,
        who TEXT NOT NULL,
        at DOUBLE PRECISION NOT NULL,
        undone_at DOUBLE PRECISION,
        undone_by TEXT NOT NULL DEFAULT ''
    )""",
    # Allure 3's history (one JSON line per report built), one per lab, kept with the store so
    # that every runner of a lab sharing a PostgreSQL store adds to the same trend.
    """CREATE TABLE IF NOT EXISTS allure_history (
        id {serial},
        lab TEXT NOT NULL,
        line TEXT NOT NULL,
        added DOUBLE PRECISION NOT NULL
    )""",
]


@dataclass(frozen=True)
class Migration:
    """One step of the schema: its version, why it exists, the columns it adds to
    ``measurements`` (name: definition) and any other statements (each idempotent)."""

    version: int
    why: str
    add_columns: dict[str, str] = field(default_factory=dict)
    statements: tuple[str, ...] = ()
    # Columns whose values are derived from each row's JSON data (:func:`figure_columns`):
    # filled in for the rows stored before the step, where they are still NULL.
    derived: tuple[str, ...] = ()
    # Statements of one dialect, run before the common ones.
    sqlite: tuple[str, ...] = ()
    postgresql: tuple[str, ...] = ()


# The figures history reads, in columns of their own (:func:`figure_columns`, version 3).
FIGURE_COLUMNS = ("interval_mbps", "load_rtt_ms", "load_p99_ms")

MIGRATIONS = (
    Migration(
        2,
        "the latency verdict beside goodput's",
        add_columns={
            "latency_verdict": "TEXT NOT NULL DEFAULT ''",
            "latency_reason": "TEXT NOT NULL DEFAULT ''",
        },
    ),
    Migration(
        3,
        "history reads a row's figures without its JSON: per-second goodput, RTTs under load, p99",
        add_columns={
            "interval_mbps": "TEXT",
            "load_rtt_ms": "TEXT",
            "load_p99_ms": "DOUBLE PRECISION",
        },
        statements=(
            "CREATE INDEX IF NOT EXISTS measurements_context_run "
            "ON measurements (context_key, run_id, started)",
        ),
        derived=FIGURE_COLUMNS,
    ),
    Migration(
        4,
        "each context's standing kept and walked on night by night (record/standing_memo.py)",
        statements=TABLES,
        sqlite=SQLITE_COUNTER,
        postgresql=POSTGRES_COUNTER,
    ),
    Migration(
        5,
        "the floor a measurement's verdict held it to: how far a context is above it (judge.detection)",
        add_columns={"floor_mbps": "DOUBLE PRECISION"},
    ),
    Migration(
        6,
        "the spread prior each run's verdicts pooled a context's spread with (record/store_priors.py)",
        statements=(SPREAD_PRIORS,),
    ),
    Migration(
        7,
        "known issues named against what changed on red contexts' paths (record/known_issues.py)",
        sqlite=(KNOWN_ISSUES_SQLITE,),
        postgresql=(KNOWN_ISSUES_POSTGRESQL,),
    ),
    Migration(
        8,
        "each night's health check of a board, and its returns to service (record/board_service.py)",
        sqlite=BOARD_SERVICE_SQLITE,
        postgresql=BOARD_SERVICE_POSTGRESQL,
    ),
)
SCHEMA_VERSION = MIGRATIONS[-1].version

# A measurement's columns as a night is exported and imported whole (``ResultsStore.add_rows``,
# the history benchmark's store): what :func:`measurement_row` writes and the verdicts set later.
IMPORTED_COLUMNS = (
    "run_id", "test_id", "context_key", "started", "finished", "lab", "board", "peer", "link",
    "adapter", "driver", "firmware", "kernel", "os", "scenario", "direction", "duplex", "profile",
    "qdisc", "protocol", "streams", "duration_s", "omit_s", "mtu", "link_speed_mbps",
    "iperf3_version", "suite_version", "goodput_mbps", "sent_mbps", "retransmits", "limit_mbps",
    "fairness", "data", "verdict", "verdict_reason", "latency_verdict", "latency_reason",
)  # fmt: skip


def measurement_row(run_id: str, measurement: Measurement, suite_version: str) -> dict[str, Any]:
    """The ``measurements`` row of one measurement, column by column: the insert is built from
    this mapping alone, so a value can never land in its neighbour's column."""
    c = measurement.context
    board = measurement.facts.get("board")
    summary = measurement.summary()
    return {
        "run_id": run_id,
        "test_id": measurement.test_id,
        "context_key": context_key(c.as_match()),
        "started": measurement.started,
        "finished": measurement.finished,
        "lab": c.lab,
        "board": c.board,
        "peer": c.peer,
        "link": c.link,
        "adapter": c.adapter,
        "driver": c.driver,
        "firmware": board.firmware_of(c.link) if board is not None else "",
        "kernel": c.kernel,
        "os": c.os,
        "scenario": c.scenario,
        "direction": c.direction,
        "duplex": c.duplex,
        "profile": c.profile,
        "qdisc": c.qdisc,
        "protocol": c.protocol,
        "streams": c.streams,
        "duration_s": c.duration_s,
        "omit_s": c.omit_s,
        "mtu": c.mtu,
        "link_speed_mbps": c.link_speed_mbps,
        "iperf3_version": measurement.iperf3_version or "",
        "suite_version": suite_version,
        "goodput_mbps": measurement.goodput_mbps,
        "sent_mbps": measurement.sent_mbps,
        "retransmits": measurement.retransmits,
        "limit_mbps": measurement.limit_mbps,
        "fairness": jain_fairness(measurement.per_stream_mbps),
        **figure_columns(summary),
        "data": json.dumps(summary, sort_keys=True),
    }


def figure_columns(data: dict[str, Any]) -> dict[str, Any]:
    """The figures history reads, as their own columns, from a measurement's JSON data: the
    per-second goodputs and the RTTs under load (JSON lists) and the p99 under load (NULL:
    not measured), so that a year of history is read without parsing every row's JSON."""
    return {
        "interval_mbps": json.dumps(list(data.get("interval_mbps") or ())),
        "load_rtt_ms": json.dumps(list(latency_rtts_of(data))),
        "load_p99_ms": latency_p99_of(data),
    }
