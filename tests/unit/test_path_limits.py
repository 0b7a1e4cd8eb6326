"""Every context's limit and floor from the physics of its path (issue 61), proved over the
space of contexts a mixed lab has: every model x scenario x direction x duplex x link speed x
MTU x adapter x bus x qdisc x rate target x OS.

- the floor that judges a context never exceeds its path's limit, and every context has one;
- a lab rule of each documented shape judges exactly what it names, and nothing else moves;
- the physics table and the shipped rules cannot drift apart."""

from __future__ import annotations

import fnmatch
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_pinet.errors import ConfigError
from pytest_pinet.judge.path_limit import PARTS, path_limit
from pytest_pinet.judge.threshold_rules import (
    SHIPPED,
    Thresholds,
    judged,
    load_thresholds,
    thresholds_from_data,
)
from pytest_pinet.model.board_models import BOARD_MODELS, ETHERNET_OVER_BUS_MBPS, PHYSICS
from pytest_pinet.model.context import SCENARIOS

SHIPPED_RULES = load_thresholds(SHIPPED)
MODELS = [*BOARD_MODELS, ""]
ADAPTERS = ["builtin", "rtl8153", "ax88179", "rtl8156", "rtl8125"]
OSES = ["Debian GNU/Linux 12 (bookworm)", "FreeBSD 14.2-RELEASE", "NetBSD 10.1", "QNX 8.0.0"]


@st.composite
def contexts(draw: st.DrawFn) -> dict[str, Any]:
    """A context a measurer of some lab could make: any model, scenario and path."""
    scenario = draw(st.sampled_from(SCENARIOS))
    routed = scenario.startswith("routing")
    udp = scenario.startswith("udp-")
    storage = scenario == "storage"
    if routed:
        direction = draw(st.sampled_from(["download", "upload"]))
    elif udp:
        direction = draw(st.sampled_from(["board->peer", "board->board"]))
    elif storage:
        direction = draw(st.sampled_from(["write", "read"]))
    else:
        direction = draw(st.sampled_from(["board->peer", "peer->board"]))
    context: dict[str, Any] = {
        "lab": "lab",
        "board": draw(st.sampled_from(["pi", "pi4-1", "qpi"])),
        "model": draw(st.sampled_from(MODELS)),
        "scenario": scenario,
        "direction": direction,
        "duplex": "half" if udp or storage else draw(st.sampled_from(["half", "full"])),
        "protocol": "UDP" if udp else "block" if storage else "TCP",
        "link_speed_mbps": 0 if storage else draw(st.sampled_from([10, 100, 1000, 2500])),
        "mtu": 0 if storage else draw(st.sampled_from([1500, 9000])),
        "adapter": draw(st.sampled_from(["usb", "usb2", "usb3"]))
        if storage
        else draw(st.sampled_from(ADAPTERS)),
        "adapter_bus": draw(st.sampled_from(["", *ETHERNET_OVER_BUS_MBPS])),
        "lan_adapter": draw(st.sampled_from(["", "builtin", "rtl8153"])) if routed else "",
        "qdisc": draw(st.sampled_from(["", "pfifo_fast", "sfq", "fq_codel"])),
        "rate_target_mbps": draw(st.sampled_from([0, 100, 250, 400, 500])),
        "os": draw(st.sampled_from(OSES)),
        "streams": draw(st.sampled_from([1, 2, 10])),
        "block_bytes": draw(st.sampled_from([8, 32768, 1048576])) if storage else 0,
        "driver": draw(st.sampled_from(["", "r8152", "ax88179_178a"])),
        "profile": "stock",
    }
    path = path_limit(context)
    context["limited_by"] = path.part
    return context


def _judged(thresholds: Thresholds, context: dict[str, Any]) -> tuple[str | None, float | None, float]:
    limit = path_limit(context).mbps
    rule = thresholds.rule_for(context, limit)
    return (rule.rule_id, rule.floor(limit), limit) if rule else (None, None, limit)


