"""One context across nights, as a chart on its test's page: the series, the band, the shift.

A test's page in the report shows tonight's figure; what makes it a regression or not is
the context's history.  The chart draws every stored run of the context (its per-second
median and range), the baseline and its band as tonight's verdict used them, and the change
points ``pinet trends`` finds, so a drop, the band it fell out of and the run it came with
are seen without opening a JSON file.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from ..judge.baseline import BaselinePolicy, judge_baseline
from ..judge.changepoints import ChangePoint, ChangePolicy, RunSeries, detect_change_points
from .plots import png_of
from .store import ResultsStore, StoredMeasurement

NOT_EVIDENCE = ("lab-fault", "invalid-thermal")  # never a measurement of the software
MAX_RUNS = 40


def run_series(rows: Sequence[StoredMeasurement], metric: str = "goodput") -> list[RunSeries]:
    """A context's stored rows as one series per run (per-second samples, what it ran on);
    with ``metric="latency"`` the samples are the probes' RTTs under load (ms)."""
    by_run: dict[str, list[float]] = {}
    meta: dict[str, dict[str, str]] = {}
    started: dict[str, float] = {}
    for row in rows:
        if row.verdict in NOT_EVIDENCE:
            continue
        if metric == "latency":
            if not row.latency_rtt_ms:
                continue
            by_run.setdefault(row.run_id, []).extend(row.latency_rtt_ms)
        else:
            by_run.setdefault(row.run_id, []).extend(row.intervals or (row.goodput_mbps,))
        meta[row.run_id] = {"kernel": row.kernel, "os": row.os, "adapter": row.adapter, "board": row.board}
        started.setdefault(row.run_id, row.started)
    return [RunSeries(r, started[r], tuple(v), meta[r]) for r, v in by_run.items()]


def context_trend_png(
    store: ResultsStore,
    key: str,
    run_id: str,
    title: str,
    baseline_policy: BaselinePolicy,
    unit: str = "Mbit/s",
) -> bytes | None:
    """The chart of context ``key`` up to run ``run_id``; None without an earlier run (nothing
    to compare) or without matplotlib."""
    rows = [r for r in store.history(key) if r.verdict not in NOT_EVIDENCE]
    tonight = [r for r in rows if r.run_id == run_id]
    earlier = [r for r in rows if r.run_id != run_id and (not tonight or r.started < tonight[0].started)]
    if not tonight or not earlier:
        return None
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    series = run_series([*earlier, *tonight])[-MAX_RUNS:]
    changes = detect_change_points(series, ChangePolicy())
    verdict = judge_baseline(tonight[-1].goodput_mbps, [r.goodput_mbps for r in earlier], baseline_policy)
    figure, axes = plt.subplots(figsize=(8, 3.4), dpi=100)
    xs = list(range(len(series)))
    figures = [_run_figure(s) for s in series]
    lows = [min(s.samples) for s in series]
    highs = [max(s.samples) for s in series]
    axes.vlines(xs, lows, highs, color="lightgrey", linewidth=4, zorder=1, label="per-second range")
    axes.plot(xs, figures, color="grey", linewidth=0.8, zorder=2)
    axes.scatter(xs[:-1], figures[:-1], color="tab:blue", s=28, zorder=3, label="earlier nights")
    tonight_colour = "tab:red" if verdict.status == "regression" else "tab:green"
    axes.scatter(
        [xs[-1]], [figures[-1]], color=tonight_colour, s=60, zorder=4, label=f"tonight ({verdict.status})"
    )
    if verdict.baseline is not None and verdict.band is not None:
        axes.axhline(verdict.baseline, color="tab:blue", linestyle="--", linewidth=1, label="baseline")
        axes.axhspan(
            verdict.baseline - verdict.band,
            verdict.baseline + verdict.band,
            color="tab:blue",
            alpha=0.12,
            label=f"band +-{verdict.band:.2f} {unit}",
        )
    _mark_changes(axes, series, changes)
    axes.set_xticks(xs)
    axes.set_xticklabels([s.run_id[:15] for s in series], rotation=30, ha="right", fontsize=7)
    axes.set_ylabel(unit)
    axes.set_title(title, fontsize=9)
    axes.legend(fontsize=7, loc="lower left")
    return png_of(figure, left=0.08, right=0.98, bottom=0.26, top=0.9)


def _run_figure(series: RunSeries) -> float:
    return float(statistics.median(series.samples))


def _mark_changes(axes: object, series: list[RunSeries], changes: list[ChangePoint]) -> None:
    runs = [s.run_id for s in series]
    for change in changes:
        if change.run_id in runs:
            at = runs.index(change.run_id) - 0.5
            axes.axvline(at, color="tab:orange", linewidth=1.5)  # type: ignore[attr-defined]
            axes.annotate(  # type: ignore[attr-defined]
                f"change {change.change_percent:+.1f} %",
                (at, change.after_median),
                fontsize=7,
                color="tab:orange",
                xytext=(3, 3),
                textcoords="offset points",
            )
