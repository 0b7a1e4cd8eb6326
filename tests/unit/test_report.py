"""The Allure 3 report, built offline twice: metrics present, history carried over."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_pinet.errors import PinetError
from pytest_pinet.record.report import allure_cli, build_report

from .test_allure import TESTS, THRESHOLDS

pytest_plugins = ["pytester"]
ROOT = Path(__file__).resolve().parents[2]


def _two_reported_runs(pytester):
    """Run the fake suite twice, building the report after each; return (index, report, history)."""
    try:
        allure_cli(ROOT)
    except PinetError as exc:
        pytest.skip(str(exc))
    pytester.makefile(".yaml", thresholds=THRESHOLDS)
    pytester.makepyfile(test_net=TESTS)
    results = pytester.path / "allure-results"
    report, history = pytester.path / "report", pytester.path / "history.jsonl"
    index = report / "index.html"
    for _ in range(2):  # two runs: the metric has a history, the trend has two points
        run = pytester.runpytest_subprocess(
            "--alluredir",
            str(results),
            "--clean-alluredir",
            "--pinet-thresholds",
            "thresholds.yaml",
            "--pinet-results",
            "r",
        )
        assert run.ret == 0
        index = build_report(ROOT, results, report, history)
    return index, report, history


def test_report_has_goodput_metrics_and_history(pytester):
    index, report, history = _two_reported_runs(pytester)
    html = index.read_text()
    assert "googletagmanager" not in html  # the report calls nobody when opened
    metrics = json.loads((report / "widgets" / "metrics.json").read_text())
    current = metrics["current"]
    assert {m["key"] for m in current} == {"goodput"}
    assert {m["unit"] for m in current} == {"Mbit/s"}
    assert {m["value"] for m in current} == {942.0}
    assert len(metrics["history"]) == 1  # the first run, carried into the second report
    assert len(history.read_text().splitlines()) == 2
    environment = json.loads((report / "widgets" / "allure_environment.json").read_text())
    assert any(entry["name"] == "pinet.version" for entry in environment)


def test_report_without_results_says_what_to_do(tmp_path):
    with pytest.raises(PinetError, match="no Allure results"):
        build_report(ROOT, tmp_path / "nothing", tmp_path / "report", tmp_path / "h.jsonl")


CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--virtual-time-budget=15000",
]


def test_report_renders_metrics_in_headless_chromium(pytester, tmp_path):
    """A real browser opens the report, sees the goodput metrics, and a screenshot is kept."""
    import functools
    import http.server
    import shutil
    import subprocess
    import threading

    chromium = shutil.which("chromium")
    if chromium is None:
        pytest.skip("Chromium not installed (apt-get install chromium; scripts/setup.sh does it)")
    _, report, _ = _two_reported_runs(pytester)
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(report))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/index.html#metrics"
    shot = ROOT / "results" / "report-metrics-screenshot.png"
    shot.parent.mkdir(exist_ok=True)
    try:
        base = [chromium, *CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'profile'}"]
        dom = subprocess.run([*base, "--dump-dom", url], capture_output=True, text=True, timeout=120).stdout
        subprocess.run(
            [*base, "--window-size=1400,1000", f"--screenshot={shot}", url],
            capture_output=True,
            timeout=120,
            check=False,
        )
    finally:
        server.shutdown()
    assert "Performance metrics" in dom
    assert "Goodput" in dom and "Mbit/s" in dom
    assert "942" in dom  # the measured value is on the page
    assert shot.exists() and shot.stat().st_size > 10_000
