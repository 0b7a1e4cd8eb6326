"""Real boards as the reference (issue 61): every healthy published figure of a real Raspberry
Pi passes the floor the shipped rules give its context, or sits within its own interval of that
floor (undecided, never red), and every known fault falls below it.  The figures and their
sources are in fixtures/real-boards/figures.yaml."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from pytest_pinet.judge.path_limit import path_limit
from pytest_pinet.judge.threshold_rules import SHIPPED, load_thresholds
from tests.fixture_paths import FIXTURES

FIGURES = yaml.safe_load((FIXTURES / "real-boards" / "figures.yaml").read_text(encoding="utf-8"))
JUDGED = [f for f in FIGURES if "not_comparable" not in f]
SHIPPED_RULES = load_thresholds(SHIPPED)
# How far a published figure may be from the truth: pinet's default precision (0.5 %) for an
# iperf3 figure as printed, 5 % for one a source gives as "about" or "~".
EXACT_PCT, APPROXIMATE_PCT = 0.5, 5.0


def _context(figure: dict[str, Any]) -> tuple[dict[str, Any], float]:
    context = {
        key: figure[key]
        for key in ("model", "scenario", "protocol", "adapter", "driver", "lan_adapter", "link_speed_mbps")
        if figure.get(key) is not None
    }
    context.update(
        mtu=figure["mtu"],
        duplex=figure["duplex"],
        direction=figure.get("direction") or "board->peer",
        adapter_bus=figure.get("bus") or "",
        rate_target_mbps=0,
    )
    path = path_limit(context)
    return {**context, "limited_by": path.part}, path.mbps


def _floor(figure: dict[str, Any]) -> tuple[float, str, float]:
    context, limit = _context(figure)
    rule = SHIPPED_RULES.rule_for(context, limit)
    assert rule is not None, f"no floor for {context}"
    return rule.floor(limit), rule.rule_id, limit


def _label(figure: dict[str, Any]) -> str:
    return f"{figure['model']} {figure['scenario']} {figure['duplex']} {figure['mbps']} ({figure['state']})"


def test_the_set_covers_the_models_and_paths_and_names_its_sources():
    assert len(JUDGED) >= 40
    assert {f["model"] for f in JUDGED} >= {"Pi 3B+", "Pi 4B", "CM4", "Pi 5"}
    assert {f["scenario"] for f in JUDGED} >= {"ethernet", "usb-adapter", "routing"}
    assert {f.get("bus") for f in JUDGED} >= {"usb3", "pcie"}
    assert {f["link_speed_mbps"] for f in JUDGED} >= {1000, 2500}
    assert sum(f["state"] == "fault" for f in JUDGED) >= 8
    assert all(f["source"] and f["quote"] for f in FIGURES)


@pytest.mark.parametrize("figure", [f for f in JUDGED if f["state"] == "healthy"], ids=_label)
def test_a_healthy_figure_is_never_red(figure):
    floor, rule, limit = _floor(figure)
    spread = APPROXIMATE_PCT if figure["approximate"] else EXACT_PCT
    high = figure["mbps"] * (1 + spread / 100)
    assert high >= floor, (
        f"{figure['mbps']} (+{spread} %) below {floor:.1f} of rule {rule}, limit {limit:.1f}"
    )


@pytest.mark.parametrize("figure", [f for f in JUDGED if f["state"] == "fault"], ids=_label)
def test_a_known_fault_falls_below_its_floor(figure):
    floor, rule, _ = _floor(figure)
    spread = APPROXIMATE_PCT if figure["approximate"] else EXACT_PCT
    high = figure["mbps"] * (1 + spread / 100)
    assert high < floor, f"{figure['fault']}: {figure['mbps']} not below {floor:.1f} (rule {rule})"


def test_the_users_own_floors_stay_where_the_cable_is_the_limit():
    pi4 = next(
        f for f in JUDGED if f["model"] == "Pi 4B" and f["scenario"] == "ethernet" and f["mbps"] == 950
    )
    assert _floor(pi4)[:2] == (940.0, "gbe-tcp-half-duplex")
    plus = next(f for f in JUDGED if f["model"] == "Pi 3B+" and f["mbps"] == 253)
    floor, rule, limit = _floor(plus)
    assert limit == pytest.approx(300.0) and rule == "link-half-duplex-usb2" and floor < 253
