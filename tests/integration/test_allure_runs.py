"""Allure output of real pytest runs (pytester processes): stable history keys across two runs,
metrics, run files written once under xdist.  Two nights are two processes; in one process
the second run lost the first's dynamic parameters (allure-pytest's state is per process)."""

from __future__ import annotations

import json

pytest_plugins = ["pytester"]

TESTS = """
import os
import time

import pytest
from pytest_pinet.model import Measurement, TcpDetail, TrafficContext

GOODPUT = float(os.environ.get("FAKE_GOODPUT", "942.0"))  # a night's figure: the tests plant a drop

def fake(direction, goodput, profile):
    context = TrafficContext(lab="bench", scenario="ethernet", board="pi4", peer="pc", link="eth",
                             adapter="rtl8153", direction=direction, duplex="half", streams=2, duration_s=20,
                             omit_s=2, link_speed_mbps=1000, mtu=1500, profile=profile, kernel="6.6.31",
                             os="Raspberry Pi OS 12")
    detail = TcpDetail(goodput, 0, (goodput / 2, goodput / 2), 1.0, 2.0, "iperf 3.12")
    now = time.time()
    return Measurement(test_id="t", context=context, goodput_mbps=goodput, limit_mbps=941.5, started=now - 22,
                       finished=now, detail=detail, interval_mbps=(goodput,) * 6)

@pytest.mark.parametrize("profile", ["stock", "irq-pinned"])
@pytest.mark.parametrize("direction", ["board->peer", "peer->board"])
def test_goodput(pinet_record_measurement, pinet_judge_goodput, direction, profile):
    pinet_judge_goodput(lambda: [pinet_record_measurement(fake(direction, GOODPUT, profile))])
"""
THRESHOLDS = "rules:\n  - {id: gbe, match: {scenario: ethernet}, min_mbps: 940}\n"


def run_allure(pytester, alluredir, *extra):
    # a store of this test's own: another test's history would add a trend chart here
    db = f"sqlite:///{pytester.path}/store.sqlite"
    return pytester.runpytest_subprocess(
        "--alluredir",
        str(alluredir),
        "--pinet-thresholds",
        "thresholds.yaml",
        "--pinet-results",
        "r",
        "--pinet-db",
        db,
        *extra,
    )


def allure_results(alluredir):
    return [json.loads(p.read_text()) for p in alluredir.glob("*-result.json")]


def test_history_keys_are_stable_and_metrics_present(pytester):
    pytester.makefile(".yaml", thresholds=THRESHOLDS)
    pytester.makepyfile(test_net=TESTS)
    first, second = pytester.path / "a1", pytester.path / "a2"
    assert run_allure(pytester, first).ret == 0
    assert run_allure(pytester, second).ret == 0

    def keys(alluredir):
        return sorted(
            (r["fullName"], tuple(sorted((p["name"], p["value"]) for p in r.get("parameters", []))))
            for r in allure_results(alluredir)
            if r["fullName"] != "pinet.trends#throughput"
        )

    assert keys(first) == keys(second)
    # the second run has history: the controller adds the trend charts, as charts, not a test
    (trends,) = [r for r in allure_results(second) if r["fullName"] == "pinet.trends#throughput"]
    assert trends["status"] == "unknown" and trends["attachments"]
    assert len(keys(first)) == 4
    for result in allure_results(first):
        labels = {label["name"]: label["value"] for label in result["labels"]}
        assert labels["board"] == "pi4" and labels["kernel"] == "6.6.31" and labels["adapter"] == "rtl8153"
        assert labels["feature"] == "ethernet"
        params = {p["name"]: p["value"] for p in result.get("parameters", [])}
        assert (params["board"], params["adapter"], params["scenario"]) == (
            "'pi4'",
            "'rtl8153'",
            "'ethernet'",
        )
        # measured values never become parameters (they would split the history)
        assert all("942" not in p["value"] for p in result.get("parameters", []))
        names = {a["name"] for a in result.get("attachments", [])}
        assert {"board->peer: per-stream goodput", "peer->board: per-stream goodput"} & names
    files = [json.loads(p.read_text()) for p in first.glob("*-perf.json")]
    assert len(files) == 4  # one per measurement, a sample per metric set it has a figure for
    entries = [entry for file in files for entry in file]
    assert {e["group"] for e in entries} == {
        "1-tcp-goodput",
        "8-fairness",
        "9-retransmits",
        "a-cpu-sender",
        "b-cpu-receiver",
    }
    goodput = [e for e in entries if e["group"] == "1-tcp-goodput"]
    # One key per context (a row and a trend of its own), never one key summed over contexts.
    assert len({e["key"] for e in goodput}) == 4
    assert all(
        e["key"].startswith("1-tcp-goodput | pi4 / kernel 6.6.31 / rtl8153 / ethernet / ") for e in goodput
    )
    assert {(e["value"], e["unit"], e["better"]) for e in goodput} == {(942.0, "Mbit/s", "higher")}
    assert {(e["value"], e["unit"]) for e in entries if e["group"] == "a-cpu-sender"} == {(1.0, "%")}
    assert {e["better"] for e in entries if e["group"] == "9-retransmits"} == {"lower"}
    # The figure leads each test's title; the tree groups by board, system, link, suite.
    for result in allure_results(first):
        assert result["name"].startswith("942.0 Mbit/s · test_goodput[")
        labels = {label["name"]: label["value"] for label in result["labels"]}
        assert (labels["system"], labels["link"], labels["suite"]) == ("kernel 6.6.31", "rtl8153", "ethernet")
    categories = json.loads((first / "categories.json").read_text())
    assert {c["name"] for c in categories} >= {"Regression against baseline", "Below threshold", "Lab fault"}
    environment = (first / "environment.properties").read_text()
    assert "pinet.version=" in environment and "lab=virtual" in environment
    assert json.loads((first / "executor.json").read_text())["name"] == "pytest-pinet"


def test_xdist_writes_everything_once(pytester):
    pytester.makefile(".yaml", thresholds=THRESHOLDS)
    pytester.makepyfile(test_net=TESTS)
    alluredir = pytester.path / "ax"
    result = run_allure(pytester, alluredir, "-n", "2")
    assert result.ret == 0
    assert len(allure_results(alluredir)) == 4
    assert len(list(alluredir.glob("*-perf.json"))) == 4
    assert len(list(alluredir.glob("environment.properties"))) == 1
    stored = [
        line
        for p in (pytester.path / "r").glob("*/measurements.jsonl")
        for line in p.read_text().splitlines()
    ]
    assert len(stored) == 4  # both workers appended to the controller's run, nothing twice
