"""Write each measurement to disk the moment it exists.

A nightly run can die at any point (power cut, killed CI job, hung board).  Every
measurement is therefore appended to ``measurements.jsonl`` and fsynced before the test that
took it is judged, and the raw iperf3 outputs are kept beside it: what was measured survives
whatever happens next.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import time
from pathlib import Path
from typing import Any

from ..model import Measurement
from ..redaction import mask, mask_data

SAFE_NAME = re.compile(r"[^A-Za-z0-9_.-]+")


def new_run_id() -> str:
    """A sortable, unique-enough id for one pytest run (one per xdist controller)."""
    return time.strftime("%Y%m%dT%H%M%S", time.gmtime()) + f"-{os.getpid()}"


class ResultsDir:
    """``<root>/<run_id>/``: measurements.jsonl plus raw outputs per test."""

    def __init__(self, root: Path, run_id: str) -> None:
        self.root = root
        self.run_id = run_id
        self.path = root / run_id

    @property
    def measurements_file(self) -> Path:
        """The append-only JSON-lines file of this run."""
        return self.path / "measurements.jsonl"

    def record(self, measurement: Measurement) -> Path:
        """Append ``measurement`` durably; write its raw outputs; return the raw directory."""
        self.path.mkdir(parents=True, exist_ok=True)
        line = json.dumps(mask_data({"run_id": self.run_id, **measurement.summary()}), sort_keys=True)
        _append_durably(self.measurements_file, line)
        raw_dir = self.path / "raw" / SAFE_NAME.sub("_", measurement.test_id)[:150]
        raw_dir.mkdir(parents=True, exist_ok=True)
        for name, text in measurement.raw.items():
            (raw_dir / f"iperf3-{name}.json").write_text(mask(text), encoding="utf-8")
        return raw_dir

    def record_fact(self, kind: str, data: dict[str, Any]) -> None:
        """Append a fact learned during the run (an unsupported tunable, a lab fault)."""
        self.path.mkdir(parents=True, exist_ok=True)
        line = json.dumps(mask_data({"run_id": self.run_id, "kind": kind, **data}), sort_keys=True)
        _append_durably(self.path / "facts.jsonl", line)

    def load_facts(self) -> list[dict[str, Any]]:
        """Facts recorded so far in this run.  A last line cut short (a writer killed mid-line)
        is left out: the summaries of a killed run read what is whole."""
        path = self.path / "facts.jsonl"
        if not path.exists():
            return []
        lines = [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        facts = []
        for n, line in enumerate(lines):
            try:
                facts.append(json.loads(line))
            except ValueError:
                if n != len(lines) - 1:
                    raise
        return facts

    def load(self) -> list[dict[str, Any]]:
        """Every measurement recorded so far in this run (all xdist workers)."""
        if not self.measurements_file.exists():
            return []
        rows = []
        for line in self.measurements_file.read_text(encoding="utf-8").splitlines():
            if line.strip():
                rows.append(json.loads(line))
        return rows


def _append_durably(path: Path, line: str) -> None:
    """Append one line under an exclusive lock (xdist workers share the file) and fsync it."""
    with open(path, "a", encoding="utf-8") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            handle.write(line + "\n")
            handle.flush()
            os.fsync(handle.fileno())
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def newest_run(results: Path) -> str | None:
    """The id of the newest run under ``results`` that recorded a measurement (run ids sort by
    time); None when there is none."""
    if not results.is_dir():
        return None
    runs = sorted(p.name for p in results.iterdir() if p.is_dir() and (p / "measurements.jsonl").exists())
    return runs[-1] if runs else None
