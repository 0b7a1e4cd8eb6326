"""The lab a run measures is the lab the user named, however named.

A labgrid user names the lab with ``LG_ENV``.  Here that names a copy of a namespace lab's env
file under another name and another directory (``pinet14``, built for this test), and the
suite runs once from this clone (the repository's conftest.py active) and once from another
directory with ``--pyargs``: both runs must say where the lab came from and measure that lab,
never a virtual lab built on demand.  One short test per run (two directions, 3 s each).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_pinet.virtlab import virtual_lab
from pytest_pinet.virtlab.topology import LabSpec

REPO = Path(__file__).resolve().parents[2]
LAB = "pinet14"


@pytest.fixture
def named_lab(root_required, tmp_path, monkeypatch):
    """A namespace lab of this test's own, its env file copied to where a user keeps theirs."""
    monkeypatch.setenv("PINET_STATE_DIR", str(tmp_path / "state"))
    spec = LabSpec(name=LAB, state_root=tmp_path / "state")
    virtual_lab.down(spec)
    virtual_lab.up(spec)
    mine = tmp_path / "my-lab" / "bench-lab.yaml"
    mine.parent.mkdir()
    mine.write_text(spec.env_file.read_text())
    yield mine
    virtual_lab.down(spec)


def _suite_run(
    cwd: Path, target: list[str], env_file: Path, results: Path
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PINET_", "PYTEST_ADDOPTS"))}
    env["LG_ENV"] = str(env_file)
    env["PINET_STATE_DIR"] = os.environ["PINET_STATE_DIR"]
    # A floor of its own: the test proves which lab is measured, not the shipped 940 Mbit/s
    # floor, which a 3-second run on a busy machine can miss by a fraction of a percent.
    floor = results.parent / "floor.yaml"
    floor.write_text(
        "version: 1\nrules:\n  - {id: measured, match: {scenario: ethernet}, min_mbps: 500}\n",
        encoding="utf-8",
    )
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            *target,
            "-k",
            "half_duplex and stock",
            "-p",
            "no:cacheprovider",
            "--pinet-duration",
            "3",
            "--pinet-omit",
            "1",
            "--pinet-remeasure",
            "0",
            "--pinet-results",
            str(results),
            "--pinet-db",
            f"sqlite:///{results.parent / 'store.sqlite'}",
            "--pinet-thresholds",
            str(floor),
        ],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


@pytest.mark.parametrize(
    ("where", "target"),
    [
        ("clone", ["pytest_pinet/suite/test_ethernet.py"]),
        ("elsewhere", ["--pyargs", "pytest_pinet.suite.test_ethernet"]),
    ],
)
def test_lg_env_names_the_lab_the_suite_measures(named_lab, tmp_path, where, target):
    cwd = REPO if where == "clone" else tmp_path / "elsewhere"
    cwd.mkdir(exist_ok=True)
    results = tmp_path / "results"
    done = _suite_run(cwd, target, named_lab, results)
    out = done.stdout + done.stderr
    assert f"pinet: lab {named_lab} (from LG_ENV)" in out, out[-3000:]
    assert "pinet: lab virtual" not in out
    rows = [
        json.loads(line)
        for path in results.glob("*/measurements.jsonl")
        for line in path.read_text().splitlines()
    ]
    assert len(rows) == 2, out[-3000:]  # both directions measured, on the named lab
    assert {row["context"]["lab"] for row in rows} == {LAB}, rows
    assert {row["context"]["board"] for row in rows} == {"pi"}
    assert done.returncode == 0, out[-3000:]
