"""`pinet bench`: the figures the virtual lab and the plugin promise, measured in one run.

- start-up: `pinet lab up` until both hosts answer over pinned SSH (target <= 10 s);
- fidelity: 10-stream goodput of the emulated GbE link against the line-rate model, both
  directions (target within +-0.5 %);
- overhead: wall time of one measurement outside the traffic itself: snapshots, server
  start/stop, parsing, recording (target <= 0.5 s median).

Medians and ranges, never single runs: the machines are shared and noisy.  Adaptive
duration (issue 8's fourth figure) is not implemented yet and is reported as such.
"""

from __future__ import annotations

import json
import statistics
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from .judge.linerate import tcp_goodput_limit
from .lab.facts import gather_facts
from .lab.inventory import load_inventory
from .lab.remote import RemoteHost
from .measurement import Measurement, TrafficContext
from .record.results_dir import ResultsDir
from .record.store import ResultsStore
from .traffic.iperf3_runner import Iperf3Options, run_iperf3
from .traffic.observers import observe, take_snapshot
from .virtlab import lab
from .virtlab.topology import LabSpec


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


def run_bench(
    startups: int = 3, fidelity_runs: int = 3, overhead_runs: int = 5, duration: int = 20
) -> dict[str, Any]:
    """Measure every figure on a bench lab of its own (pinet5); return them as data."""
    root = Path(tempfile.mkdtemp(prefix="pinet-bench-"))
    spec = LabSpec(name="pinet5", state_root=root / "state")
    figures: list[Figure] = []
    try:
        lab.down(spec)
        boot = []
        for _ in range(startups):
            lab.down(spec)
            started = time.monotonic()
            inventory = load_inventory(lab.up(spec))
            hosts = {n: RemoteHost(e.endpoint) for n, e in inventory.hosts.items()}
            for host in hosts.values():
                host.check(["true"])
            boot.append(time.monotonic() - started)
            for host in hosts.values():
                host.close()
        figures.append(
            _figure(
                "start-up (lab up to hosts answering)", "s", boot, "<= 10 s", statistics.median(boot) <= 10
            )
        )

        inventory = load_inventory(spec.env_file)
        hosts = {n: RemoteHost(e.endpoint) for n, e in inventory.hosts.items()}
        link = inventory.link("eth")
        limit = tcp_goodput_limit(link.speed_mbps, link.mtu)
        goodputs = []
        for _ in range(fidelity_runs):
            for sender, receiver, address in (
                ("pi", "pc", link.peer_address),
                ("pc", "pi", link.board_address),
            ):
                options = Iperf3Options(
                    duration=duration, omit=2, congestion=inventory.hosts[sender].tcp_congestion
                )
                result = run_iperf3(hosts[sender], hosts[receiver], address, options).result
                goodputs.append(result.goodput_mbps or 0.0)
        deviation = [100.0 * (g - limit) / limit for g in goodputs]
        figures.append(
            _figure(
                f"fidelity (goodput vs {limit:.1f} Mbit/s limit)",
                "%",
                deviation,
                "within +-0.5 %",
                all(abs(d) <= 0.5 for d in deviation),
            )
        )

        results = ResultsDir(root / "results", "bench")
        store = ResultsStore(f"sqlite:///{root / 'results' / 'bench.sqlite'}")
        facts = {n: gather_facts(h, ["eth0"]) for n, h in hosts.items()}
        overheads = []
        for n in range(overhead_runs):
            started = time.monotonic()
            ends = ((hosts["pi"], "eth0"), (hosts["pc"], "eth0"))
            before = [take_snapshot(h, i) for h, i in ends]
            options = Iperf3Options(streams=10, duration=1, omit=0, congestion="cubic")
            measured = run_iperf3(hosts["pi"], hosts["pc"], link.peer_address, options)
            after = [take_snapshot(h, i) for h, i in ends]
            observations = [
                asdict(observe(h.name, i, a, b)) for (h, i), a, b in zip(ends, before, after, strict=True)
            ]
            context = TrafficContext(
                "pinet5",
                "bench",
                "pi",
                "pc",
                "eth",
                "builtin",
                "board->peer",
                "half",
                10,
                1,
                0,
                1000,
                1500,
                kernel=facts["pi"].kernel,
            )
            measurement = Measurement.from_iperf3(f"bench::{n}", context, measured, limit, {}, observations)
            results.record(measurement)
            store.add("bench", measurement, "bench")
            traffic = measured.finished - measured.started
            overheads.append(time.monotonic() - started - traffic)
        store.close()
        figures.append(
            _figure(
                "overhead per measurement (outside traffic)",
                "s",
                overheads,
                "<= 0.5 s",
                statistics.median(overheads) <= 0.5,
            )
        )
        for host in hosts.values():
            host.close()
    finally:
        lab.down(spec)
    return {
        "figures": [asdict(f) for f in figures],
        "not_measured": ["adaptive duration (issue 8): not implemented yet"],
        "duration_s": duration,
    }


def format_table(data: dict[str, Any]) -> str:
    """The figures as a table for people."""
    lines = [f"{'figure':48} {'median':>9} {'range':>19} {'target':>15}  met"]
    for f in data["figures"]:
        lines.append(
            f"{f['name'][:48]:48} {f['median']:8.3f}{f['unit']:1} {f['low']:8.3f}..{f['high']:8.3f} "
            f"{f['target']:>15}  {'yes' if f['met'] else 'NO'}"
        )
    lines += [f"not measured: {item}" for item in data["not_measured"]]
    return "\n".join(lines)


def to_json(data: dict[str, Any]) -> str:
    """The figures as JSON for machines."""
    return json.dumps(data, indent=2)
