"""`pinet bench`: the figures the virtual lab and the plugin promise, measured in one run.

- start-up: `pinet lab up` until the first test could run: both hosts answer over pinned
  SSH and their facts are gathered (target <= 10 s);
- fidelity: 10-stream goodput of the emulated GbE link against the line-rate model, both
  directions (target within +-0.5 %);
- overhead: per test, its wall time (setup, call, teardown) minus the traffic itself, from a
  batch of real tests run by pytest through the plugin: snapshots, server start/stop,
  parsing, judging, recording to JSONL, the store and Allure (target <= 0.5 s median);
- adaptive duration: the same batch with the seeds' fixed method (``-t 65 -O 5``) and with
  adaptive duration; suite wall time ratio (target >= 4x) and whether the adaptive results
  fall within the fixed method's spread.  These batches use the measuring core directly
  (``TcpMeasurer`` with a recorder of their own): no pytest process, so the ratio compares
  the two methods and nothing else.

Medians and ranges, never single runs: the machines are shared and noisy.
"""

from __future__ import annotations

import json
import statistics
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from ..host.facts import gather_facts
from ..lab.inventory import Inventory, load_inventory
from ..virtlab import virtual_lab
from ..virtlab.topology import LabSpec
from .batches import Batch, by_direction, measure_batch, overhead_per_test, run_batch
from .fidelity import HIGH_PCT, LOW_PCT, Deviation, tcp_fidelity, udp_fidelity
from .progress import say
from .pytest_startup import measure_startup, startup_lines
from .recording import connected
from .sensitivity import (
    LEVELS,
    TARGET_DETECTION,
    TARGET_FALSE_ALARMS,
    TARGET_LEVEL,
    format_sensitivity,
    judge_trials,
    measure_trials,
)


@dataclass
class Figure:
    """One benchmark figure with its samples and its target."""

    name: str
    unit: str
    median: float
    low: float
    high: float
    samples: list[float]
    target: str
    met: bool | None


def _figure(name: str, unit: str, samples: list[float], target: str, met: bool | None) -> Figure:
    return Figure(name, unit, statistics.median(samples), min(samples), max(samples), samples, target, met)


@dataclass
class Bench:
    """What the figures of one bench share: its own lab (pinet5), its scratch directory, and
    what it found so far."""

    spec: LabSpec
    root: Path
    figures: list[Figure]
    details: dict[str, Any]
    not_measured: list[str]


def run_bench(
    startups: int = 3,
    fidelity_runs: int = 3,
    overhead_repeats: int = 3,
    duration: int = 20,
    adaptive_repeats: int = 2,
    fixed_duration: int = 65,
    sensitivity_runs: int = 10,
    sensitivity_history: int = 10,
    sensitivity_duration: int = 6,
    pytest_startups: int = 5,
) -> dict[str, Any]:
    """Measure every figure on a bench lab of its own (pinet5); return them as data."""
    root = Path(tempfile.mkdtemp(prefix="pinet-bench-"))
    bench = Bench(LabSpec(name="pinet5", state_root=root / "state"), root, [], {}, [])
    try:
        if pytest_startups > 0:
            pytest_startup_figures(bench, pytest_startups)
        startup_figure(bench, startups)
        inventory = load_inventory(bench.spec.env_file)
        with connected(inventory) as hosts:
            if fidelity_runs > 0:
                fidelity_figures(bench, inventory, hosts, fidelity_runs, duration)
            if sensitivity_runs > 0:
                sensitivity_figures(
                    bench, inventory, hosts, sensitivity_runs, sensitivity_history, sensitivity_duration
                )
        overhead_figure(bench, overhead_repeats)
        if adaptive_repeats > 0:
            adaptive_duration_figures(bench, adaptive_repeats, fixed_duration)
    finally:
        virtual_lab.down(bench.spec)
    return {
        "figures": [asdict(f) for f in bench.figures],
        "details": bench.details,
        "not_measured": bench.not_measured,
        "duration_s": duration,
        "fixed_duration_s": fixed_duration,
    }


def startup_figure(bench: Bench, startups: int) -> None:
    """`pinet lab up` until the first test could run: every host answers over pinned SSH and
    its facts are gathered."""
    boot = []
    for number in range(startups):
        say(f"start-up {number + 1} of {startups}: lab up, SSH, facts")
        virtual_lab.down(bench.spec)
        started = time.monotonic()
        inventory = load_inventory(virtual_lab.up(bench.spec))
        with connected(inventory) as hosts:
            for host in hosts.values():
                gather_facts(host, ["eth0"])
        boot.append(time.monotonic() - started)
    bench.figures.append(
        _figure("start-up (lab up to first test ready)", "s", boot, "<= 10 s", statistics.median(boot) <= 10)
    )


