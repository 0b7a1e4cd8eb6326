"""`pinet bench` measures its fixed and adaptive batches with the measuring core, no pytest."""

from __future__ import annotations

import subprocess
import sys

from pytest_pinet.bench.batches import measure_batch
from pytest_pinet.virtlab import virtual_lab


def test_a_batch_measures_both_directions_through_the_core(fresh_lab, tmp_path):
    env_file = virtual_lab.up(fresh_lab)
    batch = measure_batch(env_file, tmp_path, "fixed", repeats=1, duration=2, adaptive=False, omit=0)
    directions = sorted(row["context"]["direction"] for row in batch.rows)
    assert directions == ["board->peer", "peer->board"]
    for row in batch.rows:
        # real traffic over a GbE-shaped link: never above the wire's raw bit rate (a 2 s run
        # may pass the 941.5 Mbit/s goodput limit by the shaper's 1 MiB burst and timing)
        assert 500 < row["goodput_mbps"] < 1000, row
        assert row["test_id"] == "bench::fixed"
    assert batch.exit_code == (1 if batch.failed else 0)
    assert (tmp_path / "fixed" / "fixed" / "measurements.jsonl").exists()  # kept, as every result is


def test_the_bench_module_does_not_load_pytest():
    code = "import sys, pytest_pinet.bench.all_figures, pytest_pinet.bench.batches; sys.exit(1 if 'pytest' in sys.modules else 0)"
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0
