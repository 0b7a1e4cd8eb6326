"""Thresholds as data: matching, floors, and errors that name the file and the rule."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from pytest_pinet.errors import ConfigError
from pytest_pinet.judge.threshold_rules import SHIPPED, load_thresholds, thresholds_from_data

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


# --- Rules in layers, board models, links no rule names (issue 47) ---

PI3BPLUS = {"model": "Pi 3B+", "scenario": "ethernet", "duplex": "half", "link_speed_mbps": 1000, "mtu": 1500}


def _lab_file(tmp_path, rules):
    path = tmp_path / "thresholds.yaml"
    path.write_text(yaml.safe_dump({"version": 1, "extends": "shipped", "rules": rules}))
    return load_thresholds(path)


def test_a_pi_3bplus_is_judged_by_its_own_usb2_floor():
    shipped = load_thresholds(SHIPPED)
    assert shipped.judge(PI3BPLUS, 300.0, 941.5).passed  # type: ignore[union-attr]
    below = shipped.judge(PI3BPLUS, 200.0, 941.5)
    assert below is not None and not below.passed and below.rule_id == "pi3bplus-builtin-half-duplex"
    assert "rule pi3bplus-builtin-half-duplex" in below.explain()
    pi4 = {**PI3BPLUS, "model": "Pi 4B"}
    assert shipped.rule_for(pi4).rule_id == "gbe-tcp-half-duplex"  # type: ignore[union-attr]


def test_a_lab_rule_that_matches_wins_over_every_shipped_rule(tmp_path):
    mine = _lab_file(
        tmp_path, [{"id": "our-3bplus", "match": {"model": "Pi 3B+"}, "min_mbps": 250, "why": "ours"}]
    )
    assert mine.rule_for(PI3BPLUS).rule_id == "our-3bplus"
    lines = mine.explain(PI3BPLUS, 941.5)
    assert lines[0].startswith("rule our-3bplus (the lab's file, 1 match keys) judges it")
    assert "floor 250.0 Mbit/s, line-rate limit 941.5 Mbit/s" in lines[1]
    lost = [line for line in lines if "matched and lost" in line]
    assert any("pi3bplus-builtin-half-duplex (shipped rule" in line for line in lost)
    assert any("gbe-tcp-half-duplex (shipped rule" in line for line in lost)
    # Inside the lab's own layer, specificity still decides.
    both = _lab_file(
        tmp_path,
        [
            {"id": "broad", "match": {"model": "Pi 3B+"}, "min_mbps": 250, "why": "a"},
            {"id": "narrow", "match": {"model": "Pi 3B+", "duplex": "half"}, "min_mbps": 270, "why": "b"},
        ],
    )
    assert both.rule_for(PI3BPLUS).rule_id == "narrow"


@pytest.mark.parametrize(("speed", "mtu"), [(100, 1500), (2500, 1500), (1000, 9000), (10, 1500)])
def test_a_link_no_rule_names_gets_a_floor_from_its_own_line_rate(speed, mtu):
    from pytest_pinet.judge.linerate import tcp_goodput_limit

    context = {"scenario": "ethernet", "duplex": "half", "link_speed_mbps": speed, "mtu": mtu}
    shipped = load_thresholds(SHIPPED)
    limit = tcp_goodput_limit(speed, mtu)
    assert shipped.rule_for(context) is None  # no shipped rule names it...
    check = shipped.judge(context, 0.95 * limit, limit)  # ...yet it is judged, and says by what
    assert check is not None and check.passed and check.rule_id == "line-rate-fraction"
    assert check.expected_mbps == pytest.approx(0.9 * limit)
    failed = shipped.judge(context, 0.8 * limit, limit)
    assert failed is not None and not failed.passed and "line-rate limit" in failed.why


def test_a_usb3_adapter_on_a_usb2_board_is_expected_at_480():
    from pytest_pinet.model.board_models import PHYSICS, usb_speed_expected

    assert usb_speed_expected(5000, "Pi 3B+") == 480 and usb_speed_expected(5000, "CM4") == 480
    assert usb_speed_expected(5000, "Pi 4B") == 5000 and usb_speed_expected(480, "Pi 5") == 480
    assert usb_speed_expected(5000, "other") == 5000
    for model in ("Pi 3B", "Pi 3B+", "Pi 4B", "Pi 400", "CM4", "Pi 5", "CM5"):
        assert model in PHYSICS


def test_explain_says_when_a_floor_needs_the_limit_it_was_not_given(tmp_path):
    both = _lab_file(
        tmp_path,
        [
            {
                "id": "ours",
                "match": {"model": "Pi 5"},
                "min_mbps": 900,
                "min_fraction_of_limit": 0.95,
                "why": "a",
            }
        ],
    )
    lines = both.explain({"model": "Pi 5"}, None)
    assert (
        lines[0].startswith("rule ours")
        and "floor needs the line-rate limit, line-rate limit unknown" in lines[1]
    )
