"""Lab health: facts parsed from real outputs (fixtures/, with their sources) compared with the
inventory; the gate's cures and verdicts; the summary lists the unhealthy first."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from pytest_pinet.errors import ConfigError, LabFault
from pytest_pinet.host.facts import facts_from_output
from pytest_pinet.host.facts_parse import (
    cable_alias,
    parse_cable_alias,
    parse_usb_identity,
)
from pytest_pinet.host.platform import LINUX
from pytest_pinet.host.platform.linux_facts import linux_facts
from pytest_pinet.host.remote import CommandResult
from pytest_pinet.lab import health_gate
from pytest_pinet.lab.health import (
    FAULT,
    OK,
    UNKNOWN,
    HealthReport,
    board_findings,
    link_findings,
    report_table,
)
from pytest_pinet.lab.health_gate import HealthGate
from pytest_pinet.lab.health_table import load_health_table
from pytest_pinet.lab.inventory import load_inventory
from pytest_pinet.model.host_facts import HostFacts
from pytest_pinet.model.lab import LinkEntry
from pytest_pinet.record.allure_out import write_run_files
from pytest_pinet.record.run_summary import health_lines
from tests.fixture_paths import LAB_OUTPUTS

ROOT = Path(__file__).resolve().parents[2]
TABLE = load_health_table([])


def corpus(name: str) -> str:
    return (LAB_OUTPUTS / name).read_text(encoding="utf-8")


def eth1_info() -> str:
    """The RTL8153's block of the Pi 5's `ethtool -i` (as `ethtool -i eth1` prints it alone)."""
    text = corpus("rpi5_bookworm_6.12.34_ethtool-i_macb_r8152x2__idx6043323962.txt")
    return text.split("## driver (eth1)\n", 1)[1].split("\n\n", 1)[0]


def pi5_facts(**sections: str) -> HostFacts:
    """The Pi 5 with its RTL8153 as eth1, from its real outputs plus ``sections``."""
    s = {
        "kernel": "6.12.34+rpt-rpi-v8",
        "model": "Raspberry Pi 5 Model B Rev 1.0",
        "lsusb": corpus("rpi5_bookworm_6.12.34_lsusb_and_lsusb-t_2x_rtl8153__idx6043323962.txt"),
        "if-info:eth1": eth1_info(),
        **sections,
    }
    return linux_facts("pi5", s, ["eth1"])


def link(adapter: str = "rtl8153", speed: int = 1000) -> LinkEntry:
    return LinkEntry("usb", "pi5", "eth1", "10.0.0.1", "pc", "eth0", "10.0.0.2", adapter, speed, 1500)


def by_check(findings: list[Any], host: str, check: str) -> Any:
    return next(f for f in findings if f.host == host and f.check == check)


def test_shipped_table_knows_the_seed_adapters_and_a_lab_extends_it(tmp_path: Path) -> None:
    assert TABLE.adapters["rtl8153"].drivers["linux"] == ("r8152",)
    assert TABLE.adapters["ax88179"].drivers["linux"] == ("ax88179_178a",)
    assert TABLE.adapters["lan7800"].drivers["freebsd"] == ("muge",)
    assert TABLE.adapters["rtl8153"].usb_mbps == 5000
    assert TABLE.throttle_c("Raspberry Pi 4 Model B Rev 1.4") == 85
    own = tmp_path / "lab_health.yaml"
    own.write_text(
        "adapters:\n  rtl8156: {drivers: {linux: [r8152]}, usb: ['0BDA:8156'], usb_mbps: 5000}\n"
        "boards:\n  - {model: 'Raspberry Pi 5', throttle_c: 80}\n",
        encoding="utf-8",
    )
    table = load_health_table([own])
    assert table.adapters["rtl8156"].usb_ids == ("0bda:8156",)
    assert table.adapters["rtl8153"].drivers["linux"] == ("r8152",)  # the shipped entries stay
    assert table.throttle_c("Raspberry Pi 5 Model B Rev 1.0") == 80  # the lab's entry first
    assert table.throttle_c("Raspberry Pi 4 Model B") == 85


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("adapters: [rtl8153]\n", "adapters must be a mapping"),
        ("adapters:\n  x: {drivers: {linux: r8152}}\n", "adapters.x.drivers.linux must be a list"),
        (
            "adapters:\n  x: {usb: ['0bda8153']}\n",
            "adapters.x.usb[0] '0bda8153' is not a USB vendor:product ID",
        ),
        ("adapters:\n  x: {usb_mbps: true}\n", "adapters.x.usb_mbps must be a positive number, got True"),
        ("boards:\n  - {model: Pi}\n", "boards[0] (Pi): missing ['throttle_c']"),
        ("colour: red\n", "unknown top-level keys ['colour']"),
        ("adapters: [\n", "not a YAML file"),
    ],
)
def test_a_bad_table_names_its_file_and_key(tmp_path: Path, text: str, fragment: str) -> None:
    own = tmp_path / "lab_health.yaml"
    own.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        load_health_table([own])
    assert str(caught.value).startswith(str(own))
    assert fragment in str(caught.value)


def test_wrong_adapter_is_refused_with_expected_and_found_side_by_side() -> None:
    # The Pi 5's eth1 is an RTL8153 (driver r8152, 5000M in its lsusb -t); the inventory says ax88179.
    facts = pi5_facts()
    findings = link_findings(link("ax88179"), facts, None, TABLE, "linux")
    driver = by_check(findings, "pi5", "eth1 driver")
    assert (driver.expected, driver.found, driver.verdict, driver.category) == (
        "ax88179_178a (ax88179)",
        "r8152",
        FAULT,
        "adapter-mismatch",
    )
    assert driver.cures == ()  # a wrong adapter stays wrong after a power-cycle
    row = next(line for line in report_table(_report(findings)) if "eth1 driver" in line)
    assert row.split() == [
        "pi5",
        "eth1",
        "driver",
        "ax88179_178a",
        "(ax88179)",
        "r8152",
        "FAULT",
        "(adapter-mismatch)",
    ]
    # The right name passes on the same facts, and its USB bus speed is the adapter's 5000M.
    right = link_findings(link("rtl8153"), facts, None, TABLE, "linux")
    assert by_check(right, "pi5", "eth1 driver").verdict == OK
    assert by_check(right, "pi5", "eth1 USB bus").verdict == OK
    assert by_check(right, "pi5", "eth1 USB bus").found == "5000 Mbit/s"


def _report(findings: list[Any]) -> HealthReport:
    return HealthReport(tuple(findings))


def test_usb3_adapter_enumerated_at_480_is_a_usb_speed_fault() -> None:
    # An RTL8153 left on the USB 2 half of a port (LKML 2019, "Cannot enable. Maybe the USB cable is bad?").
    lsusb = corpus("exynos5422_next-20190716_lsusb-t_r8152-480M-usb3-port-failed__idx9964060803.txt")
    facts = pi5_facts(lsusb=lsusb)
    assert facts.interfaces["eth1"].usb_speed_mbps == 480
    usb = by_check(link_findings(link(), facts, None, TABLE, "linux"), "pi5", "eth1 USB bus")
    assert (usb.expected, usb.found, usb.verdict, usb.category) == (
        ">= 5000 Mbit/s",
        "480 Mbit/s",
        FAULT,
        "usb-speed",
    )
    assert usb.cures == ("power-cycle",)


def test_gige_link_negotiated_at_100_is_a_link_negotiation_fault() -> None:
    # A GbE NIC on a bad cable (a 2009 forum thread): Speed 100Mb/s, Full, link detected.
    settings = corpus("ethtool_gige-nic-negotiated-100-bad-cable__idx56903099684.txt")
    facts = pi5_facts(**{"if-settings:eth1": settings, "if-mtu:eth1": "1500"})
    findings = link_findings(link(), facts, None, TABLE, "linux")
    speed = by_check(findings, "pi5", "eth1 speed")
    assert (speed.expected, speed.found, speed.verdict) == ("1000 Mbit/s", "100 Mbit/s", FAULT)
    assert speed.cures == ("renegotiate", "power-cycle")
    assert by_check(findings, "pi5", "eth1 carrier").verdict == OK
    assert by_check(findings, "pi5", "eth1 duplex").verdict == OK
    assert by_check(findings, "pi5", "eth1 MTU").verdict == OK
    # A peer that did not answer is a fault of the link, not a pass.
    assert by_check(findings, "pc", "facts").verdict == FAULT
    # The same NIC against an inventory that says 100 Mbit/s is healthy.
    assert (
        by_check(link_findings(link(speed=100), facts, None, TABLE, "linux"), "pi5", "eth1 speed").verdict
        == OK
    )


def test_virtual_cable_reports_its_shaped_speed_not_the_veths_10000() -> None:
    text = (LAB_OUTPUTS / "facts-script-virtual-pi.txt").read_text(encoding="utf-8")
    plain = facts_from_output("pi", text, ["eth0"])
    assert plain.interfaces["eth0"].speed_mbps == 10000  # what the veth itself says
    labelled = facts_from_output("pi", text + "@@pinet:if-alias:eth0\n" + cable_alias(100) + "\n", ["eth0"])
    eth0 = labelled.interfaces["eth0"]
    assert (eth0.speed_mbps, eth0.duplex, eth0.reported_by, eth0.carrier) == (
        100,
        "full",
        "shaped veth",
        True,
    )
    cable = LinkEntry("eth", "pi", "eth0", "a", "pc", "eth0", "b", "builtin", 1000, 1500)
    speed = by_check(link_findings(cable, labelled, labelled, TABLE, "linux"), "pi", "eth0 speed")
    assert (speed.found, speed.verdict) == ("100 Mbit/s (shaped veth)", FAULT)
    assert parse_cable_alias("uplink to the core switch") is None  # a lab's own alias is no cable


def test_sysfs_usb_identity_of_an_interface() -> None:
    assert parse_usb_identity("0bda\n8153\n5000\n") == parse_usb_identity("0BDA 8153 5000")
    identity = parse_usb_identity("0bda\n8153\n480\n")
    assert identity is not None and (identity.usb_id, identity.speed_mbps) == ("0bda:8153", 480.0)
    assert parse_usb_identity("") is None  # a NIC on another bus prints nothing
    facts = pi5_facts(**{"if-usb:eth1": "0bda\n8153\n480\n"})
    findings = link_findings(link(), facts, None, TABLE, "linux")
    assert by_check(findings, "pi5", "eth1 USB ID").verdict == OK
    assert by_check(findings, "pi5", "eth1 USB bus").found == "480 Mbit/s"  # the device's own, not lsusb's
    wrong = by_check(link_findings(link("ax88179"), facts, None, TABLE, "linux"), "pi5", "eth1 USB ID")
    assert (wrong.expected, wrong.found, wrong.verdict) == (
        "0b95:1790 or 0b95:178a (ax88179)",
        "0bda:8153",
        FAULT,
    )


def test_hot_or_throttling_board_is_a_thermal_fault_and_an_unreported_one_unknown() -> None:
    pi = pi5_facts(temp="86000", throttled="throttled=0x20002")
    findings = board_findings("pi5", pi, TABLE, None)
    temp = by_check(findings, "pi5", "idle temperature")
    assert (temp.found, temp.verdict, temp.category) == ("86 °C", FAULT, "thermal")
    assert "< 85 °C" in temp.expected
    throttling = by_check(findings, "pi5", "throttling")
    assert (throttling.found, throttling.verdict) == ("arm-frequency-capped", FAULT)
    cool = board_findings("pi5", pi5_facts(temp="52000", throttled="throttled=0x50000"), TABLE, None)
    assert {f.verdict for f in cool} == {OK}  # only "-occurred" bits: history, not now
    vm = board_findings(
        "pi",
        facts_from_output("pi", (LAB_OUTPUTS / "facts-script-virtual-pi.txt").read_text(), []),
        TABLE,
        None,
    )
    assert by_check(vm, "pi", "idle temperature").verdict == UNKNOWN


def test_board_running_another_image_than_the_run_pinned() -> None:
    marker = '{"name": "debian12-k6.1", "kernel": "6.1.0-37-arm64"}'
    facts = pi5_facts(image=marker)
    found = by_check(board_findings("pi5", facts, TABLE, "debian13"), "pi5", "image")
    assert found.verdict == FAULT and found.category == "image-mismatch"
    assert "debian12-k6.1" in found.found and "6.12.34+rpt-rpi-v8" in found.found
    right = pi5_facts(image='{"name": "debian13", "kernel": "6.12.34+rpt-rpi-v8"}')
    assert by_check(board_findings("pi5", right, TABLE, "debian13"), "pi5", "image").verdict == OK


class RecordedHost:
    """A host that answers the facts script with recorded output and logs other commands."""

    platform = LINUX

    def __init__(self, name: str, text: str) -> None:
        self.name = name
        self.text = text
        self.commands: list[list[Any]] = []

    def run_shell(
        self, script: str, *, timeout: float = 60.0, root: bool = False, cleanup: bool = False
    ) -> CommandResult:
        return CommandResult(script, 0, self.text, "")

    def run(
        self, argv: list[Any], *, timeout: float = 60.0, root: bool = False, cleanup: bool = False
    ) -> CommandResult:
        self.commands.append(list(argv))
        return CommandResult(" ".join(map(str, argv)), 0, "", "")


def virtual_lab(tmp_path: Path) -> Any:
    """An inventory of the virtual lab's shape (board pi: eth0 to pc, eth1 to inet)."""
    env = tmp_path / "env.yaml"
    env.write_text(TWO_LINKS, encoding="utf-8")
    (tmp_path / "known_hosts").write_text("", encoding="utf-8")
    return load_inventory(env)


