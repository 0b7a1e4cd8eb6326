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
import os
import statistics
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, NoReturn

import yaml

from ..errors import LabFault, Unsupported
from ..host.facts import gather_facts
from ..judge.thresholds import Thresholds, thresholds_from_data
from ..judge.verdict import judge_measurement
from ..lab.inventory import load_inventory
from ..measure import FactsCache, Site, TcpMeasurer
from ..model import Measurement
from ..record.results_dir import ResultsDir
from ..traffic.adaptive import SettleRule
from ..traffic.iperf3_runner import Iperf3Options
from ..virtlab import lab
from ..virtlab.topology import LabSpec
from .fidelity import HIGH_PCT, LOW_PCT, Deviation, tcp_fidelity, udp_fidelity
from .sensitivity import (
    LEVELS,
    TARGET_DETECTION,
    TARGET_FALSE_ALARMS,
    TARGET_LEVEL,
    format_sensitivity,
    judge_trials,
    measure_trials,
)

BENCH_SUITE = Path(__file__).parent / "suite" / "bench_tcp.py"
BENCH_THRESHOLDS = """\
version: 1
rules:
  - id: bench-gbe-half-duplex
    match: {duplex: half, link_speed_mbps: 1000, mtu: 1500}
    min_mbps: 940
    why: the line-rate limit with timestamps is 941.5; the emulated link must reach it
"""
BENCH_PROFILES = """\
version: 1
profiles:
  stock:
    why: the hosts as the lab made them
"""


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


def say(text: str) -> None:
    """Progress on stderr as the bench goes (a full bench takes about 12 minutes); the figures
    themselves go to stdout."""
    print(f"bench: {text}", file=sys.stderr, flush=True)


def _figure(name: str, unit: str, samples: list[float], target: str, met: bool | None) -> Figure:
    return Figure(name, unit, statistics.median(samples), min(samples), max(samples), samples, target, met)


@dataclass(frozen=True)
class Batch:
    """One batch of the bench: its wall time, per-test times (pytest batches) and measurements."""

    wall_s: float
    exit_code: int
    test_seconds: dict[str, float]
    rows: list[dict[str, Any]]
    failed: list[str]


