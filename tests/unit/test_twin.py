"""The twin of an env file, planned from the file itself: no namespaces, no root."""

from __future__ import annotations

import pytest

from pytest_pinet.errors import PinetError
from pytest_pinet.virtlab import twin, twin_networkd, two_boards, virtual_lab
from pytest_pinet.virtlab.topology import HostSpec, LabSpec
from tests.fixture_paths import EXAMPLE_ENV


def test_the_plan_keeps_the_files_hosts_cables_and_last_octets(tmp_path):
    spec = twin.plan(EXAMPLE_ENV, "pinet45", tmp_path)
    assert [(h.name, h.role, h.mgmt) for h in spec.hosts] == [
        ("pi4", "board", "10.203.45.41"),
        ("pi5", "board", "10.203.45.51"),
        ("pc-lan", "peer", "10.203.45.11"),
        ("pc-inet", "peer", "10.203.45.12"),
    ]
    first = spec.links[0]
    assert (first.board_interface, first.peer, first.peer_interface) == ("eth0", "pc-lan", "enp3s0")
    assert spec.link_address(first, "board") == "10.10.1.1"
    assert spec.link_address(first, "peer") == "10.10.1.100"
    assert spec.mgmt_address("pc-inet") == "10.203.45.12"
    assert spec.links_provisioned  # the lab's provisioning addresses the links, not ``up``
    assert [r.name for r in spec.routes] == ["pi4-router"] and [d.host for d in spec.disks] == ["pi4"]


def test_a_long_host_name_gets_a_short_management_interface():
    spec = LabSpec(name="pinet45", hosts=(HostSpec("pi4", "board"), HostSpec("pc-inet", "peer")))
    assert spec.mgmt_veth("pi4") == "pinet45-m-pi4"
    assert spec.mgmt_veth("pc-inet") == "pinet45-m1"  # "pinet45-m-pc-inet" is 17 > 15 characters
    assert all(len(spec.mgmt_veth(h.name)) <= 15 for h in spec.hosts)


def test_the_map_changes_what_differs_and_nothing_else(tmp_path, monkeypatch):
    spec = twin.plan(EXAMPLE_ENV, "pinet45", tmp_path)
    image = spec.disk_image(spec.disks[0])
    monkeypatch.setattr(virtual_lab, "loop_devices", lambda under: [("/dev/loop7", str(image))])
    lab = twin.Twin(spec, EXAMPLE_ENV)
    table = twin.substitutions(lab)
    assert table["192.168.10."] == "10.203.45."
    assert table["/dev/sda"] == "/dev/loop7"
    assert table["username: lab"] == f"username: {twin.TWIN_USER}"
    assert table["adapter: rtl8153"] == table["adapter: ax88179"] == "adapter: emulated-usb"
    text = EXAMPLE_ENV.read_text(encoding="utf-8")
    changed = twin.substitute(text, table)
    assert "192.168.10." not in changed and '{model: poe_mib, host: 10.203.45.2, index: "5"}' in changed
    # The structure is the file's: the same lines, each the same or substituted.
    assert len(changed.splitlines()) == len(text.splitlines())
    assert "name: pi4-rtl8153" in changed  # a cable's name is not its adapter


def test_substitute_takes_the_longer_key_first():
    table = {"a": "x", "a/b": "y"}
    assert twin.substitute("a/b a", table) == "y x"


def test_the_files_power_devices_and_console_lines():
    assert twin._power_ports(EXAMPLE_ENV) == {
        "192.168.10.2": {"model": "poe_mib", "ports": {"3": "pi4", "5": "pi5"}},
        "192.168.10.3": {"model": "gude24", "ports": {"1": "pc-lan", "2": "pc-inet"}},
    }
    assert twin._consoles(EXAMPLE_ENV) == {
        "192.168.10.5": [
            twin.ConsoleLine("pi4", "192.168.10.5", 4001, "rfc2217"),
            twin.ConsoleLine("pi5", "192.168.10.5", 4002, "raw"),
        ]
    }


