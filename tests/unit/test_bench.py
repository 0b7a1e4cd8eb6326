"""`pinet bench` output: figures judged against their targets, shown as JSON and a table."""

from __future__ import annotations

import json

from pytest_pinet.bench import _figure, format_table, to_json


def test_figures_table_and_json():
    data = {
        "figures": [
            vars(_figure("start-up", "s", [0.9, 0.8, 1.0], "<= 10 s", True)),
            vars(_figure("overhead", "s", [1.5, 1.4, 1.6], "<= 0.5 s", False)),
        ],
        "not_measured": ["adaptive duration"],
        "duration_s": 20,
    }
    table = format_table(data)
    assert "start-up" in table and "yes" in table and "NO" in table
    assert "not measured: adaptive duration" in table
    decoded = json.loads(to_json(data))
    assert decoded["figures"][0]["median"] == 0.9
    assert decoded["figures"][1]["low"] == 1.4 and decoded["figures"][1]["high"] == 1.6


def test_sensitivity_counts_false_alarms_and_detections_per_band_floor():
    from pytest_pinet.bench_sensitivity import Trial, format_sensitivity, judge_trials

    history = [Trial(0.0, 941.4 + d, 7.0) for d in (0.0, 0.1, -0.1, 0.05, -0.05, 0.0)]
    clean = [Trial(0.0, 941.4 + d, 7.0) for d in (0.1, -0.1, 0.0, -3.0)]
    trials = clean + [Trial(1.0, 941.4 * 0.99 + d, 7.0) for d in (0.1, -0.1, 0.2, 0.0)]
    trials += [Trial(3.0, 941.4 * 0.97, 7.0)] * 2
    table = judge_trials(history, trials)
    half, one, quarter = table["policies"]  # the default floor (0.5 %) first
    rows = {r["level_pct"]: r for r in one["rows"]}
    # a 1 % floor: a 1 % drop sits on the band's edge, caught only by luck
    assert rows[0.0]["flagged"] == 0 and rows[3.0]["rate"] == 1.0 and rows[1.0]["rate"] < 0.95
    assert not one["met"]
    rows = {r["level_pct"]: r for r in half["rows"]}
    assert rows[0.0]["flagged"] == 0 and rows[1.0]["rate"] == 1.0 and half["met"]
    rows = {r["level_pct"]: r for r in quarter["rows"]}
    assert rows[0.0]["flagged"] == 1  # 0.32 % of noise is beyond a 0.25 % band: a false alarm
    text = "\n".join(format_sensitivity(table))
    assert "band floor 0.5 % (the default): band 0.50 %; target met" in text
    assert "false alarms (clean)" in text and "detected at 1 % slower" in text
