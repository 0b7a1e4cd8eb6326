"""A planted latency regression: a deeper queue on the emulated cables (issue 34).

Three short routing runs build the latency baseline of pfifo_fast at GbE (1000 packets,
~12 ms of queue); then every cable end gets a 4000-packet queue (``pinet lab degrade
--queue-packets 4000``): the p99 under load rises about fourfold and is flagged as a
regression, lower being better.  Then a 100-packet queue: the p99 falls, which is an
improvement and never a failure.  Goodput stays at line rate all along, so only the latency
verdict can fail the runs.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from pytest_pinet.virtlab import lab
from pytest_pinet.virtlab.topology import LabSpec

SUITE = """
import pytest

@pytest.mark.parametrize("board_qdisc", ["pfifo_fast"], indirect=True)
def test_latency(measure_routing, judge_goodput, judge_latency_under_load):
    (download,) = judge_goodput(lambda: [measure_routing.download()])
    judge_latency_under_load([download])
"""


@pytest.fixture
def lab7(root_required, tmp_path, monkeypatch):
    monkeypatch.setenv("PINET_STATE_DIR", str(tmp_path / "state"))
    spec = LabSpec(name="pinet7", state_root=tmp_path / "state")
    lab.down(spec)
    lab.up(spec)
    yield spec
    lab.down(spec)


def _pytest(tmp_path):
    return subprocess.run(
        [
            sys.executable, "-m", "pytest", str(tmp_path / "test_suite.py"), "-p", "no:cacheprovider",
            "--rootdir", str(tmp_path), "--pinet-virtual-lab", "pinet7", "--pinet-keep-lab",
            "--pinet-results", str(tmp_path / "results"), "--pinet-db", f"sqlite:///{tmp_path / 's.sqlite'}",
            "--pinet-duration", "3", "--pinet-omit", "1", "--pinet-adaptive", "off",
            "--pinet-remeasure", "0", "--pinet-thresholds", str(tmp_path / "thresholds.yaml"),
        ],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip


def _p99s(tmp_path):
    """The p99 RTT under load of every run so far, in order."""
    found = []
    for night in sorted(p for p in (tmp_path / "results").iterdir() if p.is_dir()):
        for line in (night / "measurements.jsonl").read_text().splitlines():
            found.append(json.loads(line)["detail"]["latency"]["load"]["p99_ms"])
    return found


def test_a_deeper_queue_is_a_latency_regression_a_shallower_one_is_not(lab7, tmp_path):
    (tmp_path / "test_suite.py").write_text(SUITE)
    # A goodput floor every run meets, and no latency ceiling: only the baseline can judge.
    (tmp_path / "thresholds.yaml").write_text("rules:\n  - {id: floor, match: {}, min_mbps: 100}\n")
    for _ in range(3):
        clean = _pytest(tmp_path)
        assert clean.returncode == 0, clean.stdout[-3000:]
    lab.deepen_queues(lab7, 4000)
    deeper = _pytest(tmp_path)
    assert deeper.returncode == 1, deeper.stdout[-3000:]
    assert "regression against baseline" in deeper.stdout and "lower is better" in deeper.stdout
    lab.deepen_queues(lab7, 100)
    shallower = _pytest(tmp_path)
    assert shallower.returncode == 0, shallower.stdout[-3000:]
    *clean_p99, deep_p99, shallow_p99 = _p99s(tmp_path)
    # queue physics: 4000 x 12.3 us = 49 ms against 1000 x 12.3 us = 12 ms; 100 packets: 1.2 ms
    assert deep_p99 > 2 * max(clean_p99) and shallow_p99 < min(clean_p99) / 2, _p99s(tmp_path)
