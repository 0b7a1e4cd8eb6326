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
