"""Runs on a virtual lab, the last on a degraded link: regression verdict and trend.

This is issue 9's acceptance scenario in miniature (one test, short runs): the store keeps
every run, the degraded run's failure is categorized as a regression against the baseline, and
`pinet trends` names the run.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_pinet.cli.report import last_night
from pytest_pinet.record.allure_report import build_report
from pytest_pinet.virtlab import cable_faults
from pytest_pinet.virtlab.topology import LabSpec

from ..report_browser import chromium, result_id_of, serve, shoot
from .conftest import own_lab

ROOT = Path(__file__).resolve().parents[2]
# Changes of 3 % or more count: the planted 10 % step, never a clean night 1 % off its peers.
TRENDS = ("--min-change", "3")
ABOUT_TEN = r"-(?:8|9|10|11|12)\.\d"  # the planted drop, as a percentage with one decimal

SUITE = """
def test_goodput(pinet_measure_tcp, pinet_judge_goodput):
    pinet_judge_goodput(lambda: [pinet_measure_tcp.half_duplex("board->peer")])
"""


@pytest.fixture
def lab8(root_required, tmp_path, monkeypatch):
    with own_lab(LabSpec(name="pinet8", state_root=tmp_path / "state"), monkeypatch) as spec:
        yield spec


def _db(tmp_path):
    return f"sqlite:///{tmp_path / 'store.sqlite'}"


def _pinet(*args):
    return subprocess.run(
        [sys.executable, "-m", "pytest_pinet.cli", *args], capture_output=True, text=True, timeout=60
    )


def _pytest(tmp_path, *extra):
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            str(tmp_path / "test_suite.py"),
            "-p",
            "no:cacheprovider",
            "--rootdir",
            str(tmp_path),
            "--pinet-virtual-lab",
            "pinet8",
            "--pinet-keep-lab",
            "--pinet-results",
            str(tmp_path / "results"),
            "--pinet-db",
            _db(tmp_path),
            "--pinet-duration",
            "6",
            "--pinet-omit",
            "1",
            "--pinet-remeasure",
            "0",
            "--alluredir",
            str(tmp_path / "allure"),
            "--clean-alluredir",
            "--pinet-thresholds",
            str(tmp_path / "thresholds.yaml"),
            "--pinet-profiles",
            str(tmp_path / "p.yaml"),
            *extra,
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )


def _report(tmp_path):
    """Build the night's report as ``pinet report`` does: history beside the store."""
    morning = last_night(tmp_path / "results", _db(tmp_path))
    index = build_report(
        ROOT, tmp_path / "allure", tmp_path / "report", tmp_path / "history.jsonl", morning=morning
    )
    return index.parent