def run_batch(env_file: Path, root: Path, name: str, repeats: int, options: list[str]) -> Batch:
    """Run the bench suite once with pytest (a child process, as a user would) and read back."""
    results = root / name
    thresholds = root / "thresholds.yaml"
    thresholds.write_text(BENCH_THRESHOLDS, encoding="utf-8")
    profiles = root / "profiles.yaml"
    profiles.write_text(BENCH_PROFILES, encoding="utf-8")
    junit = root / f"{name}.xml"
    argv = [
        sys.executable,
        "-m",
        "pytest",
        str(BENCH_SUITE),
        "-q",
        "-p",
        "no:cacheprovider",
        "--rootdir",
        str(root),
        "--pinet-lab",
        str(env_file),
        "--pinet-results",
        str(results),
        "--pinet-thresholds",
        str(thresholds),
        "--pinet-profiles",
        str(profiles),
        "--pinet-remeasure",
        "0",
        "--alluredir",
        str(root / f"{name}-allure"),
        "--junitxml",
        str(junit),
        *options,
    ]
    environment = {**os.environ, "PINET_BENCH_REPEATS": str(repeats)}
    started = time.monotonic()
    done = subprocess.run(argv, capture_output=True, text=True, env=environment, cwd=root, check=False)
    wall = time.monotonic() - started
    if not junit.exists() or done.returncode not in (0, 1):
        raise RuntimeError(f"bench batch {name} did not run: {done.stdout[-2000:]}{done.stderr[-2000:]}")
    tests = {}
    failed = []
    for case in ET.parse(junit).getroot().iter("testcase"):  # noqa: S314 - our own file
        name = f"{case.get('classname')}::{case.get('name')}"
        tests[name] = float(case.get("time") or 0)
        for problem in list(case.iter("failure")) + list(case.iter("error")):
            failed.append(f"{name}: {(problem.get('message') or '')[:200]}")
    rows = []
    for path in results.glob("*/measurements.jsonl"):
        rows += [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return Batch(wall, done.returncode, tests, rows, failed)


BENCH_STREAMS = 10  # the suite's default, as the seeds measured
BENCH_SETTLE = SettleRule(min_seconds=5, precision_pct=0.5)  # the suite's default adaptive rule


class BenchRecorder:
    """The :class:`~pytest_pinet.measure.Recorder` of a batch measured without pytest: every
    result goes to the batch's results file at once and is judged against the bench floor."""

    def __init__(self, results: ResultsDir, thresholds: Thresholds) -> None:
        self.results = results
        self.thresholds = thresholds
        self.failed: list[str] = []

    def record(self, measurement: Measurement) -> Measurement:
        self.results.record(measurement)
        verdict = judge_measurement(measurement, self.thresholds, [])
        if verdict.failed:
            self.failed.append(f"{measurement.test_id} {measurement.context.direction}: {verdict.reason}")
        return measurement

    def attach_chart(self, png: bytes | None, name: str) -> None:
        """A bench batch has no report to attach to."""

    def unsupported(self, exc: Unsupported, name: str, kind: str) -> NoReturn:
        raise exc


def measure_batch(
    env_file: Path, root: Path, name: str, repeats: int, duration: int, adaptive: bool, omit: int = 5
) -> Batch:
    """Half duplex both ways, ``repeats`` times, with the measuring core: the fixed method
    (``-t duration -O omit``) or adaptive duration under the suite's default rule."""
    inventory = load_inventory(env_file)
    hosts = {n: e.connect() for n, e in inventory.hosts.items()}
    results = ResultsDir(root / name, name)
    recorder = BenchRecorder(results, thresholds_from_data(yaml.safe_load(BENCH_THRESHOLDS), "bench floor"))
    site = Site(recorder, f"bench::{name}", inventory, FactsCache(inventory, hosts), hosts)
    options = Iperf3Options(streams=BENCH_STREAMS, duration=duration, omit=omit)
    measurer = TcpMeasurer(site, inventory.link("eth"), options, "stock", BENCH_SETTLE if adaptive else None)
    started = time.monotonic()
    try:
        for repeat in range(repeats):
            for direction in ("board->peer", "peer->board"):
                say(f"{name} batch: {direction}, {repeat + 1} of {repeats} (at most {duration + omit} s)")
                try:
                    measured = measurer.half_duplex(direction)
                    seconds = measured.finished - measured.started
                    say(f"  {measured.goodput_mbps:.1f} Mbit/s after {seconds:.0f} s")
                except LabFault as fault:  # kept as the batch's failure, never as a figure
                    recorder.failed.append(f"{direction}: lab fault: {fault}")
    finally:
        for host in hosts.values():
            host.close()
    wall = time.monotonic() - started
    rows = []
    if results.measurements_file.exists():
        text = results.measurements_file.read_text(encoding="utf-8")
        rows = [json.loads(line) for line in text.splitlines() if line.strip()]
    return Batch(wall, 1 if recorder.failed else 0, {}, rows, recorder.failed)


def overhead_per_test(batch: Batch) -> list[float]:
    """Each test's wall time minus the traffic time of the measurements it took."""
    traffic: dict[str, float] = {}
    for row in batch.rows:
        name = str(row["test_id"]).split("#", 1)[0].rsplit("::", 1)[-1]
        traffic[name] = traffic.get(name, 0.0) + float(row["finished"]) - float(row["started"])
    overheads = []
    for test, seconds in batch.test_seconds.items():
        name = test.rsplit("::", 1)[-1]
        if name in traffic:
            overheads.append(seconds - traffic[name])
    return overheads


def by_direction(rows: list[dict[str, Any]]) -> dict[str, list[float]]:
    """Goodputs of a batch per direction."""
    found: dict[str, list[float]] = {}
    for row in rows:
        found.setdefault(row["context"]["direction"], []).append(float(row["goodput_mbps"]))
    return found


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
) -> dict[str, Any]:
    """Measure every figure on a bench lab of its own (pinet5); return them as data."""
    root = Path(tempfile.mkdtemp(prefix="pinet-bench-"))
    spec = LabSpec(name="pinet5", state_root=root / "state")
    figures: list[Figure] = []
    details: dict[str, Any] = {}
    not_measured: list[str] = []
    try:
        boot = []
        for number in range(startups):
            say(f"start-up {number + 1} of {startups}: lab up, SSH, facts")
            lab.down(spec)
            started = time.monotonic()
            inventory = load_inventory(lab.up(spec))
            hosts = {n: e.connect() for n, e in inventory.hosts.items()}
            for host in hosts.values():
                gather_facts(host, ["eth0"])
            boot.append(time.monotonic() - started)
            for host in hosts.values():
                host.close()
        figures.append(
            _figure(
                "start-up (lab up to first test ready)", "s", boot, "<= 10 s", statistics.median(boot) <= 10
            )
        )

        inventory = load_inventory(spec.env_file)
        hosts = {n: e.connect() for n, e in inventory.hosts.items()}
        try:
            if fidelity_runs > 0:
                for found in tcp_fidelity(inventory, hosts, fidelity_runs, duration, say, not_measured):
                    figures += _fidelity_figure(found)
                udp, small = udp_fidelity(inventory, hosts, root, fidelity_runs, say, not_measured)
                if udp is not None:
                    figures += _fidelity_figure(udp)
                if small:
                    details["minimum-size frames"] = small
                    figures.append(
                        _figure(
                            f"UDP 64-byte frames/s vs {small['limit_fps']:,.0f} (CPU-bound: generator "
                            f"{small['generator_cpu_pct']:.0f} % of a core)",
                            "",
                            [small["received_fps"]],
                            "reported",
                            None,
                        )
                    )
            if sensitivity_runs > 0:
                counts = [(0.0, sensitivity_history), (0.0, sensitivity_runs)]
                counts += [(level, sensitivity_runs) for level in LEVELS]
                trials = measure_trials(
                    spec, inventory, hosts, root, counts, sensitivity_duration, say, not_measured
                )
                history, judged = trials[:sensitivity_history], trials[sensitivity_history:]
                if len(history) >= 2 and judged:
                    table = judge_trials(history, judged)
                    details["sensitivity"] = table
                    best = next((p for p in table["policies"] if p["met"]), None)
                    default = table["policies"][0]
                    figures.append(
                        _figure(
                            f"1 % drop detected (band floor {default['band_floor_pct']:g} %, the default)",
                            "",
                            [_rate(default, TARGET_LEVEL)],
                            ">= 0.95",
                            _rate(default, TARGET_LEVEL) >= TARGET_DETECTION,
                        )
                    )
                    figures.append(
                        _figure(
                            "false alarms on clean runs (same policy)",
                            "",
                            [_rate(default, 0.0)],
                            "<= 0.05",
                            _rate(default, 0.0) <= TARGET_FALSE_ALARMS,
                        )
                    )
                    if best is not None and best is not default:
                        say(f"sensitivity: target met with a band floor of {best['band_floor_pct']:g} %")
                else:
                    not_measured.append("sensitivity: too few runs measured to judge")
        finally:
            for host in hosts.values():
                host.close()

        say(f"overhead batch: {2 * overhead_repeats} short tests through pytest")
        short = run_batch(
            spec.env_file,
            root,
            "overhead",
            overhead_repeats,
            ["--pinet-adaptive", "off", "--pinet-duration", "2", "--pinet-omit", "0"],
        )
        overheads = overhead_per_test(short)
        details["overhead failed tests"] = short.failed
        if overheads:
            figures.append(
                _figure(
                    "overhead per test (outside traffic)",
                    "s",
                    overheads,
                    "<= 0.5 s",
                    statistics.median(overheads) <= 0.5,
                )
            )
        else:
            not_measured.append(
                f"overhead: the batch measured nothing (pytest exit {short.exit_code}); see {root}"
            )

        if adaptive_repeats > 0:
            fixed = measure_batch(spec.env_file, root, "fixed", adaptive_repeats, fixed_duration, False)
            adaptive = measure_batch(spec.env_file, root, "adaptive", adaptive_repeats, fixed_duration, True)
            figures += adaptive_figures(fixed, adaptive, details)
            for batch_name, batch in (("fixed", fixed), ("adaptive", adaptive)):
                details[f"{batch_name} failed tests"] = batch.failed
    finally:
        lab.down(spec)
    return {
        "figures": [asdict(f) for f in figures],
        "details": details,
        "not_measured": not_measured,
        "duration_s": duration,
        "fixed_duration_s": fixed_duration,
    }


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
        if direction in ("sensitivity", "minimum-size frames"):
            continue
        if isinstance(detail, list):
            lines += [f"{direction}: {item}" for item in detail]
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
