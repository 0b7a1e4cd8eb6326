"""Change points over a context's history: when did throughput shift, and what came with it?

Each run contributes its per-second goodput samples, so a run is a segment of many points
and one odd second is just noise.  Binary segmentation tries every boundary between runs and
keeps the split with the largest robust z statistic: the difference of the two segments'
medians over a noise scale taken from the pooled median absolute deviation within segments.
Medians and MAD matter here: a TCP run has ramp-up and loss-recovery seconds far from its
level (810 Mbit/s in an otherwise 917 Mbit/s run), which would inflate a variance and hide a
3 % shift.  A split counts when it is significant (two-sided p below ``alpha``, normal
approximation, which is why each side needs ``min_samples``: three, the measured seconds of
a run stopped at the virtual lab's adaptive minimum, which a fourth did not change), large enough to matter
(``min_change_percent``), and backed by ``min_segment_runs`` runs on each side.  The
defaults allow a single degraded *run* at the end (every second of it lower) but not a
single outlying *second*.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from .stats import MAD_TO_SD, median_standard_error


@dataclass(frozen=True)
class RunSeries:
    """One run's samples of one context, with what the run ran on."""

    run_id: str
    started: float
    samples: tuple[float, ...]
    meta: Mapping[str, str] = field(default_factory=dict)  # kernel, os, adapter, board ...


@dataclass(frozen=True)
class ChangePoint:
    """A shift between two runs of one context."""

    run_id: str  # the first run after the shift
    before_median: float  # median of the samples before the shift
    after_median: float  # median after
    change_percent: float
    p_value: float
    came_with: Mapping[str, tuple[str, str]]  # meta keys that differ across the boundary

    def explain(self) -> str:
        """One line naming the run and what changed with it."""
        changes = ", ".join(f"{k} {a} -> {b}" for k, (a, b) in self.came_with.items()) or "no recorded change"
        return (
            f"run {self.run_id}: {self.before_median:.1f} -> {self.after_median:.1f} Mbit/s "
            f"({self.change_percent:+.2f} %, p={self.p_value:.1e}); came with: {changes}"
        )


@dataclass(frozen=True)
class ChangePolicy:
    """When a shift counts as a change point."""

    alpha: float = 0.001
    min_change_percent: float = 1.0
    # Five hid a single degraded night of 3 s runs: every second of it 3 % lower, yet no
    # change point until the second such night (a CI trial, 2026-11-28).
    min_samples: int = 3
    min_segment_runs: int = 1


