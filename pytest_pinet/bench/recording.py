"""Where a bench batch measured without pytest puts its results: the measuring core's
:class:`~pytest_pinet.measure.Recorder`, writing every result to the batch's own results file at
once, and judging it against a bench floor when the batch has one."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import NoReturn

from ..errors import Unsupported
from ..host.remote import RemoteHost
from ..judge.threshold_rules import Thresholds
from ..judge.verdict import judge_measurement
from ..lab.inventory import Inventory
from ..measure import FactsCache, Site
from ..model import Measurement
from ..record.results_dir import ResultsDir


class BenchRecorder:
    """Keep every measurement in the batch's results file; with ``thresholds``, judge each and
    keep the failures (a bench figure is only as good as the runs behind it)."""

    def __init__(self, results: ResultsDir, thresholds: Thresholds | None = None) -> None:
        self.results = results
        self.thresholds = thresholds
        self.failed: list[str] = []

    def record(self, measurement: Measurement) -> Measurement:
        self.results.record(measurement)
        if self.thresholds is not None:
            verdict = judge_measurement(measurement, self.thresholds, [])
            if verdict.failed:
                self.failed.append(f"{measurement.test_id} {measurement.context.direction}: {verdict.reason}")
        return measurement

    def attach_chart(self, png: bytes | None, name: str) -> None:
        """A bench batch has no report to attach to."""

    def unsupported(self, exc: Unsupported, name: str, kind: str) -> NoReturn:
        raise exc


def bench_site(
    inventory: Inventory,
    hosts: dict[str, RemoteHost],
    root: Path,
    name: str,
    thresholds: Thresholds | None = None,
) -> Site:
    """Where a bench batch measures: the lab, and a results file of its own under ``root``."""
    recorder = BenchRecorder(ResultsDir(root / name, name), thresholds)
    return Site(recorder, f"bench::{name}", inventory, FactsCache(inventory, hosts), hosts)


@contextmanager
def connected(inventory: Inventory) -> Iterator[dict[str, RemoteHost]]:
    """Every host of the lab, connected, and closed again however the block ends (a fact that
    could not be gathered must not leave SSH sessions behind)."""
    hosts: dict[str, RemoteHost] = {}
    try:
        for name, entry in inventory.hosts.items():
            hosts[name] = entry.connect()
        yield hosts
    finally:
        for host in hosts.values():
            host.close()