def pytest_startup_figures(bench: Bench, runs: int) -> None:
    """What pinet installed costs a pytest start that does not use it (pytest_startup.py); no
    lab needed."""
    cost = measure_startup(runs, say)
    bench.details["pytest start-up ms (median)"] = {
        f"{plugins}{' -n 2' if workers else ''}": round(cost.median_ms(plugins, workers), 1)
        for plugins, workers in cost.seconds
    }
    bench.details["pytest start-up ratio to bare"] = {
        f"{plugins}{' -n 2' if workers else ''}": round(cost.ratio(plugins, workers), 3)
        for plugins, workers in cost.seconds
        if plugins != "bare"
    }
    bench.figures += [
        _figure(name, "ms", samples, target, met) for name, samples, target, met in startup_lines(cost)
    ]


def fidelity_figures(
    bench: Bench, inventory: Inventory, hosts: dict[str, Any], runs: int, duration: int
) -> None:
    """The emulated cable against the line-rate model: TCP both ways (timestamps on and off),
    UDP full-size frames, and minimum-size frames (reported: the generator's CPU bounds them)."""
    for found in tcp_fidelity(inventory, hosts, runs, duration, say, bench.not_measured):
        bench.figures += _fidelity_figure(found)
    udp, small = udp_fidelity(inventory, hosts, bench.root, runs, say, bench.not_measured)
    if udp is not None:
        bench.figures += _fidelity_figure(udp)
    if small:
        bench.details["minimum-size frames"] = small
        bench.figures.append(
            _figure(
                f"UDP 64-byte frames/s vs {small['limit_fps']:,.0f} (CPU-bound: generator "
                f"{small['generator_cpu_pct']:.0f} % of a core)",
                "",
                [small["received_fps"]],
                "reported",
                None,
            )
        )


def sensitivity_figures(
    bench: Bench, inventory: Inventory, hosts: dict[str, Any], runs: int, history_runs: int, duration: int
) -> None:
    """Clean runs and planted degradations judged against a clean history: how often the
    default policy catches a 1 % drop, and how often it cries wolf on a clean run."""
    counts = [(0.0, history_runs), (0.0, runs)] + [(level, runs) for level in LEVELS]
    trials = measure_trials(
        bench.spec, inventory, hosts, bench.root, counts, duration, say, bench.not_measured
    )
    history, judged = trials[:history_runs], trials[history_runs:]
    if len(history) < 2 or not judged:
        bench.not_measured.append("sensitivity: too few runs measured to judge")
        return
    table = judge_trials(history, judged)
    bench.details["sensitivity"] = table
    best = next((p for p in table["policies"] if p["met"]), None)
    default = table["policies"][0]
    detected, false_alarms = _rate(default, TARGET_LEVEL), _rate(default, 0.0)
    bench.figures.append(
        _figure(
            f"1 % drop detected (band floor {default['band_floor_pct']:g} %, the default)",
            "",
            [detected],
            ">= 0.95",
            detected >= TARGET_DETECTION,
        )
    )
    bench.figures.append(
        _figure(
            "false alarms on clean runs (same policy)",
            "",
            [false_alarms],
            "<= 0.05",
            false_alarms <= TARGET_FALSE_ALARMS,
        )
    )
    if best is not None and best is not default:
        say(f"sensitivity: target met with a band floor of {best['band_floor_pct']:g} %")


def overhead_figure(bench: Bench, repeats: int) -> None:
    """Per test, its wall time minus its traffic, from short tests run by pytest through the plugin."""
    say(f"overhead batch: {2 * repeats} short tests through pytest")
    short = run_batch(
        bench.spec.env_file,
        bench.root,
        "overhead",
        repeats,
        ["--pinet-adaptive", "off", "--pinet-duration", "2", "--pinet-omit", "0"],
    )
    overheads = overhead_per_test(short)
    bench.details["overhead failed tests"] = short.failed
    if not overheads:
        bench.not_measured.append(
            f"overhead: the batch measured nothing (pytest exit {short.exit_code}); see {bench.root}"
        )
        return
    bench.figures.append(
        _figure(
            "overhead per test (outside traffic)",
            "s",
            overheads,
            "<= 0.5 s",
            statistics.median(overheads) <= 0.5,
        )
    )


def adaptive_duration_figures(bench: Bench, repeats: int, fixed_duration: int) -> None:
    """The seeds' fixed method against adaptive duration, both with the measuring core."""
    fixed = measure_batch(bench.spec.env_file, bench.root, "fixed", repeats, fixed_duration, False)
    adaptive = measure_batch(bench.spec.env_file, bench.root, "adaptive", repeats, fixed_duration, True)
    bench.figures += adaptive_figures(fixed, adaptive, bench.details)
    for batch_name, batch in (("fixed", fixed), ("adaptive", adaptive)):
        bench.details[f"{batch_name} failed tests"] = batch.failed