def _median(ordered: Sequence[float]) -> float:
    """The median of values already sorted, as :func:`statistics.median` computes it."""
    n = len(ordered)
    if n % 2:
        return ordered[n // 2]
    return (ordered[n // 2 - 1] + ordered[n // 2]) / 2


def _robust_z(a: Sequence[float], b: Sequence[float]) -> tuple[float, float]:
    """Median difference over its standard error from the pooled MAD; (z, two-sided p)."""
    z, p, _, _ = _sorted_z(sorted(a), sorted(b))
    return z, p


def _sorted_z(a: Sequence[float], b: Sequence[float]) -> tuple[float, float, float, float]:
    """:func:`_robust_z` of two sorted sides, with their medians: (z, p, median a, median b).

    Sorted input makes each median a lookup and the deviations a few ascending and descending
    runs, which the sort merges in near-linear time: a year-long walk asks this thousands of
    times, and the same figures come out as from unsorted sides."""
    ma, mb = _median(a), _median(b)
    deviations = sorted([abs(x - ma) for x in a] + [abs(x - mb) for x in b])
    scale = MAD_TO_SD * _median(deviations)  # the pooled MAD, as a standard deviation
    se = math.hypot(median_standard_error(scale, len(a)), median_standard_error(scale, len(b)))
    if se == 0:
        return (math.inf if ma != mb else 0.0), (0.0 if ma != mb else 1.0), ma, mb
    z = (mb - ma) / se
    return z, math.erfc(abs(z) / math.sqrt(2)), ma, mb


def came_with_step(before: Mapping[str, str], after: Mapping[str, str]) -> dict[str, tuple[str, str]]:
    """What a step came with: each meta key (kernel, os, adapter ...) whose value differs
    between the last run before it and the first after it, as (before, after)."""
    return {
        k: (str(before.get(k, "")), str(after.get(k, "")))
        for k in sorted(set(before) | set(after))
        if before.get(k) != after.get(k)
    }


def _pooled(runs: Sequence[RunSeries]) -> list[float]:
    """Every sample of ``runs``, sorted."""
    return sorted(x for r in runs for x in r.samples)


def detect_change_points(runs: Sequence[RunSeries], policy: ChangePolicy | None = None) -> list[ChangePoint]:
    """Change points in ``runs`` (ordered by time), earliest first."""
    policy = policy or ChangePolicy()
    ordered = sorted(runs, key=lambda r: r.started)
    found: list[ChangePoint] = []
    _segment(ordered, policy, found)
    ids = [r.run_id for r in ordered]
    splits = sorted(ids.index(c.run_id) for c in found)
    # Median splits can land beside a true shift; re-test each split between its neighbours
    # and drop the ones that do not hold there, until every remaining split holds.
    while True:
        kept = [
            s
            for n, s in enumerate(splits)
            if _holds(
                ordered[(splits[n - 1] if n else 0) : s],
                ordered[s : (splits[n + 1] if n + 1 < len(splits) else None)],
                policy,
            )
        ]
        if kept == splits:
            break
        splits = kept
    return [
        _change(
            ordered[(splits[n - 1] if n else 0) : s],
            ordered[s : (splits[n + 1] if n + 1 < len(splits) else None)],
        )
        for n, s in enumerate(splits)
    ]


def _holds(left_runs: Sequence[RunSeries], right_runs: Sequence[RunSeries], policy: ChangePolicy) -> bool:
    left, right = _pooled(left_runs), _pooled(right_runs)
    if len(left) < policy.min_samples or len(right) < policy.min_samples:
        return False
    _, p, before, after = _sorted_z(left, right)
    change = 100.0 * (after - before) / abs(before)
    return p < policy.alpha and abs(change) >= policy.min_change_percent


def _change(left_runs: Sequence[RunSeries], right_runs: Sequence[RunSeries]) -> ChangePoint:
    _, p, before, after = _sorted_z(_pooled(left_runs), _pooled(right_runs))
    last_before, first_after = left_runs[-1].meta, right_runs[0].meta
    came_with = came_with_step(last_before, first_after)
    return ChangePoint(
        right_runs[0].run_id, before, after, 100.0 * (after - before) / abs(before), p, came_with
    )


def _side_medians(runs: Sequence[RunSeries]) -> list[tuple[int, float]]:
    """(count, median) of the samples of ``runs[:split]`` for every split: one sorted list
    grown in place run by run (the sort merges the new run into it), nothing copied."""
    grown: list[float] = []
    found = [(0, 0.0)]
    for run in runs:
        grown.extend(run.samples)
        grown.sort()
        found.append((len(grown), _median(grown) if grown else 0.0))
    return found


def _segment(runs: Sequence[RunSeries], policy: ChangePolicy, found: list[ChangePoint]) -> None:
    # The medians of each side of every split first: most splits are too small a change to
    # count, whatever their z, and need no more. The z of the others needs both sides sorted:
    # the larger comes from a list grown run by run, the smaller is sorted afresh.
    lefts = _side_medians(runs)
    rights = _side_medians(runs[::-1])[::-1]
    candidates = []
    for split in range(policy.min_segment_runs, len(runs) - policy.min_segment_runs + 1):
        (n_left, before), (n_right, after) = lefts[split], rights[split]
        if n_left < policy.min_samples or n_right < policy.min_samples:
            continue
        if abs(100.0 * (after - before) / abs(before)) >= policy.min_change_percent:
            candidates.append(split)
    tested: dict[int, tuple[float, float]] = {}
    small_left = {s for s in candidates if lefts[s][0] <= rights[s][0]}
    grown: list[float] = []
    for split in range(len(runs) - 1, min(small_left, default=len(runs)) - 1, -1):  # the right side
        grown.extend(runs[split].samples)
        grown.sort()
        if split in small_left:
            tested[split] = _sorted_z(_pooled(runs[:split]), grown)[:2]
    small_right = {s for s in candidates if s not in small_left}
    grown = []
    for split in range(max(small_right, default=0)):  # the left side, grown from the start
        grown.extend(runs[split].samples)
        grown.sort()
        if split + 1 in small_right:
            tested[split + 1] = _sorted_z(grown, _pooled(runs[split + 1 :]))[:2]
    significant = [(abs(t), -split, p) for split, (t, p) in tested.items() if p < policy.alpha]
    if not significant:
        return
    # The largest |z|, the earliest split among equals: as a scan keeping the first best would.
    t_abs, negative_split, p = max(significant, key=lambda found: (found[0], found[1]))
    best = (t_abs, -negative_split, p)
    _, split, p = best
    left_runs, right_runs = runs[:split], runs[split:]
    before, after = lefts[split][1], rights[split][1]
    last_before, first_after = left_runs[-1].meta, right_runs[0].meta
    came_with = came_with_step(last_before, first_after)
    found.append(
        ChangePoint(right_runs[0].run_id, before, after, 100.0 * (after - before) / abs(before), p, came_with)
    )
    _segment(left_runs, policy, found)
    _segment(right_runs, policy, found)
