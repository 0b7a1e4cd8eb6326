"""`pinet lab check`: the example hardware lab validates; labgrid's silent cases become errors."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from pytest_pinet.errors import ConfigError
from pytest_pinet.lab.check import check_env_file

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_example_hardware_lab_validates_without_hardware():
    inventory = check_env_file(EXAMPLES / "rpi-lab.yaml")
    assert sorted(h.name for h in inventory.boards) == ["pi4", "pi5"]
    assert sorted(h.name for h in inventory.peers) == ["pc-inet", "pc-lan"]
    assert {link.adapter for link in inventory.links} == {"builtin", "rtl8153", "ax88179"}


@pytest.mark.parametrize(
    ("old", "new", "fragment"),
    [
        ("SerialDriver: {}", "SerialDriver: {baudrate: 9600}", "unsupported attribute 'baudrate'"),
        ("NetworkSerialPort:", "NetworkSerialPortt:", "unknown resource class NetworkSerialPortt"),
        ("NetworkPowerDriver: {delay: 3.0}", "NetworkPowerDriver: {delay: 3}", "targets.pi4"),
        ("adapter: rtl8153", "adapter: rtl8153, colour: red", "unknown keys ['colour']"),
    ],
)
def test_mistakes_name_file_and_target(tmp_path, old, new, fragment):
    for example in EXAMPLES.glob("*.example"):
        shutil.copy(example, tmp_path)
    text = (EXAMPLES / "rpi-lab.yaml").read_text()
    assert old in text
    bad = tmp_path / "lab.yaml"
    bad.write_text(text.replace(old, new, 1))
    with pytest.raises(ConfigError) as info:
        check_env_file(bad)
    assert str(bad) in str(info.value)
    assert fragment in str(info.value)