@settings(max_examples=400, deadline=None)
@given(contexts())
def test_every_context_has_a_floor_and_it_never_exceeds_the_paths_limit(context):
    rule, floor, limit = _judged(SHIPPED_RULES, context)
    assert rule is not None and floor is not None, f"nothing judges {context}"
    if limit:
        assert floor <= limit, f"rule {rule}: floor {floor} above the path's limit {limit} for {context}"
    assert floor > 0


@settings(max_examples=300, deadline=None)
@given(contexts())
def test_the_limit_is_its_slowest_part_and_no_faster_than_the_cable(context):
    path = path_limit(context)
    assert [part.mbps for part in path.parts] == sorted(part.mbps for part in path.parts)
    assert all(part.name in PARTS for part in path.parts)
    cable = next((part for part in path.parts if part.name == "cable"), None)
    if cable is not None:
        assert path.mbps <= cable.mbps
    targeted = context["scenario"] not in ("routing", "routing+disk-io", "storage")
    if context["rate_target_mbps"] and targeted and context["direction"] != "board->board":
        assert path.mbps <= context["rate_target_mbps"]


# The shapes of a lab rule docs/hardware-lab.md shows: a model's scenario, one duplex of it, a
# board's link speed, a kernel series of a scenario.
LAB_SHAPES = [
    {"model": "Pi 3B+", "scenario": "ethernet"},
    {"model": "CM4", "scenario": "usb-adapter", "duplex": "full"},
    {"board": "pi4-1", "scenario": ["routing"], "qdisc": "sfq"},
    {"scenario": "udp-*", "os": "FreeBSD*"},
    {"model": "Pi 5", "scenario": "ethernet", "link_speed_mbps": 2500},
]


def _lab(match: dict[str, Any]) -> Thresholds:
    rule = {"id": "ours", "match": match, "min_fraction_of_limit": 0.5, "why": "the lab's"}
    data = {"extends": "shipped", "rules": [rule]}
    lab = thresholds_from_data(data, "lab/thresholds.yaml")
    return Thresholds(lab.source, lab.rules + SHIPPED_RULES.rules, "extends")


def _names(match: dict[str, Any], context: dict[str, Any]) -> bool:
    for key, allowed in match.items():
        options = allowed if isinstance(allowed, list) else [allowed]
        value = str(context.get(key, ""))
        if not any(fnmatch.fnmatchcase(value, str(o)) if "*" in str(o) else value == str(o) for o in options):
            return False
    return True


@pytest.mark.parametrize("shape", LAB_SHAPES, ids=lambda shape: ",".join(shape))
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(context=contexts())
def test_a_lab_rule_judges_exactly_what_it_names(shape, context):
    lab = _lab(shape)
    with_lab = _judged(lab, context)
    if _names(shape, context):
        assert with_lab[0] == "ours"
    else:
        assert with_lab == _judged(SHIPPED_RULES, context)


def test_a_lab_rule_naming_no_scenario_is_refused_with_the_reason():
    with pytest.raises(ConfigError, match=r"names no scenario.*8-byte disk writes.*add match.scenario"):
        thresholds_from_data(
            {"extends": "shipped", "rules": [{"id": "ours", "match": {"model": "Pi 3B+"}, "min_mbps": 250}]},
            "lab/thresholds.yaml",
        )
    with pytest.raises(ConfigError, match=r"scenario is 'ethernt', which names nothing.*use one of"):
        thresholds_from_data(
            {"rules": [{"id": "x", "match": {"scenario": "ethernt"}, "min_mbps": 1}]}, "lab/thresholds.yaml"
        )


def test_the_physics_table_and_the_shipped_rules_cannot_drift_apart():
    assert set(PHYSICS) == set(BOARD_MODELS) - {"other"}, "every Pi model has its ports' physics"
    for physics in PHYSICS.values():
        assert physics.builtin_attach in {"soc", *ETHERNET_OVER_BUS_MBPS}
        assert physics.usb_bus in ETHERNET_OVER_BUS_MBPS
    for rule in SHIPPED_RULES.rules:
        assert "scenario" in rule.match, f"{rule.rule_id} names no scenario"
        assert not {str(m) for m in rule.match.get("model", ())} - set(BOARD_MODELS), rule.rule_id
        assert not {str(p) for p in rule.match.get("limited_by", ())} - set(PARTS), rule.rule_id
        # No rule names a model: a model's floors come from its physics, not from rules.
        assert "model" not in rule.match, f"{rule.rule_id} is a per-model rule"
    named = {str(p) for rule in SHIPPED_RULES.rules for p in rule.match.get("limited_by", ())}
    assert named <= set(PARTS) and "usb2" in named


