"""A floor inside the noise on the namespace lab: decided by precision, never by a fast wire.

The emulated cable carries at most the line rate (941.5 Mbit/s of TCP payload with
timestamps).  Three floors: one well under it (930: the interval clears it, a pass), one at
what the link measures (940.8: inside the interval of every run seen, 940.5 +- 0.07 % to
941.4 +- 0.14 %; 941.4 was above a CI trial's 940.5 +- 0.07 %, a fair failure), undecided,
with the interval in the reason, and one above the line rate (945: a failure, because no
Ethernet cable carries it).
"""

from __future__ import annotations

import json
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

from pytest_pinet.judge.linerate import tcp_goodput_limit
from pytest_pinet.virtlab.topology import LabSpec

from .conftest import own_lab

SUITE = """
import pytest


@pytest.mark.parametrize("floor", ["930", "940.8", "945"], ids=["clear", "inside", "above"])
def test_goodput(pinet_measure_tcp, pinet_judge_goodput, floor):
    pinet_judge_goodput(lambda: [pinet_measure_tcp.half_duplex("board->peer")])
"""


@pytest.fixture
def lab12(root_required, tmp_path, monkeypatch):
    with own_lab(LabSpec(name="pinet12", state_root=tmp_path / "state"), monkeypatch) as spec:
        yield spec


def test_a_floor_inside_the_noise_ends_undecided_with_its_interval(lab12, tmp_path):
    (tmp_path / "test_suite.py").write_text(SUITE)
    junit = tmp_path / "junit.xml"
    outcomes = {}
    for floor, case_id in (("930", "clear"), ("940.8", "inside"), ("945", "above")):
        # One floor per run: the only rule the case's context matches.
        thresholds = tmp_path / f"thresholds-{floor}.yaml"
        rule = {"id": f"floor-{floor}", "match": {"scenario": "ethernet"}, "min_mbps": float(floor)}
        thresholds.write_text(json.dumps({"rules": [rule]}))
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "pytest",
                str(tmp_path / "test_suite.py"),
                "-k",
                case_id,
                "-p",
                "no:cacheprovider",
                "--rootdir",
                str(tmp_path),
                "--pinet-virtual-lab",
                lab12.name,
                "--pinet-keep-lab",
                "--pinet-results",
                str(tmp_path / "results"),
                "--pinet-db",
                f"sqlite:///{tmp_path / 'store.sqlite'}",
                "--pinet-duration",
                "8",  # adaptive: at least 5 measured seconds, at most 8
                "--pinet-omit",
                "1",
                "--pinet-remeasure",
                "0",
                "--pinet-thresholds",
                str(thresholds),
                f"--junitxml={junit}",
            ],
            capture_output=True,
            text=True,
            timeout=300,
        )
        cases = list(ET.parse(junit).getroot().iter("testcase"))
        assert len(cases) == 1, done.stdout[-3000:] + done.stderr[-2000:]
        (case,) = cases
        outcomes[floor] = (done, case)

    limit = tcp_goodput_limit(1000, 1500)
    rows = []
    for path in (tmp_path / "results").glob("*/measurements.jsonl"):
        rows += [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    assert len(rows) == 3
    for row in rows:
        assert row["goodput_mbps"] <= limit * 1.0005, row["goodput_mbps"]  # never faster than the wire
        assert row["detail"]["precision_pct"] is not None  # the receiver measured its interval

    clear, _ = outcomes["930"]
    assert clear.returncode == 0 and "1 passed" in clear.stdout, clear.stdout[-3000:]

    inside, case = outcomes["940.8"]
    assert inside.returncode == 0 and "1 undecided" in inside.stdout, inside.stdout[-3000:]
    skipped = case.find("skipped")
    assert skipped is not None
    reason = skipped.get("message", "")
    assert "threshold 940.8 inside " in reason and ": undecided" in reason, reason
    low, high = reason.split(" inside ", 1)[1].split(" ", 1)[0].split("-")
    assert float(low) <= 940.8 <= float(high)
    assert "pinet: 1 undecided" in inside.stdout

    above, _ = outcomes["945"]
    assert above.returncode == 1 and "below threshold" in above.stdout, above.stdout[-3000:]
