"""Rows of the results store as read back: the columns read, and the figures of a row's
JSON data that history, trends and the standing need (goodput's and latency's)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
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
    latency_verdict: str = ""  # judge.latency_verdict's status ('' : not judged, or stored before v2)


# The row's figures come from their own columns (store_schema.figure_columns); a row whose
# columns are empty (one an older pinet wrote into a newer store) has its JSON data read after
# (:func:`missing_figures`), so the columns read here stay within SQLite's history index.
STORED_NAMES = (
    "id", "run_id", "test_id", "context_key", "started", "goodput_mbps", "kernel", "os", "adapter",
    "board", "verdict", "latency_verdict", "interval_mbps", "load_rtt_ms", "load_p99_ms",
)  # fmt: skip
STORED_COLUMNS = ", ".join(STORED_NAMES)
# The same without the probes' RTTs (read as none), for what only goodput asks: every column
# of it is in SQLite's goodput history index (store_revisions.SQLITE_COUNTER).
GOODPUT_COLUMNS = STORED_COLUMNS.replace("load_rtt_ms", "'[]'")


def by_name(values: Sequence[Any]) -> dict[str, Any]:
    """A row selected as :data:`STORED_COLUMNS` (or :data:`GOODPUT_COLUMNS`), by column name."""
    return dict(zip(STORED_NAMES, values, strict=True))


def missing_figures(rows: Sequence[Mapping[str, Any]]) -> list[int]:
    """The ids of read rows whose figure columns are empty: their data must be read."""
    return [int(r["id"]) for r in rows if r["interval_mbps"] is None or r["load_rtt_ms"] is None]


def stored_row(r: Mapping[str, Any], data_text: str | None = None) -> StoredMeasurement:
    """A read row, by column name; ``data_text``: its JSON data, for a row without figure columns."""
    if data_text is not None:
        data = json.loads(data_text)
        intervals = tuple(data.get("interval_mbps", ()))
        rtts, p99 = latency_rtts_of(data), latency_p99_of(data)
    else:
        # Most rows hold no probes ('[]', and goodput's history reads none): no parse for them.
        intervals = tuple(json.loads(r["interval_mbps"]))
        rtts = () if r["load_rtt_ms"] == "[]" else tuple(json.loads(r["load_rtt_ms"]))
        p99 = float(r["load_p99_ms"]) if r["load_p99_ms"] is not None else None
    return StoredMeasurement(
        id=int(r["id"]),
        run_id=r["run_id"],
        test_id=r["test_id"],
        context_key=r["context_key"],
        started=float(r["started"]),
        goodput_mbps=float(r["goodput_mbps"]),
        kernel=r["kernel"],
        os=r["os"],
        adapter=r["adapter"],
        board=r["board"],
        verdict=r["verdict"],
        intervals=intervals,
        latency_p99_ms=p99,
        latency_rtt_ms=rtts,
        latency_verdict=r["latency_verdict"] or "",
    )


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