def test_the_worked_mixed_lab_of_hardware_lab_md_is_what_the_rules_give():
    """docs/hardware-lab.md's table of a mixed lab's floors, made again from the code."""
    boards = [("Pi 3B+", "pi3"), ("Pi 4B", "pi4"), ("Pi 5", "pi5"), ("CM4", "cm4")]
    rows = [
        ("built-in port, one way", {"scenario": "ethernet", "adapter": "builtin", "duplex": "half"}),
        ("built-in port, both ways", {"scenario": "ethernet", "adapter": "builtin", "duplex": "full"}),
        (
            "GbE USB adapter, one way",
            {"scenario": "usb-adapter", "adapter": "rtl8153", "driver": "r8152", "duplex": "half"},
        ),
        (
            "route: built-in LAN, USB WAN",
            {"scenario": "routing", "adapter": "rtl8153", "lan_adapter": "builtin", "qdisc": "sfq"},
        ),
        ("UDP over the built-in port", {"scenario": "udp-sendto", "protocol": "UDP", "adapter": "builtin"}),
    ]
    base = {"link_speed_mbps": 1000, "mtu": 1500, "protocol": "TCP", "streams": 10, "rate_target_mbps": 0}
    lines = [
        "| path | " + " | ".join(f"{m} (`{b}`)" for m, b in boards) + " |",
        "|---|" + "---|" * len(boards),
    ]
    for label, row in rows:
        direction = "download" if row["scenario"] == "routing" else "board->peer"
        cells = []
        for model, board in boards:
            context = {
                "duplex": "half",
                "direction": direction,
                **base,
                **row,
                "model": model,
                "board": board,
            }
            found = judged(SHIPPED_RULES, context)
            assert found.floor is not None
            cells.append(f"{found.floor:.0f} of {found.path.mbps:.0f} ({found.path.part})")
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    doc = (Path(__file__).resolve().parents[2] / "docs" / "hardware-lab.md").read_text(encoding="utf-8")
    assert "\n".join(lines) in doc, "\n".join(lines)


@settings(max_examples=300, deadline=None)
@given(contexts())
def test_a_rule_naming_the_board_wins_over_the_generic_rules_it_replaces(context):
    """The QEMU board's rules carry every key of the generic rule they replace plus the board:
    wherever one of them matches a path that can carry its floor, one of them judges (on the
    OS its images carry: a QNX rule is as specific, and no QEMU board runs QNX)."""
    context = {**context, "board": "qpi", "model": "", "os": OSES[0]}
    context["limited_by"] = path_limit(context).part
    limit = path_limit(context).mbps
    found = SHIPPED_RULES.matching(context, limit)
    if any("board" in rule.match for rule in found):
        assert "board" in found[0].match, [rule.rule_id for rule in found]


def test_a_rule_naming_the_board_wins_over_a_drivers_rule_and_explain_says_so():
    """The QEMU board with an adapter whose driver has its own GbE rule (r8152: 930 Mbit/s) is
    judged by its own collapse floor, not by real silicon's line rate."""
    context = {
        "lab": "lab",
        "board": "qpi",
        "model": "",
        "scenario": "usb-adapter",
        "direction": "board->peer",
        "duplex": "half",
        "protocol": "TCP",
        "link_speed_mbps": 1000,
        "mtu": 1500,
        "adapter": "rtl8153",
        "driver": "r8152",
        "os": OSES[0],
    }
    limit = path_limit(context).mbps
    found = SHIPPED_RULES.matching(context, limit)
    assert [rule.rule_id for rule in found][:2] == ["qpi-adapter-half-duplex", "adapter-rtl8153-half-duplex"]
    lines = SHIPPED_RULES.explain(context, limit)
    assert (
        "  matched and lost: adapter-rtl8153-half-duplex (names no board: the rule naming this board wins over it)"
        in lines
    )
