"""A managed PoE switch over SNMP, as the twin serves it: the power device on loopback, net-snmp's
snmpd with ``poe_agent`` as its pass-through, and labgrid's own ``poe_mib`` backend (pysnmp)
switching a port, reading it back, and getting nothing from a port the switch lacks or with
another community."""

from __future__ import annotations

import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_pinet.errors import MissingToolError
from pytest_pinet.polling import wait_until
from pytest_pinet.virtlab import poe_agent
from pytest_pinet.virtlab.system import find_tool

from .test_power_switch_process import Rack

ROOT = Path(__file__).resolve().parents[2]


def _free_udp_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def poe_switch(tmp_path) -> Iterator[tuple[Rack, int]]:
    """The power device and its SNMP agent on loopback; (the device, the agent's UDP port)."""
    try:
        find_tool("snmpd")
    except MissingToolError:
        pytest.fail("snmpd is not installed: scripts/setup.sh --tests installs it")
    rack = Rack(tmp_path)
    port = _free_udp_port()
    config = tmp_path / "snmpd.conf"
    helper = [sys.executable, "-m", poe_agent.__name__, str(tmp_path / "switch.json")]
    config.write_text(poe_agent.snmpd_config("127.0.0.1", helper, "127.0.0.0/8", port), encoding="utf-8")
    agent = subprocess.Popen(
        poe_agent.snmpd_argv(config, tmp_path / "snmpd.pid"),
        env=poe_agent.snmpd_environment(tmp_path),
        cwd=ROOT,
    )
    try:
        wait_until(
            lambda: (
                f"127.0.0.1:{port}" in subprocess.run(["ss", "-Hlun"], capture_output=True, text=True).stdout
            ),
            timeout=20,
            pace=0.1,
            on_timeout=lambda: AssertionError("snmpd did not listen"),
        )
        yield rack, port
    finally:
        agent.terminate()
        agent.wait(timeout=10)
        rack.process.terminate()
        rack.process.wait(timeout=10)


def test_labgrids_poe_mib_switches_a_port_through_snmpd(poe_switch):
    from labgrid.driver.exception import ExecutionError
    from labgrid.driver.power import poe_mib

    rack, port = poe_switch
    assert poe_mib.power_get("127.0.0.1", port, "1") is True  # the host starts powered
    poe_mib.power_set("127.0.0.1", port, "1", False)
    assert poe_mib.power_get("127.0.0.1", port, "1") is False and not rack.host_file.exists()
    poe_mib.power_set("127.0.0.1", port, "1", True)
    assert poe_mib.power_get("127.0.0.1", port, "1") is True and rack.host_file.exists()
    poe_mib.power_set("127.0.0.1", port, "0", True)  # the "board": its process starts
    assert poe_mib.power_get("127.0.0.1", port, "0") is True
    wait_until(lambda: rack.board_processes() != [], timeout=10, pace=0.1)
    with pytest.raises(ExecutionError):
        poe_mib.power_get("127.0.0.1", port, "7")  # a port the switch does not have
    logged = (rack.folder / "switch.snmp.log").read_text(encoding="utf-8")
    assert "snmp port 1 set: off" in logged and "snmp port 0 set: on" in logged, logged


def test_another_community_gets_no_answer(poe_switch):
    """labgrid's model has "private" built in; a switch answers nothing else (an SNMP v1 agent
    is silent to a community it does not know, so the request times out)."""
    from pysnmp import hlapi

    _, port = poe_switch
    reply = next(
        hlapi.getCmd(
            hlapi.SnmpEngine(),
            hlapi.CommunityData("public", mpModel=0),
            hlapi.UdpTransportTarget(("127.0.0.1", port), timeout=1, retries=0),
            hlapi.ContextData(),
            hlapi.ObjectType(hlapi.ObjectIdentity(f"{poe_agent.ADMIN_ENABLE}.1.1")),
            lookupMib=False,
        )
    )
    assert reply[0] is not None and "No SNMP response" in str(reply[0]), reply
