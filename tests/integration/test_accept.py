"""A regression stays red until someone accepts it (issue 32's acceptance scenario).

Six short nights of the shipped Ethernet suite (half duplex, stock profile, both directions)
on the namespace lab: clean ones until the store can see the plant (three or more), then three
with every cable 10 % slower.  The first two
degraded nights fail against the clean baseline (the second says since the first, though the
first's degraded level was measured twice and is in the store); once the first's change is
accepted, the third is within its baseline; undoing the accept makes the context a regression
again.  The floor is 500 Mbit/s so that every failure comes from the baseline alone.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_pinet.cli.report import last_night
from pytest_pinet.exit_codes import Exit
from pytest_pinet.model.fingerprint import NOTHING_CHANGED
from pytest_pinet.virtlab import cable_faults
from pytest_pinet.virtlab.topology import LabSpec

from .conftest import own_lab

SELECTION = "half_duplex and stock"  # two contexts: board->peer and peer->board
PLANT = 10.0  # % slower cables on the degraded nights


@pytest.fixture
def lab32(root_required, tmp_path, monkeypatch):
    with own_lab(LabSpec(name="pinet32", state_root=tmp_path / "state"), monkeypatch) as spec:
        yield spec


def _db(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'store.sqlite'}"


def _night(tmp_path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "--pyargs",
            "pytest_pinet.suite.test_ethernet",
            "-k",
            SELECTION,
            "-p",
            "no:cacheprovider",
            "--rootdir",
            str(tmp_path),
            "--pinet-virtual-lab",
            "pinet32",
            "--pinet-keep-lab",
            "--pinet-results",
            str(tmp_path / "results"),
            "--pinet-db",
            _db(tmp_path),
            # A band of at least 5 %: after the accept, the degraded level's two nights agreed
            # to 0.1 ms of p90 under load (12.3 and 12.3 ms), and the fifth night's 12.6 ms was
            # a latency regression in a trial.  A 10 % slower cable still leaves it by twice.
            "--pinet-baseline-band",
            "5",
            "--pinet-duration",
            "2",
            "--pinet-omit",
            "1",
            "--pinet-thresholds",
            str(tmp_path / "thresholds.yaml"),
            "--pinet-profiles",
            str(tmp_path / "p.yaml"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )


def _pinet(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest_pinet.cli", *args], capture_output=True, text=True, timeout=60
    )


def _one_night_catches(tmp_path: Path) -> list[float | None]:
    """Per context, the drop (%) one more night would show as red, as the store's history
    tells it (`pinet trends --json -v`); None before a context has a baseline."""
    listed = _pinet("trends", "--json", "-v", "--db", _db(tmp_path))
    assert listed.returncode in (0, 1), listed.stdout + listed.stderr
    return [
        None if context["detection"] is None else float(context["detection"]["one_night_pct"])
        for context in json.loads(listed.stdout)["contexts"]
    ]


def _runs(tmp_path: Path) -> list[str]:
    return sorted(p.name for p in (tmp_path / "results").iterdir() if p.is_dir())


def test_a_regression_stays_red_until_accepted(lab32, tmp_path):
    (tmp_path / "thresholds.yaml").write_text(
        "rules:\n  - {id: floor, match: {scenario: '*'}, min_mbps: 500}\n"
    )
    (tmp_path / "p.yaml").write_text("profiles: {stock: {}}\n")
    # Clean nights until the store says one night can catch the plant in both contexts: the
    # band of two is a 99 % prediction band with one degree of freedom, about 55 times their
    # difference (940.0 and 938.4 Mbit/s gave +-90.7, so the 5 % slower cable's 894 was
    # "within" in a trial); a third night brings it to a few Mbit/s, unless this shared host
    # starved one of them (941.7, 941.6, 918.6 gave +-271 in CI, and the 10 % drop passed).
    for night in range(8):
        clean = _night(tmp_path)
        assert clean.returncode == 0, clean.stdout[-3000:]
        catches = _one_night_catches(tmp_path)
        if night >= 2 and len(catches) == 2 and all(c is not None and c < 0.8 * PLANT for c in catches):
            break
    assert len(catches) == 2 and all(c is not None and c < 0.8 * PLANT for c in catches), (
        f"eight clean nights cannot see {PLANT} % in both contexts: {catches}"
    )
    # 10 %: a baseline from three short nights on a busy machine can be wide (one context's
    # band was +-35.4 Mbit/s, 3.8 %, in a CI trial, and a 3 % slowdown stayed inside it; in
    # another one clean night read 933.95 against 941.1-941.5, the band grew to about +-48,
    # and a 5 % slower cable's 894.3 passed as within).  What this test proves is that a
    # regression stays red until accepted, not how small one is caught (pinet bench
    # measures that).
    cable_faults.degrade(lab32, PLANT)
    third = _night(tmp_path)
    assert third.returncode == Exit.REGRESSION, third.stdout[-3000:]
    assert third.stdout.count("regression against baseline (new tonight)") >= 2, third.stdout[-3000:]
    night3 = _runs(tmp_path)[-1]

    fourth = _night(tmp_path)
    assert fourth.returncode == Exit.REGRESSION, fourth.stdout[-3000:]
    since = f"regression since run {night3} (2 nights, first seen "
    assert fourth.stdout.count("regression against baseline (persisting)") >= 2, fourth.stdout[-3000:]
    assert since in fourth.stdout, fourth.stdout[-3000:]
    morning = last_night(tmp_path / "results", _db(tmp_path))
    assert len(morning.persisting) == 2 and not morning.new
    assert {r.since_run for r in morning.persisting} == {night3}
    for regressed in morning.persisting:
        assert -13 < regressed.change_pct < -7  # against the clean level, not last night's
        # Only the cables changed, which no host's facts show: the entry says so.
        assert regressed.changed is not None and regressed.changed.lines[-1].endswith(NOTHING_CHANGED), (
            regressed.line()
        )

    accepted = _pinet("accept", night3, "--why", "cables slowed on purpose", "--db", _db(tmp_path))
    assert accepted.returncode == 0, accepted.stdout + accepted.stderr
    assert f"accept #1: run {night3} (every context)" in accepted.stdout
    fifth = _night(tmp_path)
    assert fifth.returncode == 0, fifth.stdout[-3000:]  # the degraded level is the baseline now
    assert _pinet("regressions", "--db", _db(tmp_path)).returncode == 0

    undone = _pinet("accept", "--undo", "1", "--db", _db(tmp_path))
    assert undone.returncode == 0, undone.stdout + undone.stderr
    again = _pinet("regressions", "--db", _db(tmp_path))
    assert again.returncode == Exit.REGRESSION, again.stdout + again.stderr
    since3 = f"regression since run {night3} (3 nights, first seen "
    goodput = [line for line in again.stdout.splitlines() if since3 in line and " Mbit/s (" in line]
    assert len(goodput) == 2, again.stdout
    # A slower cable drains its queue slower: a p90 under load that rose with it (a p99 11.9 -> 12.2
    # ms in a CI trial with a 5 % slower one) is a latency regression of the same night,
    # listed in ms.
    latency = [
        line for line in again.stdout.splitlines() if since3 in line and " ms RTT p90 under load (+" in line
    ]
    assert len(goodput) + len(latency) == again.stdout.count(since3), again.stdout
