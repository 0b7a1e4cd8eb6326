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
from pytest_pinet.exit_codes import Exit
from pytest_pinet.record.allure_report import build_report
from pytest_pinet.virtlab import cable_faults
from pytest_pinet.virtlab.topology import LabSpec

from ..report_browser import chromium, result_id_of, serve, shoot
from .conftest import own_lab

ROOT = Path(__file__).resolve().parents[2]
# Changes of 10 % or more count: the planted step, never a clean night the host starved for a
# second or two (4-5 % low, which `pinet trends --min-change 3` lists as a change point).
TRENDS = ("--min-change", "10")
PLANT = 25.0  # percent slower cables on the degraded night
ABOUT_PLANT = r"-(?:23|24|25|26|27)\.\d"  # the planted drop, as a percentage with one decimal

SUITE = """
def test_goodput(pinet_measure_tcp, pinet_judge_goodput):
    pinet_judge_goodput(lambda: [pinet_measure_tcp.half_duplex("board->peer")])
"""


@pytest.fixture
def lab8(root_required, tmp_path, monkeypatch):
    with own_lab(LabSpec(name="pinet82", state_root=tmp_path / "state"), monkeypatch) as spec:
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
            "pinet82",
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


def _one_night_catches(tmp_path) -> float | None:
    """The drop (%) one more night of the context would show as red, as the store's history
    tells it; None before it has a baseline."""
    listed = _pinet("trends", "--json", "-v", "--db", _db(tmp_path))
    assert listed.returncode in (0, 1), listed.stdout + listed.stderr
    (context,) = json.loads(listed.stdout)["contexts"]
    return None if context["detection"] is None else float(context["detection"]["one_night_pct"])


def _at_line_rate(tmp_path) -> list[str]:
    """The nights whose figure is within 0.5 % of its path's limit (the cable's line rate)."""
    nights = []
    for night in sorted(p for p in (tmp_path / "results").iterdir() if p.is_dir()):
        (line,) = (night / "measurements.jsonl").read_text().splitlines()
        measured = json.loads(line)
        if measured["goodput_mbps"] >= 0.995 * measured["limit_mbps"]:
            nights.append(night.name)
    return nights


