"""Profiles file: the shipped one loads; mistakes name file, profile and key."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from pytest_pinet.errors import ConfigError, Unsupported
from pytest_pinet.host.cpu_tunables import IrqAffinity, QueueMask
from pytest_pinet.host.net_tunables import Sysctl
from pytest_pinet.host.profiles import load_profiles, profiles_from_data
from pytest_pinet.host.tunables import SETTING_MARK
from pytest_pinet.model.lab import LinkEntry
from tests.fixture_paths import LAB_OUTPUTS

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


# --- an interface's IRQs: named by the inventory, called like the interface, or its device's ---


QPI_INTERRUPTS = LAB_OUTPUTS / "qpi-debian12-k6.1-proc-interrupts.txt"


class _FakeBoard:
    """A Linux board answering the interrupt table and sysfs's listing of a device's IRQs."""

    name = "qpi"
    sudo = False

    def __init__(self, interrupts: str, device_irqs: dict[str, str]) -> None:
        from pytest_pinet.host.platform.linux import LinuxPlatform

        self.platform = LinuxPlatform()
        self.interrupts = interrupts
        self.device_irqs = device_irqs
        self.asked: list[str] = []

    def run_shell(self, script, *, timeout=60.0, root=False, cleanup=False):
        from pytest_pinet.host.remote import CommandResult

        self.asked.append(script)
        if "/proc/interrupts" in script:
            return CommandResult(script, 0, self.interrupts, "")
        for interface, irqs in self.device_irqs.items():
            if f"/sys/class/net/{interface}/device" in script:
                return CommandResult(script, 0 if irqs else 4, irqs, "")
        if "smp_affinity_list" in script and "cat" in script:
            if SETTING_MARK not in script:
                return CommandResult(script, 0, "0-1\n", "")
            # several IRQs read in one round trip: each answer after its mark
            asked = re.findall(r"/proc/irq/(\d+)/smp_affinity_list", script)
            return CommandResult(script, 0, "".join(f"{SETTING_MARK}{irq}\n0-1\n" for irq in asked), "")
        return CommandResult(script, 0, "", "")


def _Board(interrupts: str, device_irqs: dict[str, str]) -> Any:
    """A :class:`_FakeBoard` where a RemoteHost is expected."""
    return _FakeBoard(interrupts, device_irqs)


def test_virtio_irqs_are_found_from_the_interfaces_device_not_its_name():
    board = _Board(QPI_INTERRUPTS.read_text(), {"eth0": "30\n31\n32\n", "eth1": "34\n35\n36\n"})
    assert IrqAffinity("eth0", (1,)).read(board) == {"30": "0-1", "31": "0-1", "32": "0-1"}
    # a USB adapter's interrupts are its host controller's
    assert list(IrqAffinity("eth1", (1,)).read(board)) == ["34", "35", "36"]


def test_the_inventory_names_irqs_by_name_or_number():
    board = _Board(QPI_INTERRUPTS.read_text(), {})
    pinned = IrqAffinity("eth0", (1,), ("virtio1-input.0", "virtio1-output.0", "34"))
    assert list(pinned.read(board)) == ["31", "32", "34"]
    assert not any("/sys/class/net" in script for script in board.asked)  # named: no guessing


def test_irqs_named_like_the_interface_come_first():
    pi4 = next(LAB_OUTPUTS.glob("rpi4b*proc_interrupts*"))
    board = _Board(pi4.read_text(), {"eth0": "99\n"})
    assert len(IrqAffinity("eth0", (1, 2)).read(board)) == 2  # genet's two rows called eth0
    assert not any("/sys/class/net" in script for script in board.asked)


def test_an_interface_without_irqs_is_unsupported_with_where_to_name_them():
    board = _Board(QPI_INTERRUPTS.read_text(), {"eth0": ""})
    with pytest.raises(
        Unsupported, match=r"no IRQ of eth0, by name or from its device .*links\[\]\.board_irqs"
    ):
        IrqAffinity("eth0", (1,)).read(board)
    named = _Board(QPI_INTERRUPTS.read_text(), {})
    with pytest.raises(Unsupported, match=r"no IRQ among \['virtio9-input.0'\] \(named by the inventory\)"):
        IrqAffinity("eth0", (1,), ("virtio9-input.0",)).read(named)


def test_a_link_hands_its_named_irqs_to_the_board_side_only():
    link = LinkEntry(
        "qeth",
        "qpi",
        "eth0",
        "10.0.0.1",
        "qinet",
        "eth0",
        "10.0.0.2",
        "virtio",
        1000,
        1500,
        ("virtio1-input.0",),
        (),
    )
    (board_pin,) = [
        t
        for t in load_profiles(REPO / "pytest_pinet" / "data" / "profiles.yaml")["irq-pinned"].tunables(
            "board", link
        )
        if isinstance(t, IrqAffinity)
    ]
    assert board_pin.irqs == ("virtio1-input.0",)