TWO_LINKS = """\
targets:
  pi: {resources: {NetworkService: {address: 10.203.0.2, username: root}}}
  pc: {resources: {NetworkService: {address: 10.203.0.3, username: root}}}
  inet: {resources: {NetworkService: {address: 10.203.0.4, username: root}}}
pinet:
  lab: health-test
  ssh: {known_hosts: known_hosts}
  hosts: {pi: {role: board}, pc: {role: peer}, inet: {role: peer}}
  links:
    - {name: eth, board: pi, board_interface: eth0, board_address: 10.204.0.1,
       peer: pc, peer_interface: eth0, peer_address: 10.204.0.2, adapter: builtin, speed_mbps: 1000}
    - {name: usb, board: pi, board_interface: eth1, board_address: 10.205.0.1,
       peer: inet, peer_interface: eth0, peer_address: 10.205.0.2, adapter: emulated-usb, speed_mbps: 1000}
"""


def veth_output(speeds: dict[str, int]) -> str:
    """The virtual board's recorded facts output, one labelled veth per interface."""
    text = (LAB_OUTPUTS / "facts-script-virtual-pi.txt").read_text(encoding="utf-8")
    head, eth0 = text.split("@@pinet:if-info:eth0\n", 1)
    parts = [head]
    for name, speed in speeds.items():
        parts.append(f"@@pinet:if-info:{name}\n" + eth0.replace("eth0", name))
        parts.append(f"@@pinet:if-alias:{name}\n{cable_alias(speed)}\n")
    return "".join(parts)


