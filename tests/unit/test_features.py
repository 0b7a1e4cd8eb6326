"""No suite silently dropped: the labgrid features pinet's suites need come from the inventory,
``pinet lab check`` says per suite whether a lab can run it, and a planned test labgrid skips
for a feature the lab lacks counts as not measured, with labgrid's reason."""

from __future__ import annotations

import yaml

from pytest_pinet.cli.main import main
from pytest_pinet.lab.features import declared_features, derived_features, suite_readiness
from pytest_pinet.lab.inventory import inventory_from_data, load_inventory, read_env_data
from tests.fixture_paths import LAB

from ..lab_example import keyed_example

pytest_plugins = ["pytester"]

EXAMPLE = LAB / "rpi-lab.yaml"


def test_the_example_implies_the_features_its_suites_need():
    inventory = load_inventory(EXAMPLE)
    assert derived_features(inventory) == {"usb-ethernet", "usb-disk"}
    assert declared_features(read_env_data(EXAMPLE)) == set()  # nothing to keep in step by hand


def test_a_lab_without_usb_adapters_or_disks_implies_neither(tmp_path):
    data = yaml.safe_load(EXAMPLE.read_text())
    data["pinet"]["links"] = [link for link in data["pinet"]["links"] if link["adapter"] == "builtin"]
    data["pinet"].pop("disks")
    data["pinet"].pop("routes")
    data["pinet"]["ssh"] = {"known_hosts": str(LAB / "known_hosts.example")}
    inventory = inventory_from_data(data, tmp_path / "lab.yaml")
    assert derived_features(inventory) == set()
    report = {suite.suite: suite for suite in suite_readiness(inventory, data)}
    assert report["ethernet"].status == "runs"
    assert report["usb_adapter"].status == "CANNOT RUN"
    assert "no link has a USB adapter" in report["usb_adapter"].why
    assert "labgrid feature usb-ethernet missing" in report["usb_adapter"].why
    assert report["storage"].status == "CANNOT RUN"
    assert report["routing"].status == "CANNOT RUN"


def test_lab_check_on_the_example_says_it_runs_every_suite(capsys, tmp_path):
    assert main(["lab", "check", str(keyed_example(tmp_path))]) == 0
    out = capsys.readouterr().out
    listed = out.split("  suites:\n", 1)[1].splitlines()
    suites = dict(line.strip().split(" ", 1) for line in listed if line.startswith("    "))
    assert "thresholds:" in out.split("  suites:\n", 1)[1]  # then what judges its boards' contexts
    assert set(suites) == {"ethernet", "usb_adapter", "routing", "udp", "storage", "qemu_board"}
    for suite in ("ethernet", "usb_adapter", "routing", "udp", "storage"):
        assert suites[suite].strip().startswith("runs:"), (suite, suites[suite])
    assert "pi4-rtl8153, pi4-ax88179 (labgrid feature usb-ethernet: derived from the inventory)" in out
    assert "usb-ssd on pi4 (labgrid feature usb-disk: derived from the inventory)" in out
    assert suites["qemu_board"].strip().startswith("not for this lab:")


MEASURES = """
import pytest
from pytest_pinet.model import Measurement, TcpDetail, TrafficContext

CONTEXT = TrafficContext(lab="t", scenario="storage", board="pi4", peer="pc", link="eth", adapter="builtin",
                         direction="board->peer", duplex="half", streams=1, duration_s=2, omit_s=0,
                         link_speed_mbps=1000, mtu=1500)

def measure(record):
    record(Measurement(test_id="x", context=CONTEXT, goodput_mbps=941.0, limit_mbps=941.5,
                       started=0, finished=1, detail=TcpDetail(None, 0, (), None, None, None)))

@pytest.mark.lg_feature("usb-disk")
def test_the_lab_has_a_disk(pinet_record_measurement):
    measure(pinet_record_measurement)

@pytest.mark.lg_feature("can-bus")
def test_the_lab_has_no_can_bus(pinet_record_measurement):
    measure(pinet_record_measurement)

@pytest.mark.lg_feature("usb-disk")
def test_not_pinets(tmp_path):
    pass
"""
