"""Sensitivity: the smallest regression the baseline verdict catches, and how often it cries wolf.

On the bench's own lab: ``history`` clean runs make a context's history (a nightly's window),
then ``runs`` clean runs and ``runs`` runs at each planted degradation (``pinet lab degrade``:
the emulated cable slowed by that share) are each judged against that history by
:func:`~pytest_pinet.judge.baseline.judge_baseline`, the function a nightly's verdict uses.
A clean run judged a regression is a false alarm; a degraded one judged a regression is a
detection.  Each run is judged under the default policy and under narrower band floors, so
the table says which setting reaches the target (a 1 % drop caught in >= 95 % of runs with
<= 5 % false alarms) and at what cost in seconds per run.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import LabFault
from ..host.remote import RemoteHost
from ..judge.baseline import BaselinePolicy, band_confidence, judge_baseline
from ..judge.stats import prediction_band
from ..lab.inventory import Inventory
from ..measure import TcpMeasurer
from ..traffic.iperf3_runner import Iperf3Options
from ..virtlab import cable_faults
from ..virtlab.topology import LabSpec
from .recording import bench_site

LEVELS = (0.5, 1.0, 2.0, 3.0)  # percent slower
# The default policy's floor first (BaselinePolicy, --pinet-baseline-band), then others.
BAND_FLOORS = (BaselinePolicy().min_band_percent, 1.0, 0.25)
TARGET_DETECTION, TARGET_FALSE_ALARMS, TARGET_LEVEL = 0.95, 0.05, 1.0


@dataclass(frozen=True)
class Trial:
    """One judged run: the planted degradation (0: clean), its goodput and its wall time."""

    level: float
    goodput: float
    seconds: float


def measure_trials(
    spec: LabSpec,
    inventory: Inventory,
    hosts: dict[str, RemoteHost],
    root: Path,
    counts: Sequence[tuple[float, int]],
    duration: int,
    say: Callable[[str], None],
    not_measured: list[str],
) -> list[Trial]:
    """Runs of 10 streams board->peer at each (degradation, count); the lab is restored after."""
    link = inventory.link("eth")
    site = bench_site(inventory, hosts, root, "sensitivity")
    options = Iperf3Options(duration=duration, omit=1)
    measurer = TcpMeasurer(site, link, options, "stock", None)
    trials = []
    try:
        for level, count in counts:
            cable_faults.degrade(spec, level)
            for number in range(count):
                say(f"sensitivity: {f'{level:g} % slower' if level else 'clean'}, {number + 1} of {count}")
                started = time.monotonic()
                try:
                    measured = measurer.half_duplex("board->peer")
                except LabFault as fault:
                    not_measured.append(f"sensitivity at {level:g} %: lab fault: {fault}")
                    continue
                trials.append(Trial(level, measured.goodput_mbps, time.monotonic() - started))
                say(f"  {measured.goodput_mbps:.2f} Mbit/s")
    finally:
        cable_faults.degrade(spec, 0.0)
    return trials


def judge_trials(history: list[Trial], trials: list[Trial]) -> dict[str, Any]:
    """False alarms on clean runs and detections per degradation, per band floor."""
    values = [t.goodput for t in history]
    table: dict[str, Any] = {
        "history_mbps": values,
        "clean_sd_pct": 100.0 * statistics.stdev(values) / statistics.fmean(values)
        if len(values) > 1
        else None,
        "seconds_per_run": statistics.median(t.seconds for t in history + trials) if trials else None,
        "policies": [],
    }
    for floor in BAND_FLOORS:
        policy = BaselinePolicy(window=max(len(values), 1), min_band_percent=floor)
        band = judge_baseline(0.0, values, policy)
        rows: list[dict[str, Any]] = []
        for level in (0.0, *LEVELS):
            judged = [judge_baseline(t.goodput, values, policy) for t in trials if t.level == level]
            if not judged:
                continue
            flagged = sum(v.regression for v in judged)
            change = [100.0 * (v.value - v.baseline) / v.baseline for v in judged if v.baseline]
            seconds = [t.seconds for t in trials if t.level == level]
            rows.append(
                {
                    "level_pct": level,
                    "runs": len(judged),
                    "flagged": flagged,
                    "rate": flagged / len(judged),
                    "median_change_pct": statistics.median(change) if change else None,
                    "median_seconds": statistics.median(seconds) if seconds else None,
                }
            )
        clean = next((r for r in rows if r["level_pct"] == 0.0), None)
        target = next((r for r in rows if r["level_pct"] == TARGET_LEVEL), None)
        met = (
            clean is not None
            and target is not None
            and float(clean["rate"]) <= TARGET_FALSE_ALARMS
            and float(target["rate"]) >= TARGET_DETECTION
        )
        band_pct = 100.0 * band.band / band.baseline if band.band is not None and band.baseline else None
        limit = None if met else what_limits(table, floor, band_pct, clean, target)
        table["policies"].append(
            {"band_floor_pct": floor, "band_pct": band_pct, "rows": rows, "met": met, "limited_by": limit}
        )
    return table


def what_limits(
    table: dict[str, Any],
    floor: float,
    band_pct: float | None,
    clean: dict[str, Any] | None,
    target: dict[str, Any] | None,
) -> str:
    """Why a band floor missed the target, and the run length that would reach it.

    A 1 % drop is caught in 95 % of runs when the band plus 1.64 run-to-run standard
    deviations stays below 1 %; the deviation falls with the square root of the run length.
    """
    sd, seconds, n = table["clean_sd_pct"], table["seconds_per_run"], len(table["history_mbps"])
    if clean is None or target is None or sd is None or seconds is None or band_pct is None:
        return "too few runs to say"
    if float(clean["rate"]) > TARGET_FALSE_ALARMS:
        return (
            f"false alarms: the {band_pct:.2f} % band is narrower than the host's run-to-run noise "
            f"(sd {sd:.3f} %); a wider floor or longer runs"
        )
    t_factor = prediction_band(1.0, n, band_confidence(n))  # the band, in standard deviations
    room = TARGET_LEVEL - floor
    if room <= 0:
        return (
            f"the {floor:g} % band floor alone is as wide as the {TARGET_LEVEL:g} % drop: no run length helps"
        )
    needed_sd = room / (1.645 + t_factor)
    if sd <= needed_sd:
        return f"noise (sd {sd:.3f} %) is low enough: more runs (R) would firm up the rates"
    longer = seconds * (sd / needed_sd) ** 2
    return (
        f"host noise: sd {sd:.3f} % per {seconds:.0f} s run, {needed_sd:.3f} % needed; "
        f"runs of about {longer:.0f} s would reach it"
    )


def format_sensitivity(table: dict[str, Any]) -> list[str]:
    """The table for people: one block per band floor."""
    lines = [
        f"sensitivity: history of {len(table['history_mbps'])} clean runs, run-to-run sd "
        f"{table['clean_sd_pct']:.3f} %, {table['seconds_per_run']:.1f} s per run (one context)"
        if table["clean_sd_pct"] is not None and table["seconds_per_run"] is not None
        else "sensitivity: too few runs to judge"
    ]
    for policy in table["policies"]:
        band = f"{policy['band_pct']:.2f} %" if policy["band_pct"] is not None else "n/a"
        target = "target met" if policy["met"] else "target NOT met"
        default = " (the default)" if policy["band_floor_pct"] == BAND_FLOORS[0] else ""
        lines.append(f"  band floor {policy['band_floor_pct']:g} %{default}: band {band}; {target}")
        for row in policy["rows"]:
            what = (
                "false alarms (clean)"
                if row["level_pct"] == 0
                else f"detected at {row['level_pct']:g} % slower"
            )
            change = f"{row['median_change_pct']:+.2f} %" if row["median_change_pct"] is not None else "n/a"
            took = row.get("median_seconds")
            lines.append(
                f"    {what:28} {row['flagged']:3d} of {row['runs']:3d} ({100 * row['rate']:5.1f} %), "
                f"median change {change}" + (f", {took:.1f} s per run" if took is not None else "")
            )
        if policy.get("limited_by"):
            lines.append(f"    limited by: {policy['limited_by']}")
    return lines
