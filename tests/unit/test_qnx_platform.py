"""A QNX board (issue 47): its facts from recorded outputs, what it can run, and what it cannot
with a QNX reason. The outputs are real ones (fixtures/qnx, fixtures/bsd; sources there):
``pidin info`` and ``uname -a`` of QNX 8.0 on a Raspberry Pi 4, and io-sock's ``ifconfig``,
which is FreeBSD's (QNX 8's io-sock follows FreeBSD's network stack)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from pytest_pinet.errors import LabFault
from pytest_pinet.host.facts import facts_from_output
from pytest_pinet.host.platform import QNX, platform_named, platform_of_uname
from pytest_pinet.host.platform.qnx import QNX_CANNOT, board_of_uname, parse_pidin_info
from pytest_pinet.traffic import udpgen
from tests.fixture_paths import BSD_OUTPUTS, QNX_OUTPUTS


def real(name: str) -> str:
    folder = QNX_OUTPUTS if name.startswith("qnx") else BSD_OUTPUTS
    return (folder / name).read_text(encoding="utf-8")


def test_pidin_info_and_uname_give_the_cpus_the_clock_and_the_board():
    assert parse_pidin_info(real("qnx800-rpi4-pidin-info.txt")) == (4, "Cortex-A72", 1500.0)
    assert parse_pidin_info("no processors here") == (0, "", None)
    assert board_of_uname(real("qnx800-uname-a-rpi4.txt")) == "RaspberryPi4B"
    assert board_of_uname(real("qnx710-uname-a-rpi4.txt")) == "RaspberryPi4B"
    assert board_of_uname("QNX\n") == ""


def test_a_qnx_board_gets_its_facts_from_one_script_output():
    text = "\n".join(
        [
            "@@pinet:kernel",
            "8.0.0",
            "@@pinet:arch",
            "aarch64le",
            "@@pinet:uname",
            real("qnx800-uname-a-rpi4.txt"),
            "@@pinet:pidin",
            real("qnx800-rpi4-pidin-info.txt"),
            "@@pinet:if-config:genet0",
            real("freebsd-ifconfig-genet0-rpi4-lowerup.txt"),  # io-sock's ifconfig is FreeBSD's
        ]
    )
    assert platform_of_uname("pi4", real("qnx800-uname-a-rpi4.txt")) is QNX is platform_named("qnx")
    facts = facts_from_output("pi4", text, ["genet0"], QNX)
    assert (facts.kernel, facts.os_id, facts.os_name) == ("8.0.0", "qnx", "QNX 8.0.0")
    assert (facts.cpus, facts.cpu_model, facts.cpu_mhz, facts.model) == (
        4,
        "Cortex-A72",
        1500.0,
        "RaspberryPi4B",
    )
    assert facts.temperature_c is None and facts.governor is None  # none on QNX: unknown, never 0
    genet = facts.interfaces["genet0"]
    assert (genet.driver, genet.speed_mbps, genet.duplex, genet.mtu) == ("genet", 1000, "full", 1500)


def test_the_seeds_qnx_floors_apply_to_a_qnx_board():
    from pytest_pinet.judge.threshold_rules import SHIPPED, load_thresholds

    context = {
        "protocol": "UDP", "scenario": "udp-sendto", "direction": "board->peer", "os": "QNX 8.0.0",
        "link_speed_mbps": 1000, "mtu": 1500,
    }  # fmt: skip
    rule = load_thresholds(SHIPPED).rule_for(context)
    assert rule is not None and rule.rule_id == "udp-sendto-qnx"


@pytest.mark.parametrize("what", ["rps", "xps", "governor", "cpu_mhz", "qdisc", "storage", "irq_affinity"])
def test_what_qnx_cannot_do_is_refused_naming_qnx(what):
    said = QNX.cannot(what)
    assert said == QNX_CANNOT[what] and "QNX" in said


def test_observers_on_qnx_give_no_made_up_figures():
    assert QNX.cpu_rows("") == {} and QNX.temperature_c("45.0C") is None
    assert QNX.interrupt_table("anything").lines == {}
    script = QNX.snapshot_script("genet0", ())
    assert "netstat" in script and "kern.cp_time" not in script


class _Board:
    """A board answering ``--version`` as a generator built from ``source`` would."""

    name = "qnx-pi"

    def __init__(self, source: str, path: str = "/data/home/qnxuser/pinet-udpgen") -> None:
        self.udpgen = path
        self.source = source
        self.calls: list[list[Any]] = []

    def run(self, argv: list[Any], timeout: float = 0) -> Any:
        self.calls.append(argv)
        return SimpleNamespace(ok=True, stdout=f"pinet-udpgen {self.source}\n", stderr="", exit_code=0)


def test_a_generator_the_lab_built_is_used_when_its_version_is_this_source():
    board = _Board(udpgen.source_hash())
    assert udpgen.ensure_udpgen(board) == board.udpgen  # type: ignore[arg-type]
    assert board.calls == [[board.udpgen, "--version"]]  # never built on the board


def test_a_generator_of_another_source_is_refused_with_how_to_rebuild_it():
    board = _Board("0123456789abcdef")
    with pytest.raises(
        LabFault, match=r"is of source 0123456789abcdef, this pinet's is [0-9a-f]{16}.*qcc"
    ) as info:
        udpgen.ensure_udpgen(board)  # type: ignore[arg-type]
    assert info.value.category == "tool-missing"


def test_an_inventory_names_a_qnx_board_and_its_generator(tmp_path):
    import yaml

    from pytest_pinet.errors import ConfigError
    from pytest_pinet.lab.inventory import load_inventory

    from ..lab_example import keyed_example

    env = keyed_example(tmp_path)
    data = yaml.safe_load(env.read_text())
    data["pinet"]["hosts"]["pi4"].update({"os": "qnx", "udpgen": "/data/home/qnxuser/pinet-udpgen"})
    env.write_text(yaml.safe_dump(data))
    host = load_inventory(env).hosts["pi4"]
    remote = host.connect()
    assert remote.udpgen == "/data/home/qnxuser/pinet-udpgen" and remote.platform is QNX
    data["pinet"]["hosts"]["pi4"]["udpgen"] = "bin/pinet-udpgen"
    env.write_text(yaml.safe_dump(data))
    with pytest.raises(ConfigError, match=r"udpgen.*is not an absolute path"):
        load_inventory(env)
