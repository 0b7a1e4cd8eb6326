"""`pinet bench` output: figures judged against their targets, shown as JSON and a table."""

from __future__ import annotations

import json

from pytest_pinet.bench.all_figures import _figure, format_table, to_json
from tests.fixture_paths import EVIDENCE


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


def test_the_table_of_a_run_without_adaptive_repeats_has_every_detail():
    """``pinet bench --adaptive-repeats 0`` (docs/bench.md) once measured for 14 minutes and
    ended in a KeyError: its details hold no adaptive figures, only the others."""
    data = {
        "figures": [vars(_figure("start-up", "ms", [80.0, 90.0], "<= 100 ms", True))],
        "details": {
            "pytest start-up ms (median)": {"bare": 310.0, "wheel": 390.0},
            "overhead failed tests": [],
            "board->peer": {
                "fixed_mbps": [941.2],
                "adaptive_mbps": [941.3],
                "adaptive_ended_by": ["settled"],
                "adaptive_measured_s": [4.0],
            },
        },
        "not_measured": [],
    }
    table = format_table(data)
    assert "pytest start-up ms (median): bare 310.0, wheel 390.0" in table
    assert "board->peer: fixed 941.2 Mbit/s; adaptive 941.3 Mbit/s (4 s settled)" in table


def test_sensitivity_counts_false_alarms_and_detections_per_band_floor():
    from pytest_pinet.bench.sensitivity import Trial, format_sensitivity, judge_trials

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
    # A missed target says what limits it: the 1 % floor is as wide as the drop itself,
    # the 0.25 % floor has a false alarm.
    assert "limited by: the 1 % band floor alone is as wide as the 1 % drop" in text
    assert "limited by: false alarms: the 0.25 % band is narrower than the host's run-to-run noise" in text
    assert ", 7.0 s per run" in text


def test_a_missed_target_from_noise_names_the_run_length_that_would_reach_it():
    from pytest_pinet.bench.sensitivity import Trial, judge_trials

    # sd 0.3 % of 941 Mbit/s: a 1 % drop hides in a 0.5 % floor's band plus the noise.
    history = [Trial(0.0, 941.4 * (1 + d / 100), 6.0) for d in (0.3, -0.3, 0.3, -0.3, 0.3, -0.3)]
    trials = [Trial(0.0, 941.4, 6.0), Trial(1.0, 941.4 * 0.99 * 1.004, 6.0), Trial(1.0, 941.4 * 0.99, 6.0)]
    half = judge_trials(history, trials)["policies"][0]
    assert not half["met"]
    assert (
        half["limited_by"].startswith("host noise: sd 0.329 % per 6 s run")
        and "runs of about" in half["limited_by"]
    )


def test_the_history_benchmark_prints_its_table_from_recorded_figures():
    """`pinet bench --history-only` (docs/bench.md): a recorded run's JSON becomes its table,
    each backend with every command at every size, the nights and the verdict checks."""

    from pytest_pinet.bench.history_bench import COMMANDS, format_history

    recorded = EVIDENCE / "bench" / "history-10-labs-365-nights.json"
    results = json.loads(recorded.read_text(encoding="utf-8"))["history"]
    assert [r["backend"] for r in results] == ["sqlite", "postgresql"]
    for result in results:
        lines = format_history(result)
        assert lines[0].startswith(f"history on {result['backend']}: 10 labs, up to 365 nights (803,000 ")
        assert all(name in lines[1] for name in COMMANDS)
        sizes = [line.split()[0] for line in lines[2:5]]
        assert sizes == ["121", "243", "365"]
        assert any(line.startswith("  growth over x3.0 nights:") for line in lines)
        assert sum("night " in line and "of lab01" in line for line in lines) == 3
        assert "200 of 200 planted drops red" in lines[-1] and lines[-1].endswith(": yes")
