"""Two runs side by side: per context, both figures, the change, and whether it is beyond the
noise that context has shown.

A delta means something only against how much the same context varies from run to run: the
noise is three robust standard deviations (1.4826 x the median absolute deviation) of that
context's other stored runs, as a percentage of their median, and never less than the
smallest band the baseline uses (1 %).  With fewer than three other runs there is no
run-to-run spread to learn from: the two runs' own per-second samples then give it (three
standard errors of the difference of their means), and a context without such samples (a
disk's dd) has an unknown noise and is never called a change.

Goodput is compared by default; ``metric="latency"`` compares the RTT under load (p99), where
lower is better: a change beyond noise is then *worse* when it rises (``worse`` says which
way a change went, whichever the metric's direction).
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from ..judge.latency_verdict import lower_is_better
from ..judge.stats import difference_standard_error, robust_sd
from ..model.context_key import ContextKey
from .store import StoredMeasurement

# Beyond noise: more than this many (robust) standard deviations apart.
NOISE_SDS = 3
LABEL_FIELDS = (
    "board", "link", "adapter", "scenario", "direction", "duplex", "profile", "qdisc",
    "filesystem", "block_bytes", "rate_target_mbps", "opposite_rate_mbps", "streams",
)  # fmt: skip
MIN_BAND_PCT = 1.0
NOT_MEASUREMENTS = ("lab-fault", "invalid-thermal")
METRICS = {
    "goodput": "goodput_mbps",
    "latency": "rtt_load_p99_ms",
}  # name -> judge.latency_verdict.DIRECTIONS key


def value_of(row: StoredMeasurement, metric: str = "goodput") -> float | None:
    """The figure of ``row`` that ``metric`` compares (None: the row has none)."""
    return row.latency_p99_ms if metric == "latency" else row.goodput_mbps


@dataclass(frozen=True)
class ContextDelta:
    """One context as two runs measured it."""

    context: str
    label: str
    a_mbps: float | None
    b_mbps: float | None
    delta_pct: float | None
    noise_pct: float | None  # None: unknown (too little history, no per-second samples)
    noise_from: str  # "history (N runs)", "per-second samples" or why it is unknown
    beyond_noise: bool | None  # None: cannot tell
    metric: str = "goodput"
    worse: bool | None = None  # beyond noise in the metric's bad direction (None: cannot tell)


def label_of(key: str) -> str:
    """The readable part of a context key: board, link, direction, profile ..."""
    return ", ".join(ContextKey.parse(key).values(LABEL_FIELDS))


def _median_by_context(rows: Sequence[StoredMeasurement], metric: str) -> dict[str, float]:
    values: dict[str, list[float]] = {}
    for row in rows:
        value = value_of(row, metric)
        if row.verdict not in NOT_MEASUREMENTS and value is not None:
            values.setdefault(row.context_key, []).append(value)
    return {key: statistics.median(v) for key, v in values.items()}


def noise_of(
    others: Sequence[float], a_samples: Sequence[float] = (), b_samples: Sequence[float] = ()
) -> tuple[float | None, str]:
    """The noise band (percent) of a context: from its other runs, else from the two runs'
    per-second samples, else unknown."""
    if len(others) >= 3:
        centre = statistics.median(others)
        spread = NOISE_SDS * robust_sd(others) / centre * 100 if centre else 0.0
        return max(MIN_BAND_PCT, spread), f"history ({len(others)} runs)"
    if len(a_samples) >= 3 and len(b_samples) >= 3:
        error = difference_standard_error(a_samples, b_samples)
        centre = statistics.mean(a_samples)
        return max(MIN_BAND_PCT, NOISE_SDS * error / centre * 100 if centre else 0.0), "per-second samples"
    return None, f"unknown ({len(others)} other runs, no per-second samples)"


def _samples_by_context(rows: Sequence[StoredMeasurement]) -> dict[str, list[float]]:
    samples: dict[str, list[float]] = {}
    for row in rows:
        if row.verdict not in NOT_MEASUREMENTS:
            samples.setdefault(row.context_key, []).extend(row.intervals)
    return samples


def compare_runs(
    a: Sequence[StoredMeasurement],
    b: Sequence[StoredMeasurement],
    history: Mapping[str, Sequence[float]],
    metric: str = "goodput",
) -> list[ContextDelta]:
    """Per context of either run: both medians, B's change against A and the noise band.

    ``history`` maps a context to the per-run medians of the store's other runs (of
    ``metric``).  Per-second samples are goodput's: latency's noise comes from history only.
    """
    first, second = _median_by_context(a, metric), _median_by_context(b, metric)
    if metric == "goodput":
        a_samples, b_samples = _samples_by_context(a), _samples_by_context(b)
    else:
        a_samples, b_samples = {}, {}
    lower = lower_is_better(METRICS[metric])
    result = []
    for key in sorted(set(first) | set(second)):
        noise, source = noise_of(history.get(key, ()), a_samples.get(key, ()), b_samples.get(key, ()))
        x, y = first.get(key), second.get(key)
        delta = 100.0 * (y - x) / x if x and y is not None else None
        beyond = None if delta is None or noise is None else abs(delta) > noise
        worse = None if beyond is None or delta is None else beyond and (delta > 0 if lower else delta < 0)
        result.append(ContextDelta(key, label_of(key), x, y, delta, noise, source, beyond, metric, worse))
    return result


def as_data(deltas: Sequence[ContextDelta]) -> list[dict[str, Any]]:
    """The comparison as JSON-ready data."""
    return [asdict(delta) for delta in deltas]


def table(deltas: Sequence[ContextDelta], run_a: str, run_b: str) -> list[str]:
    """The comparison for people: one line per context, the ones beyond noise marked."""
    unit = "p99 ms" if any(d.metric == "latency" for d in deltas) else "Mbit/s"
    lines = [
        f"{'context':60} {'A ' + unit:>9} {'B ' + unit:>9} {'change':>8} {'noise':>7}",
        f"A = {run_a}, B = {run_b}" + ("  (RTT under load: lower is better)" if unit != "Mbit/s" else ""),
    ]
    for d in deltas:
        a = f"{d.a_mbps:9.1f}" if d.a_mbps is not None else f"{'-':>9}"
        b = f"{d.b_mbps:9.1f}" if d.b_mbps is not None else f"{'-':>9}"
        change = f"{d.delta_pct:+7.2f}%" if d.delta_pct is not None else f"{'only one':>8}"
        noise = f"{d.noise_pct:6.2f}%" if d.noise_pct is not None else f"{'?':>7}"
        mark = ("  BEYOND NOISE, WORSE" if d.worse else "  BEYOND NOISE, BETTER") if d.beyond_noise else ""
        lines.append(f"{d.label[:60]:60} {a} {b} {change} {noise}{mark}")
    beyond = sum(1 for d in deltas if d.beyond_noise)
    unknown = sum(1 for d in deltas if d.beyond_noise is None and d.delta_pct is not None)
    lines.append(
        f"{beyond} of {len(deltas)} contexts changed beyond noise"
        + (
            f"; {unknown} with unknown noise (fewer than 3 other runs and no per-second samples)"
            if unknown
            else ""
        )
    )
    return lines
