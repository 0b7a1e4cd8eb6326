"""Per-model thresholds and images: a board's ``model:`` is validated against the known
models, threshold rules match it, a lab file extends or replaces the shipped rules as it
says, and an image names the kernel each model boots."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from pytest_pinet.errors import ConfigError
from pytest_pinet.judge.threshold_rules import SHIPPED, describe_mode, load_thresholds, thresholds_from_data
from pytest_pinet.lab.inventory import load_inventory
from tests.fixture_paths import EXAMPLE_ENV

from .test_inventory import _env

REPO = Path(__file__).resolve().parents[2]
GBE = {"scenario": "ethernet", "duplex": "half", "link_speed_mbps": 1000, "mtu": 1500, "board": "pi"}


def _inventory(tmp_path: Path, model: object):
    env = _env(tmp_path)
    env["pinet"]["hosts"]["pi"]["model"] = model
    path = tmp_path / "env.yaml"
    path.write_text(yaml.safe_dump(env))
    return load_inventory(path)


def test_a_board_model_is_one_of_the_known_models(tmp_path):
    assert _inventory(tmp_path, "Pi 5").model_of("pi") == "Pi 5"
    assert _inventory(tmp_path, "CM4").model_of("pi") == "CM4"
    with pytest.raises(ConfigError, match=r"pinet.hosts.pi.model is 'Pi5', not a known board model") as info:
        _inventory(tmp_path, "Pi5")
    assert "did you mean 'Pi 5'?" in str(info.value) and "'Pi 4B'" in str(info.value)
    with pytest.raises(ConfigError, match="not a known board model"):
        _inventory(tmp_path, 4)


def test_rules_match_the_model_and_a_misspelt_model_in_a_rule_is_an_error():
    thresholds = thresholds_from_data(
        {
            "rules": [
                {"id": "gbe", "match": {"scenario": "*", "link_speed_mbps": 1000}, "min_mbps": 940},
                {
                    "id": "pi5",
                    "match": {"scenario": "*", "link_speed_mbps": 1000, "model": "Pi 5"},
                    "min_mbps": 941,
                },
                {
                    "id": "cm",
                    "match": {"scenario": "*", "link_speed_mbps": 1000, "model": "CM*"},
                    "min_mbps": 900,
                },
            ]
        },
        "t.yaml",
    )
    picked = {m: thresholds.judge({**GBE, "model": m}, 940.5, None) for m in ("Pi 5", "Pi 4B", "CM4", "")}
    assert {m: (c.rule_id, c.passed) for m, c in picked.items() if c} == {
        "Pi 5": ("pi5", False),
        "Pi 4B": ("gbe", True),
        "CM4": ("cm", True),
        "": ("gbe", True),
    }
    with pytest.raises(ConfigError, match=r"rules\[0\] \(x\).*match.model is 'Pi 4'.*use one of"):
        thresholds_from_data(
            {"rules": [{"id": "x", "match": {"model": "Pi 4", "scenario": "*"}, "min_mbps": 1}]}, "t.yaml"
        )


def test_a_lab_file_extends_or_replaces_the_shipped_rules_as_it_says(tmp_path):
    shipped = load_thresholds(SHIPPED)
    own = tmp_path / "thresholds.yaml"
    rule = {"id": "gbe-tcp-half-duplex", "match": {"scenario": "ethernet", "model": "Pi 5"}, "min_mbps": 900}
    extra = {
        "id": "pi5-only",
        "match": {"scenario": "storage", "model": "Pi 5", "block_bytes": 3},
        "min_mbps": 1,
    }
    own.write_text(yaml.safe_dump({"extends": "shipped", "rules": [rule, extra]}))
    extended = load_thresholds(own)
    ids = [r.rule_id for r in extended.rules]
    assert extended.mode == "extends" and len(ids) == len(shipped.rules) + 1  # one overridden by id
    assert ids[:2] == ["gbe-tcp-half-duplex", "pi5-only"] and ids.count("gbe-tcp-half-duplex") == 1
    assert extended.judge({**GBE, "model": "Pi 5"}, 910, None).rule_id == "gbe-tcp-half-duplex"  # type: ignore[union-attr]
    routing = {
        "scenario": "routing",
        "direction": "download",
        "duplex": "half",
        "link_speed_mbps": 1000,
        "mtu": 1500,
    }
    assert extended.judge(routing, 935, None).rule_id == "routing-download"  # type: ignore[union-attr]
    assert "adds to the shipped rules" in describe_mode(own)
    own.write_text(yaml.safe_dump({"replace": True, "rules": [extra]}))
    assert [r.rule_id for r in load_thresholds(own).rules] == ["pi5-only"]
    assert "its own rules only" in describe_mode(own)
    assert describe_mode(SHIPPED) == "the shipped rules"
    for bad, says in (
        ({"extends": "lab", "rules": []}, "extends is 'lab'"),
        ({"extends": "shipped", "replace": True, "rules": []}, "contradict each other"),
        ({"replace": "yes", "rules": []}, "replace must be true or false"),
    ):
        own.write_text(yaml.safe_dump(bad))
        with pytest.raises(ConfigError, match=says):
            load_thresholds(own)


def test_the_example_gives_each_model_its_raspberry_pi_os_kernel():
    inventory = load_inventory(EXAMPLE_ENV)
    assert (inventory.model_of("pi4"), inventory.model_of("pi5")) == ("Pi 4B", "Pi 5")
    assert inventory.image_for("rpios-bookworm-6.12", "pi5").kernel_matches("6.12.25+rpt-rpi-2712")
    assert not inventory.image_for("rpios-bookworm-6.12", "pi5").kernel_matches("6.12.25+rpt-rpi-v8")
    assert inventory.image_for("rpios-bookworm-6.12", "pi4").kernel_matches("6.12.25+rpt-rpi-v8")


def test_a_pi5_given_an_image_that_promises_the_pi4_kernel_is_an_error_now(tmp_path):
    data = yaml.safe_load(EXAMPLE_ENV.read_text())
    data["pinet"]["images"][0]["kernel"] = "6.6.*+rpt-rpi-v8"  # the old example: one kernel for both
    for name in ("known_hosts.example", "id_ed25519.example"):
        (tmp_path / name).write_text((EXAMPLE_ENV.parent / name).read_text())
    (tmp_path / "env.yaml").write_text(yaml.safe_dump(data))
    with pytest.raises(ConfigError, match=r"expects 6.6.\*\+rpt-rpi-v8, but pi5 is a Pi 5.*-rpi-2712"):
        load_inventory(tmp_path / "env.yaml")
    data["pinet"]["images"][0]["kernel"] = {"Pi 4B": "6.6.*+rpt-rpi-v8"}  # no kernel for the Pi 5
    (tmp_path / "env.yaml").write_text(yaml.safe_dump(data))
    with pytest.raises(ConfigError, match=r"names a kernel for \['Pi 4B'\], and board pi5 is a Pi 5") as info:
        load_inventory(tmp_path / "env.yaml")
    assert "give pi5 a model" not in str(info.value) and '"rpi-2712": "..."' in str(info.value)
    # A kernel per flavour covers every model booting it: a model added later needs no edit here.
    data["pinet"]["images"][0]["kernel"] = {"rpi-v8": "6.6.*+rpt-rpi-v8", "rpi-2712": "6.6.*+rpt-rpi-2712"}
    (tmp_path / "env.yaml").write_text(yaml.safe_dump(data))
    inventory = load_inventory(tmp_path / "env.yaml")
    assert inventory.image_for("rpios-bookworm-6.6", "pi5").kernel == "6.6.*+rpt-rpi-2712"


def test_a_per_model_kernel_names_known_models_and_a_kernel_for_each(tmp_path):
    data = yaml.safe_load(EXAMPLE_ENV.read_text())
    for name in ("known_hosts.example", "id_ed25519.example"):
        (tmp_path / name).write_text((EXAMPLE_ENV.parent / name).read_text())
    for kernel, says in (
        (
            {"Pi 4B": "6.6.*+rpt-rpi-v8", "Pi5": "6.6.*"},
            r"\.kernel: 'Pi5' is not a known board model.*'Pi 5'",
        ),
        ({"Pi 4B": "6.6.*+rpt-rpi-v8", "Pi 5": " "}, r"\.kernel\.Pi 5 must be the release uname -r shows"),
        ({}, r"\.kernel must be the release uname -r shows, a pattern, or one per model"),
    ):
        data["pinet"]["images"][0]["kernel"] = kernel
        (tmp_path / "env.yaml").write_text(yaml.safe_dump(data))
        with pytest.raises(ConfigError, match=r"pinet.images\[0\] \(rpios-bookworm-6.6\)" + says):
            load_inventory(tmp_path / "env.yaml")