def test_a_console_line_in_a_protocol_labgrid_lacks_is_refused(tmp_path):
    text = EXAMPLE_ENV.read_text(encoding="utf-8").replace("protocol: raw", "protocol: ssh")
    env = tmp_path / "rpi-lab.yaml"
    env.write_text(text, encoding="utf-8")
    with pytest.raises(PinetError, match="pi5's NetworkSerialPort protocol 'ssh': rfc2217 or raw"):
        twin._consoles(env)


def test_a_networkd_file_is_read_as_systemd_does():
    text = "# a comment\n[Match]\nName=enp3s0\n\n[Link]\nMTUBytes=1500\n[Network]\nAddress=10.10.1.100/24\nAddress=fd00::1/64\n"
    sections = twin_networkd.read_networkd(text)
    assert sections["Match"]["Name"] == ["enp3s0"]
    assert sections["Network"]["Address"] == ["10.10.1.100/24", "fd00::1/64"]
    with pytest.raises(PinetError, match="cannot read"):
        twin_networkd.read_networkd("Name=enp3s0\n")


def test_a_file_without_a_pinet_section_is_no_lab_to_twin(tmp_path):
    bare = tmp_path / "env.yaml"
    bare.write_text("targets: {}\n", encoding="utf-8")
    with pytest.raises(PinetError, match="no pinet: section"):
        twin.plan(bare, "pinet45", tmp_path)


def test_the_qemu_board_is_the_files_last_board_and_the_plans_first(tmp_path, monkeypatch):
    monkeypatch.setattr(two_boards, "qemu_missing", lambda: "")
    assert twin.qemu_choice(EXAMPLE_ENV) == "pi5"
    spec = twin.plan(EXAMPLE_ENV, "pinet45", tmp_path, "pi5")
    assert spec.is_qemu and spec.board_host.name == "pi5" and twin.qemu_host(spec) == "pi5"
    assert [h.name for h in spec.hosts] == ["pi5", "pi4", "pc-lan", "pc-inet"]
    assert spec.mgmt_address("pi5") == "10.203.45.51" and spec.image == twin.QEMU_IMAGE
    # A machine without QEMU twins every board as a namespace, and says nothing is QEMU.
    monkeypatch.setattr(two_boards, "qemu_missing", lambda: "qemu-system-x86_64 is not installed")
    assert twin.qemu_choice(EXAMPLE_ENV) == ""
    assert twin.qemu_host(twin.plan(EXAMPLE_ENV, "pinet45", tmp_path, "")) == ""


def test_the_twins_board_gets_no_key_from_pinet(tmp_path, monkeypatch):
    """Its key comes by the page's step: the kernel command line names its addresses only."""
    from pytest_pinet.virtlab import qemu_board

    spec = twin.plan(EXAMPLE_ENV, "pinet45", tmp_path, "pi5")
    line = qemu_board.boot_args(spec, "ssh-ed25519 AAAAC3Nz pinet")
    assert "pinet.authkey" not in line
    assert "pinet.if=52:54:00:5e:2d:00,mgmt0,10.203.45.51/24,1500" in line
    assert ",eth0,10.10.4.1/24,1500," in line  # the flashed image's address of its one cable
    own = twin.plan(EXAMPLE_ENV, "pinet45", tmp_path, "")  # links provisioned, but no QEMU board
    assert not own.is_qemu


def test_networkd_is_applied_as_ip_commands():
    said, commands = twin_networkd.networkd_ip(
        "10-pinet-eth0.network",
        "[Match]\nName=eth0\n[Link]\nMTUBytes=9000\n[Network]\nAddress=10.10.4.1/24\n",
    )
    assert said == "eth0 10.10.4.1/24"
    assert commands == [
        ["link", "set", "eth0", "mtu", "9000"],
        ["addr", "replace", "10.10.4.1/24", "dev", "eth0"],
        ["link", "set", "eth0", "up"],
    ]
    with pytest.raises(PinetError, match="one interface"):
        twin_networkd.networkd_ip("x.network", "[Match]\n[Network]\nAddress=10.0.0.1/24\n")
