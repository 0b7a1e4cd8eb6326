"""A planted latency regression: a deeper queue on the emulated cables (issue 34).

The lab's LAN cable is 10 Mbit/s, so a download queues in the board's pfifo_fast on that
side (at GbE on both sides the queue sits in the sending peer's shaper, and TCP's windows,
not the queue, bound it).  Two short routing runs with 100-packet queues (100 x 1.23 ms =
123 ms) build the latency baseline; then every cable end gets a 400-packet queue (``pinet
lab degrade --queue-packets 400``, 490 ms): the p99 under load rises and is flagged as a
regression, lower being better, in the store's latency column and in ``pinet regressions``
(until accepted).  Then a 30-packet queue (37 ms): the p99 falls, an improvement and never a
failure (the level is back: the pending regression ends).  Goodput stays at the cable's rate all along, so only the
latency verdict can fail the runs.  Its band is set to 5 %: a 4-s figure at this cable reads
9.35-9.42 Mbit/s between clean runs (loss recovery holds bytes back from the reader at the
window's end), while two baseline runs that happen to agree would leave only the default
0.5 % floor (0.05 Mbit/s), and a clean deeper night failed on goodput once in CI that way.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys

import pytest

from pytest_pinet.exit_codes import Exit
from pytest_pinet.virtlab import cable_faults, virtual_lab
from pytest_pinet.virtlab.topology import LabSpec, LinkSpec

SUITE = """
import pytest

@pytest.mark.parametrize("pinet_board_qdisc", ["pfifo_fast"], indirect=True)
def test_latency(pinet_measure_routing, pinet_judge_goodput, pinet_judge_latency):
    (download,) = pinet_judge_goodput(lambda: [pinet_measure_routing.download()])
    pinet_judge_latency([download])
"""


@pytest.fixture
def lab7(root_required, tmp_path, monkeypatch):
    monkeypatch.setenv("PINET_STATE_DIR", str(tmp_path / "state"))
    links = (
        LinkSpec("eth", "pi", "eth0", "pc", "eth0", speed_mbps=10),
        LinkSpec("usb", "pi", "eth1", "inet", "eth0", adapter="emulated-usb"),
    )
    spec = LabSpec(name="pinet72", links=links, state_root=tmp_path / "state")
    virtual_lab.down(spec)
    virtual_lab.up(spec)
    cable_faults.deepen_queues(spec, 100)
    yield spec
    virtual_lab.down(spec)


def _pytest(tmp_path):
    return subprocess.run(
        [
            sys.executable, "-m", "pytest", str(tmp_path / "test_suite.py"), "-p", "no:cacheprovider",
            "--rootdir", str(tmp_path), "--pinet-virtual-lab", "pinet72", "--pinet-keep-lab",
            "--pinet-results", str(tmp_path / "results"), "--pinet-db", f"sqlite:///{tmp_path / 's.sqlite'}",
            "--pinet-duration", "4", "--pinet-omit", "2", "--pinet-adaptive", "off",
            "--pinet-remeasure", "0", "--pinet-baseline-band", "5", "--pinet-thresholds", str(tmp_path / "thresholds.yaml"),
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
    (tmp_path / "thresholds.yaml").write_text(
        "rules:\n  - {id: floor, match: {scenario: '*'}, min_mbps: 5}\n"
    )
    for _ in range(2):  # the baseline's minimum history (its band is wide: t(1) x s x 1.22)
        clean = _pytest(tmp_path)
        assert clean.returncode == 0, clean.stdout[-3000:]
    cable_faults.deepen_queues(lab7, 400)
    deeper = _pytest(tmp_path)
    assert deeper.returncode == Exit.REGRESSION, deeper.stdout[-3000:]
    assert "regression against baseline" in deeper.stdout and "lower is better" in deeper.stdout
    # The verdict machinery has it: the store's latency column (goodput's verdict its own),
    # and `pinet regressions` lists it in ms until someone accepts it.
    with sqlite3.connect(tmp_path / "s.sqlite") as db:
        verdicts = db.execute("SELECT verdict, latency_verdict FROM measurements ORDER BY id").fetchall()
    assert verdicts == [("pass", "pass"), ("pass", "pass"), ("pass", "regression")], verdicts
    listed = subprocess.run(
        [sys.executable, "-m", "pytest_pinet.cli", "regressions", "--json", "--db", f"sqlite:///{tmp_path / 's.sqlite'}"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    (pending,) = json.loads(listed.stdout)["regressions"]
    assert pending["metric"] == "latency" and pending["regressed"] > 2 * pending["accepted"], pending
    cable_faults.deepen_queues(lab7, 30)
    shallower = _pytest(tmp_path)
    assert shallower.returncode == 0, shallower.stdout[-3000:]
    *clean_p99, deep_p99, shallow_p99 = _p99s(tmp_path)
    # queue physics at 10 Mbit/s: 400 x 1.23 ms = 490 ms, 100 x = 123 ms, 30 x = 37 ms
    assert deep_p99 > 2 * max(clean_p99) and shallow_p99 < min(clean_p99) / 1.5, _p99s(tmp_path)