def test_clean_runs_then_a_degraded_one(lab8, tmp_path):
    (tmp_path / "test_suite.py").write_text(SUITE)
    # A floor the degraded link still meets: the failure must come from the baseline alone.
    (tmp_path / "thresholds.yaml").write_text(
        "rules:\n  - {id: floor, match: {scenario: '*'}, min_mbps: 500}\n"
    )
    (tmp_path / "p.yaml").write_text("profiles: {stock: {}}\n")
    # Three clean nights: with two, the band is t(1) x s x 1.22 = 78 s, so two runs 0.4 Mbit/s
    # apart on a busy host would hide a 3 % drop (the likely cause of one CI failure of this
    # test, whose output was not kept); three give 11.5 s.  The plant is 10 %, as in
    # test_accept: a clean night 0.45 % low (CI has measured single runs at 936 and 934
    # against the lab's 941.4) widens three nights' band to about 30 Mbit/s, which hid a 3 %
    # plant; 10 % stays outside it unless a clean night is about 1.5 % low.
    for _ in range(3):
        ok = _pytest(tmp_path)
        assert ok.returncode == 0, ok.stdout[-3000:]
        _report(tmp_path)  # each night's report, as a nightly builds it: the metrics keep history
    # The same night someone changed the board's offloads by hand (its receive checksums,
    # which a bulk sender hardly uses): the red night names that change beside the drop.
    by_hand = ["ip", "netns", "exec", lab8.netns("pi"), "ethtool", "-K", "eth0", "rx", "off"]
    subprocess.run(by_hand, check=True, capture_output=True)
    cable_faults.degrade(lab8, 10.0)
    bad = _pytest(tmp_path)
    assert bad.returncode == 1, bad.stdout[-3000:]
    report = _report(tmp_path)
    assert "regression against baseline" in bad.stdout
    offload = "board eth0 offloads rx-checksum: on -> off"
    assert "what changed: since run " in bad.stdout and offload in bad.stdout, bad.stdout[-3000:]
    listed = _pinet("regressions", "--db", _db(tmp_path))
    assert "what changed: since run " in listed.stdout and offload in listed.stdout, listed.stdout
    trends = _pinet("trends", *TRENDS, "--db", _db(tmp_path))
    assert trends.returncode == 1, trends.stdout + trends.stderr
    assert f"    path: {offload}" in trends.stdout, trends.stdout  # beside the context keys it came with
    first, second, last_clean, degraded = sorted(
        p.name for p in (tmp_path / "results").iterdir() if p.is_dir()
    )
    # the degraded night, with a drop of about ten percent
    assert re.search(rf"change point: run {re.escape(degraded)}: .*\({ABOUT_TEN}\d %", trends.stdout), (
        trends.stdout
    )
    verdicts = [json.loads(r.read_text()).get("status") for r in (tmp_path / "allure").glob("*-result.json")]
    # the degraded night's results (each night starts afresh), beside the trend charts' result
    assert [v for v in verdicts if v != "unknown"] == ["failed"]

    # The morning after: the report leads with the regression and the drop of its context,
    # and the test's page carries the context's chart across the four nights.
    if chromium() is not None:
        failed = result_id_of(report, "Mbit/s · test_goodput")
        with serve(report) as base:
            overview = shoot(base, tmp_path / "overview.png", height=1400, expect="Largest drop 1")
            page = shoot(
                base + "#" + failed, tmp_path / "test.png", height=1400, expect="trend across nights"
            )
        assert "Variables" in overview and "Regressions 1 (1 new tonight, 0 persisting)" in overview
        drop = r"Largest drop 1 " + ABOUT_TEN + r" % pi / \S+ / ethernet / board->peer / half"
        assert re.search(drop, overview), overview[:2000]
        assert "regression against baseline" in page
        assert "trend across nights: pi / kernel" in page

    # the same as data, for a dashboard or a script
    data = json.loads(_pinet("trends", *TRENDS, "--db", _db(tmp_path), "--json").stdout)
    (context,) = data["contexts"]
    assert data["change_points"] == 1 and context["runs"] == 4
    assert context["change_points"][0]["run_id"] == degraded

    # the two nights side by side: the drop is beyond the link's noise, the healthy pair is not
    compared = _pinet("compare", last_clean, degraded, "--db", _db(tmp_path), "--json")
    assert compared.returncode == 1, compared.stdout + compared.stderr
    (delta,) = json.loads(compared.stdout)["contexts"]
    assert -12.5 < delta["delta_pct"] < -7.5 and delta["beyond_noise"]
    steady = _pinet("compare", first, second, "--db", _db(tmp_path))
    assert steady.returncode == 0 and "0 of 1 contexts changed beyond noise" in steady.stdout, steady.stdout

    # a known-bad night taken out of the baselines: no change point is left, the run is listed so
    excluded = _pinet(
        "runs", "exclude", degraded, "--why", "degraded cable on purpose", "--db", _db(tmp_path)
    )
    assert excluded.returncode == 0, excluded.stderr
    assert _pinet("trends", *TRENDS, "--db", _db(tmp_path)).returncode == 0
    listed = _pinet("runs", "--db", _db(tmp_path)).stdout
    assert "EXCLUDED: degraded cable on purpose" in listed and first in listed
    refused = _pinet("runs", "exclude", degraded, "--db", _db(tmp_path))
    assert refused.returncode != 0 and "say why" in refused.stdout + refused.stderr
