"""The Allure 3 report, built offline twice: metrics present, history carried over."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from pytest_pinet.cli import last_night
from pytest_pinet.errors import PinetError
from pytest_pinet.record.report import allure_cli, build_report

from ..report_browser import chromium, result_id_of, serve, shoot
from .test_allure import TESTS, THRESHOLDS

pytest_plugins = ["pytester"]
ROOT = Path(__file__).resolve().parents[2]


def _nights(pytester, monkeypatch, figures=(942.0, 942.0)):
    """One night of the fake suite per figure (Mbit/s), the report built after each as a
    nightly does; return (index, report, history, exit status of each night)."""
    try:
        allure_cli(ROOT)
    except PinetError as exc:
        pytest.skip(str(exc))
    pytester.makefile(".yaml", thresholds=THRESHOLDS)
    pytester.makepyfile(test_net=TESTS)
    results = pytester.path / "allure-results"
    report, history = pytester.path / "report", pytester.path / "history.jsonl"
    db = f"sqlite:///{pytester.path}/store.sqlite"
    index = report / "index.html"
    codes = []
    for night in figures:
        monkeypatch.setenv("FAKE_GOODPUT", str(night))
        run = pytester.runpytest_subprocess(
            "--alluredir",
            str(results),
            "--clean-alluredir",
            "--pinet-thresholds",
            "thresholds.yaml",
            "--pinet-results",
            "r",
            "--pinet-db",
            db,
            "--pinet-remeasure",
            "0",
        )
        codes.append(run.ret)
        index = build_report(ROOT, results, report, history, morning=last_night(pytester.path / "r", db))
    return index, report, history, codes


def test_report_has_a_metric_set_per_kind_and_history(pytester, monkeypatch):
    index, report, history, codes = _nights(pytester, monkeypatch)
    assert codes == [0, 0]
    html = index.read_text()
    assert "googletagmanager" not in html  # the report calls nobody when opened
    metrics = json.loads((report / "widgets" / "metrics.json").read_text())
    current = metrics["current"]
    goodput = [m for m in current if m["key"].startswith("1-tcp-goodput | ")]
    assert len(goodput) == 4  # a row per context: no row adds up figures of different contexts
    assert {m["unit"] for m in goodput} == {"Mbit/s"} and {m["value"] for m in goodput} == {942.0}
    assert {m["unit"] for m in current if m["key"].startswith("a-cpu-sender")} == {"%"}
    assert len(metrics["history"]) == 1  # the first night, carried into the second report
    assert len(history.read_text().splitlines()) == 2
    environment = json.loads((report / "widgets" / "allure_environment.json").read_text())
    assert any(entry["name"] == "pinet.version" for entry in environment)


def test_report_without_results_says_what_to_do(tmp_path):
    with pytest.raises(PinetError, match="no Allure results"):
        build_report(ROOT, tmp_path / "nothing", tmp_path / "report", tmp_path / "h.jsonl")


def test_the_report_read_in_chromium_leads_with_what_got_worse(pytester, monkeypatch):
    """Three nights, the last 3 % slower: a real browser opens the report over http and sees
    the night's regressions first, the drop per context, one metric set per kind with its
    unit, the tree by board, kernel and adapter, and a test page with its trend chart.  The
    screenshots are kept in results/ (docs/results-and-reports.md shows them)."""
    if chromium() is None:
        pytest.skip("Chromium not installed (apt-get install chromium; scripts/setup.sh does it)")
    _, report, _, codes = _nights(pytester, monkeypatch, (942.0, 942.4, 913.7))
    assert codes == [0, 0, 1]  # the third night regressed against the first two
    shots = ROOT / "results" / "report-screenshots"
    degraded = result_id_of(report, "913.7 Mbit/s · test_goodput[")
    with serve(report) as base:
        overview = shoot(base, shots / "overview.png", height=1500, expect="Largest drop 1")
        metrics = shoot(base + "#metrics", shots / "metrics.png", height=1400, expect="Mbit/s")
        test_page = shoot(base + "#" + degraded, shots / "test-page.png", height=1400, expect="913.7")
        morning = shoot(base + "#globalAttachments", shots / "morning.png", expect="morning.md")
    # Overview: the night's checklist before anything else, the drop with its context.
    assert "Variables 10 Regressions 4 Below threshold 4 Undecided 0 Lab faults 0 Measured 4" in overview
    assert re.search(
        r"Largest drop 1 -3\.0 % pi4 / rtl8153 / ethernet / (board->peer|peer->board) / half", overview
    )
    assert "(942.2 -> 913.7 Mbit/s, regression+below-threshold)" in overview
    # The tree: board, then kernel, then adapter; each test's figure leads its title.
    assert "pi4" in overview and "kernel 6.6.31" in overview and "rtl8153" in overview
    assert "913.7 Mbit/s · test_goodput[" in overview
    # Metrics: a set per kind with its own unit; no set of everything called "Goodput".
    assert "TCP goodput over a link (Mbit/s)" in metrics and "Sender CPU (%)" in metrics
    assert "Fairness between streams (Jain index)" in metrics
    assert "Network throughput" not in metrics
    assert "913.7" in metrics and "Mbit/s" in metrics
    # A test page: the figure, the regression, the chart of its context across nights.
    assert "913.7 Mbit/s · test_goodput[" in test_page and "regression against baseline" in test_page
    assert "trend across nights: pi4 / kernel 6.6.31 / rtl8153 / ethernet" in test_page
    assert "morning.md text/markdown" in morning  # the night's drops as a table, one click away
    for name in ("overview", "metrics", "test-page"):
        assert (shots / f"{name}.png").stat().st_size > 20_000
