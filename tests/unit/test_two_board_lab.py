"""The two-board default lab's plan and joint env file, without building anything."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from pytest_pinet.lab.inventory import load_inventory
from pytest_pinet.virtlab import envfile, qemu_board, two_boards
from pytest_pinet.virtlab.topology import LabSpec, lab_spec, parts

from .test_qemu_parts import _image


@pytest.fixture
def pair(tmp_path: Path) -> LabSpec:
    """The default lab pinet3's plan, with both labs' env files written as `up` writes them."""
    made = lab_spec("pinet3", state_root=tmp_path / "state")
    netns, qemu = parts(made)
    for spec, host_key in ((netns, "ssh-ed25519 AAAAnetns"), (qemu, "ssh-ed25519 AAAAqemu")):
        spec.state_dir.mkdir(parents=True)
        (spec.state_dir / "id_ed25519.pub").write_text("ssh-ed25519 AAAAclient pinet-client@pinet3\n")
        (spec.state_dir / "id_ed25519").write_text("not a key\n")
        (spec.state_dir / "known_hosts").write_text(f"{spec.mgmt_address(spec.board_host.name)} {host_key}\n")
    envfile.write_env_file(netns, {"usb-disk": "/dev/loop7"})
    envfile.write_env_file(qemu, {"usb-disk": qemu_board.USB_DISK_DEVICE}, _image(tmp_path))
    return made


def test_the_default_lab_plans_two_boards_with_unique_names(pair):
    assert pair.is_pair and lab_spec().is_pair
    boards = [h.name for h in pair.hosts if h.role == "board"]
    assert boards == ["pi", "pi3", "qpi"]
    assert [h.name for h in pair.hosts if h.role == "peer"] == ["pc", "inet", "qpc", "qinet"]
    assert [link.name for link in pair.links] == ["eth", "usb", "jumbo", "pi3-eth", "qeth", "qusb"]
    speeds = {link.name: (link.speed_mbps, link.mtu, link.port_mbps) for link in pair.links}
    # measured by the main job: a jumbo cable, and a Pi 3B+ whose GbE port carries what USB 2
    # does (318 Mbit/s of wire: 300 of TCP payload), its cable still GbE
    assert speeds["jumbo"] == (1000, 9000, 0) and speeds["pi3-eth"] == (1000, 1500, 318)
    assert next(h for h in pair.hosts if h.name == "pi3").model == "Pi 3B+"
    assert [(r.name, r.board, r.lan, r.wan) for r in pair.routes] == [
        ("pi-router", "pi", "eth", "usb"),
        ("qpi-router", "qpi", "qusb", "qeth"),
    ]
    qusb = next(link for link in pair.links if link.name == "qusb")
    assert (qusb.board, qusb.peer, qusb.speed_mbps) == ("qpi", "qpc", 10)
    netns, qemu = parts(pair)
    assert (netns.name, netns.board, qemu.name, qemu.board) == ("pinet3", "netns", "pinet3q", "qemu")
    # own address plans: the companion's is its lab's number plus 100
    assert (netns.mgmt_gateway, qemu.mgmt_gateway) == ("10.203.3.1", "10.203.103.1")
    assert pair.env_file.name == "two-boards.yaml" and netns.env_file.name == "env.yaml"
    # interface names stay within the kernel's 15 characters for every place number
    for number in ("", "9", "99"):
        _, companion = parts(lab_spec(f"pinet{number}"))
        assert all(len(companion.mgmt_veth(h.name)) <= 15 for h in companion.hosts)


def test_the_joint_env_file_is_one_inventory_of_both_boards(pair):
    two_boards.write_pair_env(pair)
    inventory = load_inventory(pair.env_file)
    assert [b.name for b in inventory.boards] == ["pi", "pi3", "qpi"]
    assert inventory.model_of("pi3") == "Pi 3B+" and inventory.model_of("pi") == ""
    assert sorted(inventory.hosts) == ["inet", "pc", "pi", "pi3", "qinet", "qpc", "qpi"]
    assert {link.name: (link.board, link.peer) for link in inventory.links} == {
        "eth": ("pi", "pc"),
        "usb": ("pi", "inet"),
        "jumbo": ("pi", "inet"),
        "pi3-eth": ("pi3", "pc"),
        "qeth": ("qpi", "qinet"),
        "qusb": ("qpi", "qpc"),
    }
    assert {d.name: d.host for d in inventory.disks} == {"usb-disk": "pi", "qusb-disk": "qpi"}
    assert inventory.hosts["qpi"].power_on_at_start and not inventory.absent
    data = yaml.safe_load(pair.env_file.read_text())
    assert "QEMUDriver" in data["targets"]["qpi"]["drivers"]
    # the companion's peers are still switched through their own lab's names
    assert "--lab pinet3q" in data["targets"]["qpc"]["drivers"]["ExternalPowerDriver"]["cmd_on"]
    assert data["targets"]["qpc"]["drivers"]["ExternalPowerDriver"]["cmd_on"].endswith(" pc on")
    assert data["tools"]["qemu"] == str(qemu_board.wrapper_path(parts(pair)[1]))
    known = (pair.state_dir / two_boards.KNOWN_HOSTS).read_text().splitlines()
    assert known == ["10.203.3.10 ssh-ed25519 AAAAnetns", "10.203.103.10 ssh-ed25519 AAAAqemu"]
    assert data["pinet"]["ssh"]["identity"] == str(pair.state_dir / "id_ed25519")


def test_a_machine_without_qemu_gets_the_namespace_board_and_the_reason(pair, monkeypatch):
    monkeypatch.setattr("shutil.which", lambda tool: None if tool.startswith("qemu") else "/bin/x")
    why = two_boards.qemu_missing()
    assert (
        why
        == "qemu-system-x86_64 is not installed (apt install qemu-system-x86; scripts/setup.sh installs it)"
    )
    two_boards.write_pair_env(pair, why)
    inventory = load_inventory(pair.env_file)
    assert [b.name for b in inventory.boards] == ["pi", "pi3"]
    assert inventory.absent == {"qpi": why, "qeth": why, "qusb": why}


def test_the_summary_names_what_the_lab_could_not_bring_up_in_one_line():
    from pytest_pinet.plugin.end_of_run import absent_lines

    why = "qemu-system-x86_64 is not installed"
    facts = [{"kind": "absent", "absent": {"qpi": why, "qeth": why, "qusb": why}}] * 2
    assert absent_lines(facts) == [f"pinet: not in this lab, not measured: qpi, qeth, qusb: {why}"]
    assert absent_lines([{"kind": "boot"}]) == []
