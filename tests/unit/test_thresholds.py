"""Thresholds as data: matching, floors, and errors that name the file and the rule."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_pinet.errors import ConfigError
from pytest_pinet.judge.thresholds import load_thresholds, thresholds_from_data

REPO = Path(__file__).resolve().parents[2]
GBE = {
    "scenario": "ethernet",
    "duplex": "half",
    "link_speed_mbps": 1000,
    "mtu": 1500,
    "board": "pi",
    "adapter": "builtin",
}


def test_shipped_thresholds_load_and_cover_gbe_half_duplex():
    thresholds = load_thresholds(REPO / "pytest_pinet" / "data" / "thresholds.yaml")
    verdict = thresholds.judge(GBE, 941.0, 941.48)
    assert verdict is not None and verdict.passed and verdict.expected_mbps == 940
    failed = thresholds.judge(GBE, 900.0, 941.48)
    assert failed is not None and not failed.passed
    assert (
        "measured 900.0" in failed.explain()
        and ">= 940.0" in failed.explain()
        and "941.5" in failed.explain()
    )


def test_most_specific_rule_wins_and_lists_match_any_value():
    data = {
        "rules": [
            {"id": "gbe", "match": {"link_speed_mbps": 1000}, "min_mbps": 940},
            {
                "id": "slow-adapter",
                "match": {"link_speed_mbps": 1000, "adapter": ["ax88179", "other"]},
                "min_mbps": 700,
            },
        ]
    }
    thresholds = thresholds_from_data(data, "t.yaml")
    general = thresholds.rule_for(GBE)
    special = thresholds.rule_for({**GBE, "adapter": "ax88179"})
    assert general is not None and general.rule_id == "gbe"
    assert special is not None and special.rule_id == "slow-adapter"
    assert thresholds.rule_for({"link_speed_mbps": 100}) is None


def test_relative_floor_uses_the_line_rate_limit_and_the_stricter_form_applies():
    data = {"rules": [{"id": "r", "match": {}, "min_mbps": 900, "min_fraction_of_limit": 0.99}]}
    verdict = thresholds_from_data(data, "t.yaml").judge(GBE, 935.0, 941.48)
    assert verdict is not None
    assert verdict.expected_mbps == pytest.approx(932.07, abs=0.01)
    assert verdict.passed


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("rules: [", "malformed YAML at line"),
        ("- a\n- b\n", "expected a mapping"),
        ("rules: []\nextra: 1\n", "unknown top-level keys"),
        ("rules:\n  - {id: a, match: {colour: red}, min_mbps: 1}\n", "unknown match key 'colour'"),
        ("rules:\n  - {id: a, min_mbps: -3}\n", "must be a positive number"),
        ("rules:\n  - {id: a, min_mbps: '940; rm -rf /'}\n", "must be a positive number"),
        ("rules:\n  - {id: a}\n", "needs min_mbps or min_fraction_of_limit"),
        ("rules:\n  - {id: a, min_mbps: 1}\n  - {id: a, min_mbps: 2}\n", "appears twice"),
        ("rules:\n  - {id: a, min_fraction_of_limit: 1.5}\n", "at most 1"),
        ("rules:\n  - {id: a, mbps: 1}\n", "unknown keys ['mbps']"),
    ],
)
def test_bad_thresholds_files_name_the_file_and_the_problem(tmp_path, text, fragment):
    path = tmp_path / "thresholds.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as info:
        load_thresholds(path)
    assert str(path) in str(info.value)
    assert fragment in str(info.value)


def test_missing_file_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match="cannot read thresholds file"):
        load_thresholds(tmp_path / "nope.yaml")
