"""Batches of the bench: the bench suite run by pytest in a child process (as a user would), and
the same half-duplex measurements taken with the measuring core directly (no pytest), so the
overhead and adaptive-duration figures compare what they claim to compare."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import LabFault
from ..exit_codes import ANSWERS
from ..judge.threshold_rules import thresholds_from_data
from ..lab.inventory import load_inventory
from ..measure import TcpMeasurer
from ..traffic.adaptive import SettleRule
from ..traffic.iperf3_runner import Iperf3Options
from ..yaml_text import load_yaml
from .progress import say
from .recording import BenchRecorder, bench_site, connected

BENCH_SUITE = Path(__file__).parent / "suite" / "bench_tcp.py"
BENCH_THRESHOLDS = """\
version: 1
rules:
  - id: bench-gbe-half-duplex
    match: {scenario: ethernet, duplex: half, link_speed_mbps: 1000, mtu: 1500}
    min_mbps: 940
    why: the line-rate limit with timestamps is 941.5; the emulated link must reach it
"""
BENCH_PROFILES = """\
version: 1
profiles:
  stock:
    why: the hosts as the lab made them
"""


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
    if not junit.exists() or done.returncode not in ANSWERS:
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


def measure_batch(
    env_file: Path, root: Path, name: str, repeats: int, duration: int, adaptive: bool, omit: int = 5
) -> Batch:
    """Half duplex both ways, ``repeats`` times, with the measuring core: the fixed method
    (``-t duration -O omit``) or adaptive duration under the suite's default rule."""
    inventory = load_inventory(env_file)
    floor = thresholds_from_data(load_yaml(BENCH_THRESHOLDS), "bench floor")
    options = Iperf3Options(streams=BENCH_STREAMS, duration=duration, omit=omit)
    started = time.monotonic()
    with connected(inventory) as hosts:
        site = bench_site(inventory, hosts, root, name, floor)
        recorder = site.recorder
        assert isinstance(recorder, BenchRecorder)
        measurer = TcpMeasurer(
            site, inventory.link("eth"), options, "stock", BENCH_SETTLE if adaptive else None
        )
        for repeat in range(repeats):
            for direction in ("board->peer", "peer->board"):
                say(f"{name} batch: {direction}, {repeat + 1} of {repeats} (at most {duration + omit} s)")
                try:
                    measured = measurer.half_duplex(direction)
                    seconds = measured.finished - measured.started
                    say(f"  {measured.goodput_mbps:.1f} Mbit/s after {seconds:.0f} s")
                except LabFault as fault:  # kept as the batch's failure, never as a figure
                    recorder.failed.append(f"{direction}: lab fault: {fault}")
    wall = time.monotonic() - started
    rows = []
    if recorder.results.measurements_file.exists():
        text = recorder.results.measurements_file.read_text(encoding="utf-8")
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