def _fidelity_figure(found: Deviation) -> list[Figure]:
    if not found.deviations_pct:
        return []
    name = f"fidelity: {found.name} vs {found.limit:,.1f} {found.unit}"
    return [_figure(name, "%", found.deviations_pct, f"{LOW_PCT:+g}..{HIGH_PCT:+g} %", found.met)]


def _rate(policy: dict[str, Any], level: float) -> float:
    """The flagged share at ``level`` under ``policy`` (nan when that level was not run)."""
    row = next((r for r in policy["rows"] if r["level_pct"] == level), None)
    return float(row["rate"]) if row else float("nan")


def adaptive_figures(fixed: Batch, adaptive: Batch, details: dict[str, Any]) -> list[Figure]:
    """Speed-up of the adaptive suite, and its results against the fixed method's spread.

    "Within the spread": per direction, the adaptive median lies inside the fixed runs'
    range widened by the adaptive rule's own precision (0.5 % of the fixed median), because
    two 65 s runs of a quiet link can agree more closely than any shorter method resolves.
    """
    figures = [
        _figure(
            f"adaptive speed-up (fixed suite {fixed.wall_s:.0f} s / adaptive {adaptive.wall_s:.0f} s)",
            "x",
            [fixed.wall_s / adaptive.wall_s],
            ">= 4x",
            fixed.wall_s / adaptive.wall_s >= 4,
        )
    ]
    fixed_goodput, adaptive_goodput = by_direction(fixed.rows), by_direction(adaptive.rows)
    offsets = []
    inside = True
    for direction, values in sorted(fixed_goodput.items()):
        theirs = adaptive_goodput.get(direction, [])
        if not theirs:
            inside = False
            continue
        centre = statistics.median(values)
        tolerance = 0.005 * centre
        median = statistics.median(theirs)
        inside = inside and min(values) - tolerance <= median <= max(values) + tolerance
        offsets.append(100.0 * (median - centre) / centre)
        details[direction] = {
            "fixed_mbps": values,
            "adaptive_mbps": theirs,
            "adaptive_ended_by": [
                r.get("ended_by") for r in adaptive.rows if r["context"]["direction"] == direction
            ],
            "adaptive_measured_s": [
                r.get("measured_s") for r in adaptive.rows if r["context"]["direction"] == direction
            ],
        }
    if offsets:
        figures.append(
            _figure("adaptive median vs fixed median", "%", offsets, "within fixed spread", inside)
        )
    return figures


def format_table(data: dict[str, Any]) -> str:
    """The figures as a table for people."""
    lines = [f"{'figure':56} {'median':>9} {'range':>19} {'target':>20}  met"]
    for f in data["figures"]:
        lines.append(
            f"{f['name'][:56]:56} {f['median']:8.3f}{f['unit']:1} {f['low']:8.3f}..{f['high']:8.3f} "
            f"{f['target']:>20}  {'-' if f['met'] is None else 'yes' if f['met'] else 'NO'}"
        )
    if "sensitivity" in data.get("details", {}):
        lines += format_sensitivity(data["details"]["sensitivity"])
    for direction, detail in sorted(data.get("details", {}).items()):
        if direction in ("sensitivity", "minimum-size frames", "noise"):
            continue
        if isinstance(detail, list):
            lines += [f"{direction}: {item}" for item in detail]
            continue
        if not isinstance(detail, dict) or "adaptive_measured_s" not in detail:
            # Any other detail (start-up figures, ...): its keys and values as they are.
            shown = ", ".join(f"{k} {v}" for k, v in detail.items()) if isinstance(detail, dict) else detail
            lines.append(f"{direction}: {shown}")
            continue
        seconds, ended = detail["adaptive_measured_s"], detail["adaptive_ended_by"]
        lines.append(
            f"{direction}: fixed {', '.join(f'{v:.1f}' for v in detail['fixed_mbps'])} Mbit/s; adaptive "
            f"{', '.join(f'{v:.1f}' for v in detail['adaptive_mbps'])} Mbit/s "
            f"({', '.join(f'{s:.0f} s {e}' for s, e in zip(seconds, ended, strict=False))})"
        )
    lines += [f"not measured: {item}" for item in data["not_measured"]]
    return "\n".join(lines)


def to_json(data: dict[str, Any]) -> str:
    """The figures as JSON for machines."""
    return json.dumps(data, indent=2)
