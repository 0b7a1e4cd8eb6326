"""A real results store holding given rows, for the morning digest's tests: the rows are written
as a night's export is (``ResultsStore.add_rows``), so every question the digest asks is
answered by the store itself, kept standings included."""

from __future__ import annotations

import json
from pathlib import Path

from pytest_pinet.model.context_key import ContextKey
from pytest_pinet.record.store import ResultsStore, StoredMeasurement
from pytest_pinet.record.store_schema import IMPORTED_COLUMNS


def store_of_rows(rows: list[StoredMeasurement], path: Path) -> ResultsStore:
    """A SQLite store at ``path`` holding ``rows`` (their runs registered as they start)."""
    store = ResultsStore(str(path))
    for row in sorted(rows, key=lambda r: r.started):
        store.add_run(
            row.run_id, ContextKey.parse(row.context_key).get("lab") or "pinet", "0.1.0", started=row.started
        )
    whole = []
    for row in rows:
        latency = {"load_rtt_ms": list(row.latency_rtt_ms), "load": {"p99_ms": row.latency_p99_ms}}
        data = {
            "interval_mbps": list(row.intervals),
            "goodput_mbps": row.goodput_mbps,
            "detail": {"latency": latency},
        }
        values: dict[str, object] = dict.fromkeys(IMPORTED_COLUMNS, "")
        values.update(
            run_id=row.run_id, test_id=row.test_id, context_key=row.context_key, started=row.started,
            finished=row.started + 1, lab=ContextKey.parse(row.context_key).get("lab"), board=row.board,
            adapter=row.adapter, kernel=row.kernel, os=row.os, streams=1, duration_s=1, omit_s=0, mtu=1500,
            link_speed_mbps=1000, goodput_mbps=row.goodput_mbps, sent_mbps=None, retransmits=None,
            limit_mbps=0.0, fairness=None, data=json.dumps(data), verdict=row.verdict,
            latency_verdict=row.latency_verdict,
        )  # fmt: skip
        whole.append(values)
    store.add_rows(whole)
    return store
