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


def test_report_has_goodput_metrics_and_history(pytester):
    try:
        allure_cli(ROOT)
    except PinetError as exc:
        pytest.skip(str(exc))
    pytester.makefile(".yaml", thresholds=THRESHOLDS)
    pytester.makepyfile(test_net=TESTS)
    results = pytester.path / "allure-results"
    report, history = pytester.path / "report", pytester.path / "history.jsonl"
    for _ in range(2):
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
