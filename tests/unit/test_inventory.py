"""Inventory from a labgrid env file: valid labs load, broken ones say file, key and fix."""

from __future__ import annotations

import copy

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from pytest_pinet.errors import ConfigError
from pytest_pinet.host.remote import SshEndpoint
from pytest_pinet.host.shell import quote
from pytest_pinet.lab.inventory import inventory_from_data, load_inventory


def _env(tmp_path):
    (tmp_path / "known_hosts").write_text("10.0.0.1 ssh-ed25519 AAAA\n")
    (tmp_path / "id").write_text("key")
    return {
        "targets": {
            "pi": {"resources": {"NetworkService": {"address": "10.0.0.1", "username": "root"}}},
            "pc": {
                "resources": [{"NetworkService": {"address": "10.0.0.2", "username": "lab", "port": 2222}}]
            },
        },
        "pinet": {
            "lab": "bench",
            "ssh": {"known_hosts": "known_hosts", "identity": "id"},
            "hosts": {"pi": {"role": "board"}, "pc": {"role": "peer"}},
            "links": [
                {
                    "name": "eth",
                    "board": "pi",
                    "board_interface": "eth0",
                    "board_address": "10.1.0.1",
                    "peer": "pc",
                    "peer_interface": "enp3s0",
                    "peer_address": "10.1.0.2",
                    "adapter": "builtin",
                    "speed_mbps": 1000,
                    "mtu": 1500,
                }
            ],
        },
    }


def test_valid_env_loads(tmp_path):
    path = tmp_path / "env.yaml"
    path.write_text(yaml.safe_dump(_env(tmp_path)))
    inventory = load_inventory(path)
    assert [h.name for h in inventory.boards] == ["pi"]
    assert inventory.hosts["pc"].endpoint.port == 2222
    assert inventory.hosts["pi"].endpoint.known_hosts == tmp_path / "known_hosts"
    assert inventory.link("eth").peer_interface == "enp3s0"
    with pytest.raises(ConfigError, match="no link named 'wifi'"):
        inventory.link("wifi")


BREAKAGES = [
    (lambda d: d.pop("pinet"), "missing ['pinet'] (add pinet: {hosts: ..., links: ...}"),
    (lambda d: d["pinet"].update(colour="red"), "pinet: unknown keys ['colour']"),
    (lambda d: d["pinet"]["hosts"].update(pi={"role": "dut"}), "pinet.hosts.pi.role"),
    (lambda d: d["pinet"]["hosts"].update(ghost={"role": "peer"}), "no labgrid target named 'ghost'"),
    (lambda d: d["targets"]["pi"].pop("resources"), "NetworkService is missing"),
    (lambda d: d["targets"]["pi"]["resources"]["NetworkService"].update(port=70000), "port must be 1..65535"),
    (
        lambda d: d["targets"]["pi"]["resources"]["NetworkService"].update(username="root; reboot"),
        "not a valid user name",
    ),
    (
        lambda d: d["targets"]["pi"]["resources"]["NetworkService"].update(address="10.0.0.1; id"),
        "neither an IP address",
    ),
    (lambda d: d["pinet"]["links"][0].update(board_interface="eth0;reboot"), "not a valid interface name"),
    (lambda d: d["pinet"]["links"][0].update(peer_address="pc"), "not an IP address"),
    (lambda d: d["pinet"]["hosts"]["pc"].update(become="doas"), "pinet.hosts.pc.become is 'doas'"),
    (lambda d: d["pinet"]["hosts"]["pc"].update(os="plan9"), "pinet.hosts.pc.os is 'plan9'"),
    (lambda d: d["pinet"]["links"][0].update(mtu=20), "mtu must be an integer"),
    (lambda d: d["pinet"]["links"][0].update(board="pc"), "is not a board"),
    (lambda d: d["pinet"]["links"][0].pop("peer"), "missing ['peer']"),
    (lambda d: d["pinet"]["ssh"].update(known_hosts="nowhere"), "does not exist"),
    # a name the system refuses to look up (ENAMETOOLONG) is the file's error, not a traceback
    (
        lambda d: d["pinet"]["ssh"].update(known_hosts="a" * 5000),
        "cannot be looked up (File name too long)",
    ),
    (
        lambda d: d["pinet"].update(traffic_turn="b" * 5000 + "/t"),
        "cannot be looked up (File name too long)",
    ),
    (lambda d: d["pinet"]["ssh"].pop("known_hosts"), "pins host keys"),
    (lambda d: d["pinet"].update(routes={"name": "r"}), "pinet.routes must be a list"),
    (lambda d: d["pinet"].update(routes=[{"name": "r", "board": "pi", "lan": "eth"}]), "missing ['wan']"),
    (
        lambda d: d["pinet"].update(routes=[{"name": "r", "board": "pi", "lan": "eth", "wan": "wifi"}]),
        "pinet.routes[0].wan: no link named 'wifi'",
    ),
    (
        lambda d: d["pinet"].update(routes=[{"name": "r", "board": "pi", "lan": "eth", "wan": "eth"}]),
        "two links to two different peers",
    ),
    (
        lambda d: d["pinet"].update(routes=[{"name": "r", "board": "pc", "lan": "eth", "wan": "eth"}]),
        "is not a link of board 'pc'",
    ),
    (
        lambda d: d["pinet"].update(disks=[{"name": "d", "host": "pi", "device": "/dev/sda; reboot"}]),
        "is not a /dev path",
    ),
    (
        lambda d: d["pinet"].update(disks=[{"name": "d", "host": "pi", "device": "/dev/../etc/passwd"}]),
        "is not a /dev path",
    ),
    (
        lambda d: d["pinet"].update(disks=[{"name": "d", "host": "nas", "device": "/dev/sda"}]),
        "'nas' is not in pinet.hosts",
    ),
    (
        lambda d: d["pinet"].update(
            disks=[{"name": "d", "host": "pi", "device": "/dev/sda", "scratch": "yes"}]
        ),
        "scratch must be true or false",
    ),
]


@pytest.mark.parametrize(("breakage", "fragment"), BREAKAGES)
def test_broken_env_names_file_and_key(tmp_path, breakage, fragment):
    data = copy.deepcopy(_env(tmp_path))
    breakage(data)
    with pytest.raises(ConfigError) as info:
        inventory_from_data(data, tmp_path / "env.yaml")
    assert str(tmp_path / "env.yaml") in str(info.value)
    assert fragment in str(info.value)


@pytest.mark.parametrize("text", ["targets: [", "", "42", "targets: {}\n"])
def test_malformed_env_files(tmp_path, text):
    path = tmp_path / "env.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=str(path)):
        load_inventory(path)


def test_password_never_appears_in_repr():
    endpoint = SshEndpoint("pi", "10.0.0.1", "root", 22, None, None, password="hunter2")  # type: ignore[arg-type]
    assert "hunter2" not in repr(endpoint)
    assert "***" in repr(endpoint)


@given(st.lists(st.text(min_size=0, max_size=20), min_size=1, max_size=5))
def test_quote_passes_every_argument_literally(args):
    import shlex

    assert shlex.split(quote(args)) == args
