"""Facts parsers on real Pi outputs (fixtures/lab-outputs, with their sources) and our own recordings."""

from __future__ import annotations

import pytest

from pytest_pinet.host.facts_parse import (
    interrupt_deltas,
    parse_ethtool_features,
    parse_ethtool_info,
    parse_ethtool_settings,
    parse_lsusb_tree,
    parse_os_release,
    parse_proc_interrupts,
    parse_throttled,
    usb_speed_of_driver,
)
from tests.fixture_paths import LAB_OUTPUTS


def corpus(name: str) -> str:
    return (LAB_OUTPUTS / name).read_text(encoding="utf-8")


def test_pi4_interrupts_with_shell_prompt_and_pinned_genet():
    table = parse_proc_interrupts(
        corpus("rpi4b_alpine3.15_5.15.4_proc_interrupts_usb-nic__idx19754802163.txt")
    )
    assert table.cpus == 4
    eth0 = table.for_name("eth0")
    assert [(line.irq, line.counts) for line in eth0] == [
        ("38", (780, 313196, 0, 0)),
        ("39", (11, 0, 4358, 0)),
    ]
    xhci = table.lines["46"]
    assert (xhci.chip, xhci.hwirq, xhci.trigger, xhci.names) == (
        "BRCM STB PCIe MSI",
        "524288",
        "Edge",
        ("xhci_hcd",),
    )
    assert table.lines["IPI5"].total == 485339 + 84509 + 175734 + 43537
    assert "lbox" not in " ".join(table.lines)  # the prompt and the failed echo are not rows


def test_pi2_3_interrupts_legacy_controller_fiq_and_err():
    table = parse_proc_interrupts(corpus("rpi2or3_proc_interrupts__idx4326675351.txt"))
    assert table.cpus == 4
    usb = table.lines["62"]
    assert usb.chip == "ARMCTRL-level" and usb.counts[0] == 139285704
    assert usb.names == ("dwc_otg", "dwc_otg_pcd", "dwc_otg_hcd:usb1")
    assert table.lines["FIQ"].counts == () and table.lines["FIQ"].names == ("usb_fiq",)
    assert table.lines["Err"].counts == (0,)


def test_x86_interrupts_and_deltas():
    text = (LAB_OUTPUTS / "x86-2cpu-virtio-proc-interrupts.txt").read_text()
    before = parse_proc_interrupts(text)
    assert before.cpus == 2
    stats = before.lines["31"]
    assert (stats.hwirq, stats.trigger, stats.names) == ("3", "edge", ("virtio0-stats",))
    after_text = text.replace(stats.names[0], stats.names[0])  # same table ...
    lines = after_text.splitlines()
    row = next(i for i, line in enumerate(lines) if line.strip().startswith("31:"))
    lines[row] = lines[row].replace(f"{stats.counts[1]:>10}", f"{stats.counts[1] + 25:>10}")
    deltas = interrupt_deltas(before, parse_proc_interrupts("\n".join(lines)), "virtio0-stats")
    assert deltas == {"31": (0, 25)}


@pytest.mark.parametrize(
    ("name", "driver", "speeds"),
    [
        ("rpi4b_alpine3.15_lsusb-t_ax88179__idx19754802163.txt", "ax88179_178a", [5000.0]),
        ("rpi4b_alpine3.15_lsusb-t_r8152__idx19754802163.txt", "r8152", [5000.0]),
        ("rpi5_bookworm_6.12.34_lsusb_and_lsusb-t_2x_rtl8153__idx6043323962.txt", "r8152", [5000.0, 5000.0]),
    ],
)
def test_lsusb_tree_usb_speed_of_adapters(name, driver, speeds):
    nodes = parse_lsusb_tree(corpus(name))
    assert usb_speed_of_driver(nodes, driver) == speeds
    roots = [n for n in nodes if n.interface is None]
    assert {n.speed_mbps for n in roots} == {480.0, 5000.0}


def test_lsusb_tree_pi5_hid_and_dash_spelling():
    nodes = parse_lsusb_tree(corpus("rpi5_bookworm_6.12.34_lsusb_and_lsusb-t_2x_rtl8153__idx6043323962.txt"))
    assert [n.driver for n in nodes if n.interface is None] == [
        "xhci-hcd/1p",
        "xhci-hcd/2p",
        "xhci-hcd/1p",
        "xhci-hcd/2p",
    ]
    assert usb_speed_of_driver(nodes, "usbhid") == [12.0] * 4
    assert nodes[1].driver == "r8152"
    assert nodes[1].superspeed  # r8152 on bus 4 is SuperSpeed


def test_ethtool_info_pi5_sections():
    info = parse_ethtool_info(corpus("rpi5_bookworm_6.12.34_ethtool-i_macb_r8152x2__idx6043323962.txt"))
    assert sorted(info) == ["eth0", "eth1", "eth2"]
    assert info["eth0"]["driver"] == "macb" and info["eth0"]["firmware-version"] == ""
    assert info["eth1"]["firmware-version"] == "rtl8153a-4 v2 02/07/20"
    assert info["eth2"]["bus-info"] == "usb-xhci-hcd.0-1"


def test_own_veth_recordings():
    info = parse_ethtool_info((LAB_OUTPUTS / "veth-ethtool-i.txt").read_text())
    assert info[""]["driver"] == "veth"
    settings = parse_ethtool_settings((LAB_OUTPUTS / "veth-ethtool.txt").read_text())
    assert settings.link_detected is True
    features = parse_ethtool_features((LAB_OUTPUTS / "veth-ethtool-k-offloads-off.txt").read_text())
    assert features["tcp-segmentation-offload"] is False
    assert features["generic-receive-offload"] is False
    os_release = parse_os_release((LAB_OUTPUTS / "debian12-os-release.txt").read_text())
    assert os_release["ID"] == "debian" and os_release["VERSION_ID"] == "12"


def test_gbe_link_settings():
    text = "Settings for eth0:\n\tSpeed: 1000Mb/s\n\tDuplex: Full\n\tLink detected: yes\n"
    assert parse_ethtool_settings(text).speed_mbps == 1000
    assert parse_ethtool_settings(text).duplex == "full"
    unknown = parse_ethtool_settings("\tSpeed: Unknown!\n\tDuplex: Unknown! (255)\n\tLink detected: no\n")
    assert (unknown.speed_mbps, unknown.duplex, unknown.link_detected) == (None, None, False)


def test_throttled_bits():
    assert parse_throttled("throttled=0x0") == (0, [])
    value, flags = parse_throttled("throttled=0x50005")
    assert value == 0x50005
    assert flags == ["under-voltage", "throttled", "under-voltage-occurred", "throttling-occurred"]
    with pytest.raises(ValueError, match="not vcgencmd"):
        parse_throttled("VCHI initialization failed")


def test_facts_script_output_of_the_virtual_board():
    from pytest_pinet.host.facts import facts_from_output, facts_script

    facts = facts_from_output("pi", (LAB_OUTPUTS / "facts-script-virtual-pi.txt").read_text(), ["eth0"])
    assert facts.os_id == "debian" and facts.kernel.startswith("6.")
    assert facts.cpus >= 1
    assert facts.iperf3_version is not None and facts.iperf3_version.startswith("iperf 3.")
    eth0 = facts.interfaces["eth0"]
    assert (eth0.driver, eth0.mtu) == ("veth", 1500)
    assert eth0.offloads["tso"] is False and eth0.offloads["gro"] is False
    with pytest.raises(ValueError, match="not an interface name"):
        facts_script(["eth0; reboot"])
