"""The Allure 3 report, built offline twice: metrics present, history carried over."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from pytest_pinet.cli.report import last_night
from pytest_pinet.errors import PinetError
from pytest_pinet.exit_codes import Exit
from pytest_pinet.record.allure_report import allure_cli, build_report

from ..fake_store import store_of_rows
from ..report_browser import chromium, result_id_of, serve, shoot
from .test_allure_runs import TESTS, THRESHOLDS, run_allure

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
        run = run_allure(pytester, results, "--clean-alluredir", "--pinet-remeasure", "0")
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
        pytest.skip("Chromium not installed (apt-get install chromium; scripts/setup.sh --tests does it)")
    _, report, _, codes = _nights(pytester, monkeypatch, (942.0, 942.4, 913.7))
    assert codes == [0, 0, Exit.REGRESSION]  # the third night regressed against the first two
    shots = ROOT / "results" / "report-screenshots"
    degraded = result_id_of(report, "913.7 Mbit/s · test_goodput[")
    with serve(report) as base:
        overview = shoot(base, shots / "overview.png", height=1500, expect="New regression 1")
        metrics = shoot(base + "#metrics", shots / "metrics.png", height=1400, expect="Mbit/s")
        test_page = shoot(base + "#" + degraded, shots / "test-page.png", height=1400, expect="913.7")
        morning = shoot(base + "#globalAttachments", shots / "morning.png", expect="morning.md")
    # Overview: the night's checklist before anything else, the drop with its context.
    assert re.search(
        r"Variables \d+ Regressions 4 \(4 new tonight, 0 persisting\) "
        r"New regression 1 pi4 / rtl8153 / ethernet / (board->peer|peer->board) / half / \S+: "
        r"942\.2 -> 913\.7 Mbit/s \(-3\.0 %\)",
        overview,
    ), overview[:1500]
    # ... then the week's acceptances and the counts; the largest drops behind "Show more".
    assert "Accepted this week 0 Below threshold 4 Undecided 0 Lab faults 0" in overview
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


def test_the_morning_lists_what_failed_first_then_the_largest_drops(tmp_path):
    from pytest_pinet.record.night_digest import night_digest_of
    from pytest_pinet.record.store import StoredMeasurement

    gbe, disk = (
        "board=pi|link=eth|adapter=builtin|scenario=ethernet|direction=board->peer",
        "board=pi|link=loop|scenario=storage|direction=read|block_bytes=512",
    )

    def row(run, key, mbps, verdict, at):
        return StoredMeasurement(0, run, "t", key, at, mbps, "6.1", "os", "builtin", "pi", verdict, ())

    rows = [row(f"n{n}", key, v, "pass", n) for n in (1, 2) for key, v in ((gbe, 941.3), (disk, 5598.7))]
    rows += [row("n3", gbe, 913.2, "regression+below-threshold", 3.0), row("n3", disk, 3558.2, "pass", 3.1)]
    store = store_of_rows(rows, tmp_path / "s.sqlite")
    morning = night_digest_of(store, "n3", [{"kind": "lab-fault"}])
    assert (morning.regressions, morning.below_threshold, morning.lab_faults, morning.measured) == (
        1,
        1,
        1,
        2,
    )
    first, second = morning.drops
    assert first.context == "pi / builtin / ethernet / board->peer" and round(first.change_pct, 1) == -3.0
    assert second.context == "pi / loop / storage / read / 512" and round(second.change_pct, 1) == -36.4
    shown = morning.variables()
    assert list(shown)[:7] == [  # the first eight: what Allure shows before "Show more"
        "Regressions",
        "New regression 1",
        "Accepted this week",
        "Below threshold",
        "Undecided",
        "Lab faults",
        "Measured",
    ]
    assert shown["Regressions"] == "1 (1 new tonight, 0 persisting)"
    assert (
        shown["New regression 1"] == "pi / builtin / ethernet / board->peer: 941.3 -> 913.2 Mbit/s (-3.0 %); "
        "one night catches a 0.5 % change"  # two equal nights: the band is its 0.5 % floor
    )
    assert shown["Largest drop 1"].startswith(
        "-3.0 %  pi / builtin / ethernet / board->peer  (941.3 -> 913.2"
    )
    assert "| -3.0 % | pi / builtin / ethernet / board->peer | 941.3 | 913.2 |" in morning.markdown()


def test_a_sweep_title_gives_its_count_and_range():
    import dataclasses

    from pytest_pinet.model import DiskDetail, Measurement, TrafficContext
    from pytest_pinet.record.allure_out import figures_title

    context = TrafficContext("lab", "storage", "pi", "pc", "loop", "", "read", "half", 1, 5, 0, 0, 1500)
    one = Measurement("t", context, 80.0, 0.0, 0.0, 1.0, DiskDetail(10.0, 1, "/dev/sda"))
    sweep = [dataclasses.replace(one, detail=DiskDetail(m, 1, "/dev/sda")) for m in (0.1, 10.0, 37.4)]
    assert figures_title([one]) == "10.5 MB/s"
    assert figures_title(sweep) == "3 figures, 0.1-39.2 MB/s"