def test_clean_runs_then_a_degraded_one(lab8, tmp_path):
    (tmp_path / "test_suite.py").write_text(SUITE)
    # A floor the degraded link still meets: the failure must come from the baseline alone.
    (tmp_path / "thresholds.yaml").write_text(
        "rules:\n  - {id: floor, match: {scenario: '*'}, min_mbps: 500}\n"
    )
    (tmp_path / "p.yaml").write_text("profiles: {stock: {}}\n")
    # Clean nights until the history can see the plant.  The namespace lab's cables carry their
    # line rate, but this shared host now and then starves a run for a second or two: six clean
    # nights here read 925, 900, 941.5, 941.6, 939, 900 Mbit/s, whose spread (2.1 %) lets one
    # night catch only a drop of 15 % (`pinet trends`), so a 10 % plant passed as within on CI.
    # The plant is therefore 25 %, and the store is asked what its history can catch (`pinet
    # trends --json`, the band a night is judged by): a fourth night or more is taken only
    # while it cannot catch well under the plant, or while fewer than two clean nights
    # carried the line rate (the steady pair `pinet compare` must find within noise).
    for night in range(8):
        ok = _pytest(tmp_path)
        assert ok.returncode == 0, ok.stdout[-3000:]
        _report(tmp_path)  # each night's report, as a nightly builds it: the metrics keep history
        catches = _one_night_catches(tmp_path)
        steady = _at_line_rate(tmp_path)
        if night >= 2 and catches is not None and catches < 0.8 * PLANT and len(steady) >= 2:
            break
    assert catches is not None and catches < 0.8 * PLANT, (
        f"eight clean nights cannot see {PLANT} %: {catches}"
    )
    assert len(steady) >= 2, f"fewer than two of eight clean nights carried the line rate: {steady}"
    # The same night someone changed the board's offloads by hand (its receive checksums,
    # which a bulk sender hardly uses): the red night names that change beside the drop.
    by_hand = ["ip", "netns", "exec", lab8.netns("pi"), "ethtool", "-K", "eth0", "rx", "off"]
    subprocess.run(by_hand, check=True, capture_output=True)
    cable_faults.degrade(lab8, PLANT)
    bad = _pytest(tmp_path)
    assert bad.returncode == Exit.REGRESSION, bad.stdout[-3000:]
    report = _report(tmp_path)
    assert "regression against baseline" in bad.stdout
    offload = "board eth0 offloads rx-checksum: on -> off"
    assert "what changed: since run " in bad.stdout and offload in bad.stdout, bad.stdout[-3000:]
    listed = _pinet("regressions", "--db", _db(tmp_path))
    assert "what changed: since run " in listed.stdout and offload in listed.stdout, listed.stdout
    trends = _pinet("trends", *TRENDS, "--db", _db(tmp_path))
    assert trends.returncode == 1, trends.stdout + trends.stderr
    path = [line for line in trends.stdout.splitlines() if line.startswith("    path: since run ")]
    assert len(path) == 1 and offload in path[0], trends.stdout  # beside the context keys it came with
    *clean, degraded = sorted(p.name for p in (tmp_path / "results").iterdir() if p.is_dir())
    # the degraded night, with a drop of about the plant
    assert re.search(rf"change point: run {re.escape(degraded)}: .*\({ABOUT_PLANT}\d %", trends.stdout), (
        trends.stdout
    )
    verdicts = [json.loads(r.read_text()).get("status") for r in (tmp_path / "allure").glob("*-result.json")]
    # the degraded night's results (each night starts afresh), beside the trend charts' result
    assert [v for v in verdicts if v != "unknown"] == ["failed"]

    # The morning after: the report leads with the regression and the drop of its context,
    # and the test's page carries the context's chart across the nights.
    if chromium() is not None:
        failed = result_id_of(report, "Mbit/s · test_goodput")
        with serve(report) as base:
            overview = shoot(base, tmp_path / "overview.png", height=1400, expect="Largest drop 1")
            page = shoot(
                base + "#" + failed, tmp_path / "test.png", height=1400, expect="trend across nights"
            )
        assert "Variables" in overview and "Regressions 1 (1 new tonight, 0 persisting)" in overview
        drop = r"Largest drop 1 " + ABOUT_PLANT + r" % pi / \S+ / ethernet / board->peer / half"
        assert re.search(drop, overview), overview[:2000]
        assert "regression against baseline" in page
        assert "trend across nights: pi / kernel" in page

    # the same as data, for a dashboard or a script
    data = json.loads(_pinet("trends", *TRENDS, "--db", _db(tmp_path), "--json").stdout)
    (context,) = data["contexts"]
    assert data["change_points"] == 1 and context["runs"] == len(clean) + 1
    assert context["change_points"][0]["run_id"] == degraded

    # the two nights side by side: the drop is beyond the link's noise, the healthy pair is not
    compared = _pinet("compare", steady[-1], degraded, "--db", _db(tmp_path), "--json")
    assert compared.returncode == 1, compared.stdout + compared.stderr
    (delta,) = json.loads(compared.stdout)["contexts"]
    assert -PLANT - 2.5 < delta["delta_pct"] < -PLANT + 2.5 and delta["beyond_noise"]
    steady = _pinet("compare", *steady[:2], "--db", _db(tmp_path))
    assert steady.returncode == 0 and "0 of 1 contexts changed beyond noise" in steady.stdout, steady.stdout

    # a known-bad night taken out of the baselines: no change point is left, the run is listed so
    excluded = _pinet(
        "runs", "exclude", degraded, "--why", "degraded cable on purpose", "--db", _db(tmp_path)
    )
    assert excluded.returncode == 0, excluded.stderr
    assert _pinet("trends", *TRENDS, "--db", _db(tmp_path)).returncode == 0
    listed = _pinet("runs", "--db", _db(tmp_path)).stdout
    assert "EXCLUDED: degraded cable on purpose" in listed and clean[0] in listed
    refused = _pinet("runs", "exclude", degraded, "--db", _db(tmp_path))
    assert refused.returncode != 0 and "say why" in refused.stdout + refused.stderr