def test_gate_tries_the_cures_then_ends_only_the_bad_link(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    inventory = virtual_lab(tmp_path)
    hosts = {
        "pi": RecordedHost("pi", veth_output({"eth0": 1000, "eth1": 100})),
        "pc": RecordedHost("pc", veth_output({"eth0": 1000})),
        "inet": RecordedHost("inet", veth_output({"eth0": 100})),
    }
    facts: list[tuple[str, dict[str, Any]]] = []
    cycles: list[str] = []

    def power_cycle() -> str:
        cycles.append("cycled")
        return "pi: power-cycled"

    gate = HealthGate(
        lambda: (inventory, hosts),  # type: ignore[arg-type,return-value]
        TABLE,
        power_cycle,
        lambda kind, fact: facts.append((kind, fact)),
        lambda text, name: None,
    )
    monkeypatch.setattr(health_gate, "SETTLE_SECONDS", 0.0)  # the recorded cable never comes back
    gate.require([inventory.link("eth")])  # the good link passes
    with pytest.raises(LabFault) as caught:
        gate.require([inventory.link("usb")])
    fault = caught.value
    assert fault.category == "link-negotiation"
    assert "pi eth1 speed: expected 1000 Mbit/s, found 100 Mbit/s (shaped veth)" in str(fault)
    assert "inet eth0 speed: expected 1000 Mbit/s, found 100 Mbit/s" in str(fault)
    assert fault.recorded  # kept as a fact when found, not once per test
    # Renegotiated both ends, then power-cycled once; checked once for the whole board.
    assert ["ethtool", "-r", "eth1"] in hosts["pi"].commands
    assert ["ethtool", "-r", "eth0"] in hosts["inet"].commands
    assert hosts["pc"].commands == []
    assert cycles == ["cycled"]
    with pytest.raises(LabFault):
        gate.require([inventory.link("usb")])  # the next test of the link: same verdict, no new cure
    assert cycles == ["cycled"]
    kept = {fact["subject"]: fact for kind, fact in facts if kind == "health"}
    assert not kept["link usb"]["healthy"] and kept["link eth"]["healthy"] and kept["board pi"]["healthy"]
    faults = [fact for kind, fact in facts if kind == "lab-fault"]
    assert [(f["category"], f["recovered"]) for f in faults] == [("link-negotiation", False)]
    assert "renegotiate" in faults[0]["action"] and "power-cycle" in faults[0]["action"]
    lines = health_lines([{"kind": kind, **fact} for kind, fact in facts])
    assert lines[0].startswith("UNHEALTHY link usb: not measured")
    assert lines[-1] == "healthy: board pi, link eth"
    # A power-cycle elsewhere (recovery) makes the gate check afresh; a cured cable passes.
    hosts["pi"].text = veth_output({"eth0": 1000, "eth1": 1000})
    hosts["inet"].text = veth_output({"eth0": 1000})
    gate.forget()
    gate.require([inventory.link("usb")])


def test_allure_variables_list_the_unhealthy_first(tmp_path: Path) -> None:
    write_run_files(
        tmp_path,
        {
            "boards": "pi",
            "healthy": "board pi, link eth",
            "unhealthy.link usb": "inet eth0 speed: ...",
            "lab": "x",
        },
        {},
    )
    lines = (tmp_path / "environment.properties").read_text(encoding="utf-8").splitlines()
    assert lines[0] == "unhealthy.link.usb=inet eth0 speed: ..."


def test_an_emulated_nic_that_negotiated_nothing_has_no_duplex_to_judge() -> None:
    # The QEMU board's own recordings: usb-net says "Speed: Unknown!" and "Duplex: Half" (the
    # driver's default, not a negotiation), virtio-net says neither.
    s = {
        "kernel": "6.1.0-56-amd64",
        "model": "Standard PC (Q35 + ICH9, 2009)",
        "if-info:eth1": (LAB_OUTPUTS / "qemu-usb-net-ethtool-i.txt").read_text(encoding="utf-8"),
        "if-settings:eth1": (LAB_OUTPUTS / "qemu-usb-net-ethtool.txt").read_text(encoding="utf-8"),
        "if-usb:eth1": "0525\na4a2\n480\n",
        "if-info:eth0": "driver: virtio_net\n",
        "if-settings:eth0": (LAB_OUTPUTS / "qemu-virtio-net-ethtool.txt").read_text(encoding="utf-8"),
    }
    qpi = linux_facts("qpi", s, ["eth0", "eth1"])
    usb = LinkEntry("usb", "qpi", "eth1", "a", "pc", "eth0", "b", "qemu-usb-net", 10, 1500)
    found = {f.check: f for f in link_findings(usb, qpi, None, TABLE, "linux") if f.host == "qpi"}
    assert (found["eth1 speed"].verdict, found["eth1 duplex"].verdict) == (UNKNOWN, UNKNOWN)
    assert found["eth1 duplex"].found == "half (no speed reported: not negotiated)"
    assert found["eth1 driver"].verdict == found["eth1 USB ID"].verdict == found["eth1 carrier"].verdict == OK
    eth = LinkEntry("eth", "qpi", "eth0", "a", "inet", "eth0", "b", "virtio", 1000, 1500)
    virtio = {f.check: f for f in link_findings(eth, qpi, None, TABLE, "linux") if f.host == "qpi"}
    assert virtio["eth0 duplex"].found == "not reported" and virtio["eth0 driver"].verdict == OK
    # A NIC that did negotiate a speed and says half duplex is a fault.
    half = dataclasses.replace(qpi.interfaces["eth1"], speed_mbps=10)
    pinned = dataclasses.replace(qpi, interfaces={**qpi.interfaces, "eth1": half})
    duplex = by_check(link_findings(usb, pinned, None, TABLE, "linux"), "qpi", "eth1 duplex")
    assert (duplex.verdict, duplex.category) == (FAULT, "link-negotiation")
    # A model the table does not name is judged against the default throttling point, and says so.
    (temp,) = [f for f in board_findings("qpi", qpi, TABLE, None) if f.check == "idle temperature"]
    assert temp.expected == "< 85 °C (the default throttling point)" and temp.verdict == UNKNOWN
