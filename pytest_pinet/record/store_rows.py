"""Rows of the results store as read back: the columns read, and the figures of a row's
JSON data that history, trends and the standing need (goodput's and latency's)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ..model.latency import BASELINE_SHARE, percentile


@dataclass(frozen=True)
class StoredMeasurement:
    """One row read back from the store."""

    id: int
    run_id: str
    test_id: str
    context_key: str
    started: float
    goodput_mbps: float
    kernel: str
    os: str
    adapter: str
    board: str
    verdict: str
    intervals: tuple[float, ...]
    latency_p99_ms: float | None = None  # routing: RTT under load, p99 (lower is better)
    latency_rtt_ms: tuple[float, ...] = ()  # routing: every probe under load that came back
    latency_verdict: str = ""  # judge.latency's status ('' : not judged, or stored before v2)


# The row's figures come from their own columns (store_schema.figure_columns); a row whose
# columns are empty (one an older pinet wrote into a newer store) has its JSON data read after
# (:func:`missing_figures`), so the columns read here stay within SQLite's history index.
STORED_COLUMNS = (
    "id, run_id, test_id, context_key, started, goodput_mbps, kernel, os, adapter, board, verdict, "
    "latency_verdict, interval_mbps, load_rtt_ms, load_p99_ms"
)
# The same without the probes' RTTs (read as none), for what only goodput asks: every column
# of it is in SQLite's goodput history index (store_revisions.SQLITE_COUNTER).
GOODPUT_COLUMNS = STORED_COLUMNS.replace("load_rtt_ms, load_p99_ms", "'[]', load_p99_ms")


def missing_figures(rows: list[Any]) -> list[int]:
    """The ids of read rows whose figure columns are empty: their data must be read."""
    return [int(r[0]) for r in rows if r[12] is None or r[13] is None]


def stored_row(r: Any, data_text: str | None = None) -> StoredMeasurement:
    """A read row; ``data_text``: its JSON data, for a row without figure columns."""
    if data_text is not None:
        data = json.loads(data_text)
        intervals = tuple(data.get("interval_mbps", ()))
        rtts, p99 = latency_rtts_of(data), latency_p99_of(data)
    else:
        # Most rows hold no probes ('[]', and goodput's history reads none): no parse for them.
        intervals, rtts = tuple(json.loads(r[12])), (() if r[13] == "[]" else tuple(json.loads(r[13])))
        p99 = float(r[14]) if r[14] is not None else None
    return StoredMeasurement(
        int(r[0]), r[1], r[2], r[3], float(r[4]), float(r[5]), r[6], r[7], r[8], r[9], r[10],
        intervals, p99, rtts, r[11] or "",
    )  # fmt: skip


def latency_rtts_of(data: dict[str, Any]) -> tuple[float, ...]:
    """The RTTs under load a stored measurement's data holds (lost probes left out)."""
    latency = (data.get("detail") or {}).get("latency") or {}
    return tuple(float(v) for v in latency.get("load_rtt_ms") or () if isinstance(v, int | float))


def latency_followed_of(data: dict[str, Any]) -> float | None:
    """The figure a latency baseline follows (the p90 of the probes under load,
    :data:`..model.latency.BASELINE_SHARE`), if the stored data holds its probes."""
    latency = (data.get("detail") or {}).get("latency") or {}
    rtts = latency_rtts_of(data)
    return percentile(rtts, BASELINE_SHARE) if rtts and not latency.get("not_measured") else None


def latency_p99_of(data: dict[str, Any]) -> float | None:
    """The p99 RTT under load a stored measurement's data holds, if it was measured."""
    latency = (data.get("detail") or {}).get("latency") or {}
    load = latency.get("load") or {}
    value = load.get("p99_ms")
    return float(value) if isinstance(value, int | float) and not latency.get("not_measured") else None
