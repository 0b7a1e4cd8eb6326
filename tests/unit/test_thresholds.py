"""Thresholds as data: matching, floors, and errors that name the file and the rule."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from pytest_pinet.errors import ConfigError
from pytest_pinet.judge.linerate import tcp_goodput_limit
from pytest_pinet.judge.path_limit import path_limit
from pytest_pinet.judge.threshold_rules import SHIPPED, Thresholds, load_thresholds, thresholds_from_data

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
            {"id": "gbe", "match": {"scenario": "*", "link_speed_mbps": 1000}, "min_mbps": 940},
            {
                "id": "slow-adapter",
                "match": {"scenario": "*", "link_speed_mbps": 1000, "adapter": ["ax88179", "other"]},
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
    data = {
        "rules": [{"id": "r", "match": {"scenario": "*"}, "min_mbps": 900, "min_fraction_of_limit": 0.99}]
    }
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
        (
            "rules:\n  - {id: a, match: {scenario: storage}, min_mbps: 1}\n"
            "  - {id: a, match: {scenario: storage}, min_mbps: 2}\n",
            "appears twice",
        ),
        ("rules:\n  - {id: a, min_mbps: 1}\n", "names no scenario"),
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

PI3BPLUS = {
    "model": "Pi 3B+",
    "scenario": "ethernet",
    "duplex": "half",
    "link_speed_mbps": 1000,
    "mtu": 1500,
    "adapter": "builtin",
}


def _lab_file(tmp_path, rules):
    path = tmp_path / "thresholds.yaml"
    path.write_text(yaml.safe_dump({"version": 1, "extends": "shipped", "rules": rules}))
    return load_thresholds(path)


def _with_path(context: dict[str, Any]) -> tuple[dict[str, Any], float, str]:
    """The context as a measurer records it (the part that limits its path), and its limit."""
    path = path_limit(context)
    return {**context, "limited_by": path.part}, path.mbps, path.why


def _rule_id(thresholds: Thresholds, context: dict[str, Any], limit: float) -> str | None:
    rule = thresholds.rule_for(context, limit)
    return rule.rule_id if rule else None


def test_a_pi_3bplus_is_judged_by_its_usb2_bus_not_by_the_cable():
    shipped = load_thresholds(SHIPPED)
    context, limit, why = _with_path(PI3BPLUS)
    assert limit == pytest.approx(300.0) and "LAN7515 behind its USB 2 hub" in why
    passed = shipped.judge(context, 253.0, limit)
    assert passed is not None and passed.passed
    below = shipped.judge(context, 200.0, limit)
    assert below is not None and not below.passed and below.rule_id == "link-half-duplex-usb2"
    assert below.expected_mbps == pytest.approx(210.0) and "path limit 300.0" in below.explain()
    pi4, pi4_limit, _ = _with_path({**PI3BPLUS, "model": "Pi 4B"})
    assert _rule_id(shipped, pi4, pi4_limit) == "gbe-tcp-half-duplex"
    pi3b, pi3b_limit, pi3b_why = _with_path({**PI3BPLUS, "model": "Pi 3B"})
    assert pi3b_limit == pytest.approx(94.1, abs=0.05) and "is 100 Mbit/s" in pi3b_why
    judged = shipped.rule_for(pi3b, pi3b_limit)
    assert judged is not None and judged.floor(pi3b_limit) < 94.1


def test_a_lab_rule_that_matches_wins_but_only_where_it_matches(tmp_path):
    match = {"model": "Pi 3B+", "scenario": "ethernet"}
    rule = {"id": "our-3bplus", "match": match, "min_mbps": 250}
    mine = _lab_file(tmp_path, [{**rule, "why": "ours"}])
    context, limit, why = _with_path(PI3BPLUS)
    assert _rule_id(mine, context, limit) == "our-3bplus"
    lines = mine.explain(context, limit, why)
    assert lines[0].startswith("rule our-3bplus (the lab's file, 2 match keys) judges it")
    assert "floor 250.0 Mbit/s, path limit 300.0 Mbit/s: the Pi 3B+'s GbE port" in lines[1]
    lost = [line for line in lines if "matched and lost" in line]
    assert any("link-half-duplex-usb2 (shipped rule" in line for line in lost)
    assert any(
        "gbe-tcp-half-duplex (its floor 940 Mbit/s is above the path's limit)" in line for line in lines
    )
    # Its storage and UDP keep their own floors: the rule names ethernet only.
    storage, storage_limit, _ = _with_path(
        {"model": "Pi 3B+", "scenario": "storage", "protocol": "block", "adapter": "usb", "block_bytes": 8}
    )
    assert _rule_id(mine, storage, storage_limit) == "storage-small-blocks"
    # Inside the lab's own layer, specificity still decides.
    both = _lab_file(
        tmp_path,
        [
            {**rule, "id": "broad", "why": "a"},
            {"id": "narrow", "match": {**match, "duplex": "half"}, "min_mbps": 270, "why": "b"},
        ],
    )
    assert _rule_id(both, context, limit) == "narrow"


@pytest.mark.parametrize(
    ("speed", "mtu", "share"), [(100, 1500, 0.9), (2500, 1500, 0.75), (1000, 9000, 0.9), (10, 1500, 0.9)]
)
def test_a_link_of_any_speed_or_mtu_gets_a_floor_from_its_own_limit(speed, mtu, share):
    context = {
        "scenario": "ethernet",
        "duplex": "half",
        "link_speed_mbps": speed,
        "mtu": mtu,
        "adapter": "builtin",
    }
    context, limit, _ = _with_path(context)
    assert limit == pytest.approx(tcp_goodput_limit(speed, mtu))
    check = load_thresholds(SHIPPED).judge(context, 0.95 * limit, limit)
    assert check is not None and check.passed and check.expected_mbps == pytest.approx(share * limit)


def test_a_context_no_rule_names_is_held_to_a_share_of_its_limit():
    own = thresholds_from_data(
        {"rules": [{"id": "disk", "match": {"scenario": "storage"}, "min_mbps": 1}]}, "t"
    )
    context = {"scenario": "ethernet", "duplex": "half", "link_speed_mbps": 100, "mtu": 1500}
    limit = tcp_goodput_limit(100, 1500)
    check = own.judge(context, 0.8 * limit, limit)
    assert check is not None and not check.passed and check.rule_id == "line-rate-fraction"
    assert check.expected_mbps == pytest.approx(0.9 * limit) and "of its limit" in check.why


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
                "match": {"model": "Pi 5", "scenario": "ethernet"},
                "min_mbps": 900,
                "min_fraction_of_limit": 0.95,
                "why": "a",
            }
        ],
    )
    lines = both.explain({"model": "Pi 5", "scenario": "ethernet"}, None)
    assert (
        lines[0].startswith("rule ours") and "floor needs the path's limit, path limit none known" in lines[1]
    )
