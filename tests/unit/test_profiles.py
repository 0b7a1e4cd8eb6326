"""Profiles file: the shipped one loads; mistakes name file, profile and key."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from pytest_pinet.errors import ConfigError
from pytest_pinet.host.cpu_tunables import IrqAffinity, QueueMask
from pytest_pinet.host.net_tunables import Sysctl
from pytest_pinet.host.profiles import load_profiles, profiles_from_data
from pytest_pinet.model.lab import LinkEntry

REPO = Path(__file__).resolve().parents[2]
LINK = LinkEntry("eth", "pi", "eth0", "10.0.0.1", "pc", "enp3s0", "10.0.0.2", "builtin", 1000, 1500)


def test_shipped_profiles_hold_the_seed_set():
    profiles = load_profiles(REPO / "pytest_pinet" / "data" / "profiles.yaml")
    assert {"stock", "irq-pinned", "irq-pinned-rps-xps"} <= set(profiles)
    assert profiles["stock"].tunables("board", LINK) == []
    pinned = profiles["irq-pinned-rps-xps"].tunables("board", LINK)
    assert pinned[0] == IrqAffinity("eth0", (1, 2))  # "link" resolved to the board's interface
    assert {t.describe() for t in pinned[1:]} == {"RPS on eth0: CPUs all", "XPS on eth0: CPUs all"}
    assert all(isinstance(t, IrqAffinity | QueueMask) for t in pinned)


def test_peer_interfaces_resolve_to_the_peer_side():
    data = {"profiles": {"fwd": {"peer": {"ip_forward": True, "mtu": {"link": 9000}}}}}
    tunables = profiles_from_data(data, "p.yaml")["fwd"].tunables("peer", LINK)
    assert tunables[0] == Sysctl("net.ipv4.ip_forward", "1")
    assert tunables[1].describe() == "MTU 9000 on enp3s0"


@pytest.mark.parametrize(
    ("profile", "fragment"),
    [
        ({"board": {"turbo": True}}, "unknown tunables ['turbo']"),
        ({"board": {"irq_affinity": {"eth0": "cpu1"}}}, "list of CPU numbers"),
        ({"board": {"rps": {"eth0;reboot": "all"}}}, "is not an interface name"),
        ({"board": {"mtu": {"link": 20}}}, "MTU 68..65535"),
        ({"board": {"governor": "performance; reboot"}}, "not a governor name"),
        ({"board": {"qdisc": {"link": "sfq $(reboot)"}}}, "not a qdisc spec"),
        ({"board": {"sysctl": {"../../etc/passwd": 1}}}, "not a sysctl key"),
        ({"board": {"offloads": {"link": {"tso": "no"}}}}, "true/false"),
        ({"board": {"ip_forward": "yes"}}, "true or false"),
        ({"board": {"cpu_mhz": 99999}}, "MHz 100..10000"),
        ({"dut": {}}, "unknown keys ['dut']"),
    ],
)
def test_bad_profiles_name_file_profile_and_key(tmp_path, profile, fragment):
    path = tmp_path / "profiles.yaml"
    path.write_text(yaml.safe_dump({"profiles": {"mine": profile}}))
    with pytest.raises(ConfigError) as info:
        load_profiles(path)
    assert str(path) in str(info.value)
    assert "profiles.mine" in str(info.value)
    assert fragment in str(info.value)


def test_malformed_profiles_file(tmp_path):
    path = tmp_path / "profiles.yaml"
    path.write_text("profiles: {a: [")
    with pytest.raises(ConfigError, match="malformed YAML"):
        load_profiles(path)
