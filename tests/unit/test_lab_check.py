"""`pinet lab check`: the example hardware lab validates; labgrid's silent cases become errors."""

from __future__ import annotations

import pytest

from pytest_pinet.errors import ConfigError
from pytest_pinet.lab.env_check import check_env_file, root_warnings
from pytest_pinet.lab.inventory import load_inventory
from tests.fixture_paths import LAB

from ..lab_example import keyed_example


def test_the_copied_example_is_refused_naming_its_placeholder_key_and_known_hosts(tmp_path):
    """A lab that copied the example and forgot its own keys learns it now, not at the first
    connection of the night."""
    with pytest.raises(ConfigError) as info:
        check_env_file(LAB / "rpi-lab.yaml")
    said = str(info.value)
    assert "id_ed25519.example: not a private key" in said
    assert "known_hosts.example:2: 192.168.10.41 ssh-ed25519: its key spells 'Example'" in said
    good = keyed_example(tmp_path)
    (tmp_path / "known_hosts.example").write_text("192.168.10.41 ssh-ed25519 AAAA!!notbase64\n")
    with pytest.raises(ConfigError, match=r"known_hosts.example:1: .*its key is not base64"):
        check_env_file(good)


def test_a_host_that_needs_root_and_has_no_become_is_warned_about(tmp_path):
    env = keyed_example(tmp_path)
    assert root_warnings(load_inventory(env)) == []  # the example's peers say become: sudo
    text = env.read_text().replace("pc-lan: {role: peer, become: sudo}", "pc-lan: {role: peer}")
    env.write_text(text)
    (warning,) = root_warnings(load_inventory(env))
    assert warning.startswith("pc-lan logs in as lab without become: sudo: routing cannot run")


def test_example_hardware_lab_validates_without_hardware(tmp_path):
    inventory = check_env_file(keyed_example(tmp_path))
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
    text = (LAB / "rpi-lab.yaml").read_text()
    assert old in text
    bad = keyed_example(tmp_path, text.replace(old, new, 1))
    with pytest.raises(ConfigError) as info:
        check_env_file(bad)
    assert str(bad) in str(info.value)
    assert fragment in str(info.value)


def test_a_real_key_of_any_kind_passes(tmp_path):
    """Real keys are never refused: an encrypted legacy PEM key (with its headers) and
    OpenSSH known_hosts lines of several kinds, hashed hosts and markers included."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    from pytest_pinet.lab.env_check import identity_problem, known_hosts_problems

    key = ec.generate_private_key(ec.SECP256R1())
    pem = tmp_path / "id_ecdsa"
    pem.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.TraditionalOpenSSL,
            serialization.BestAvailableEncryption(b"secret"),
        )
    )
    assert "Proc-Type: 4,ENCRYPTED" in pem.read_text()
    assert identity_problem(pem) == ""
    known = tmp_path / "known_hosts"
    ed = "AAAAC3NzaC1lZDI1NTE5AAAAIGJ0Pjz8pTqYsYQ0p3kVfJ0l7m1I8Zr4xUQ1cT9dVb3o"
    known.write_text(
        f"|1|F1E1KeoE/eEWhi10WpGv4OdiO6Y=|3988QV0VE8wmZL7suNrYQLITLCg= ssh-ed25519 {ed}\n"
        f"@cert-authority *.lab ssh-ed25519 {ed}\n"
        f"[10.0.0.5]:2222,10.0.0.6 ssh-ed25519 {ed} pi5 comment\n"
    )
    assert known_hosts_problems(known) == []


def test_the_coordinated_examples_are_the_rpi_lab_split_into_one_place_per_board(tmp_path, capsys):
    import shutil

    import yaml

    from pytest_pinet.cli.main import main

    keyed_example(tmp_path)  # the lab's key and host keys, where the place files name them
    shutil.copytree(LAB / "coordinated", tmp_path / "coordinated")
    exporter = yaml.safe_load((LAB / "coordinated" / "exporter.yaml").read_text())
    whole = yaml.safe_load((LAB / "rpi-lab.yaml").read_text())
    addresses = {name: t["resources"]["NetworkService"]["address"] for name, t in whole["targets"].items()}
    places = sorted((tmp_path / "coordinated" / "places").glob("*.yaml"))
    assert [p.stem for p in places] == sorted(exporter)  # one place file per exporter group
    for place in places:
        data = yaml.safe_load(place.read_text())
        group = exporter[place.stem]
        for target, config in data["targets"].items():
            assert config["resources"] == {"RemotePlace": {"name": place.stem}}
            # Each host's SSH service is in the place's group under the host's name, at the
            # address the whole lab's env file gives it.
            assert group[target]["cls"] == "NetworkService" and group[target]["address"] == addresses[target]
        inventory = check_env_file(place)  # no coordinator named: the place's targets wait for one
        assert set(inventory.hosts) == set(data["targets"])
        assert main(["lab", "check", str(place)]) == 0
        out = capsys.readouterr().out
        assert (
            f"place {place.stem}: targets " in out
            and "give --coordinator HOST:PORT to check it exists" in out
        )
    # The boards share the peers: both places name them, so both can be held at once.
    assert all({"pc-lan", "pc-inet"} <= set(group) for group in exporter.values())
