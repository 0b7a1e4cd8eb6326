"""The PoE switch's SNMP pass-through (``poe_agent``) as snmpd speaks to it: every request of
the pass_persist protocol, a walk over any set of ports, and a power device that fails."""

from __future__ import annotations

import io

from hypothesis import given
from hypothesis import strategies as st

from pytest_pinet.virtlab import poe_agent

COLUMN = "." + poe_agent.ADMIN_ENABLE


class Ports:
    """A power device's ports in memory: what ``http_switch`` reaches over HTTP."""

    def __init__(self, *on: int, broken: bool = False) -> None:
        self.on = set(on)
        self.broken = broken
        self.calls: list[tuple[int, bool | None]] = []

    def __call__(self, port: int, state: bool | None) -> bool:
        self.calls.append((port, state))
        if self.broken:
            raise OSError("HTTP Error 500")
        if state is not None:
            (self.on.add if state else self.on.discard)(port)
        return port in self.on


def test_ping_get_and_set_as_labgrids_poe_mib_uses_them():
    ports = Ports(3)
    assert poe_agent.answer(["PING"], [3, 5], ports) == ["PONG"]
    assert poe_agent.answer(["get", f"{COLUMN}.1.3"], [3, 5], ports) == [f"{COLUMN}.1.3", "integer", "1"]
    assert poe_agent.answer(["get", f"{COLUMN}.1.5"], [3, 5], ports) == [f"{COLUMN}.1.5", "integer", "2"]
    assert poe_agent.answer(["set", f"{COLUMN}.1.3", "integer 2"], [3, 5], ports) == ["DONE"]
    assert ports.on == set()
    assert poe_agent.answer(["set", f"{COLUMN}.1.5", "INTEGER 1"], [3, 5], ports) == ["DONE"]
    assert ports.on == {5}


def test_what_a_switch_refuses_is_an_snmp_error_never_done():
    ports = Ports(3)
    assert poe_agent.answer(["get", f"{COLUMN}.1.4"], [3], ports) == ["NONE"]  # no such port
    assert poe_agent.answer(["get", f"{COLUMN}.2.3"], [3], ports) == ["NONE"]  # another PSE group
    assert poe_agent.answer(["set", f"{COLUMN}.1.4", "integer 1"], [3], ports) == ["not-writable"]
    assert poe_agent.answer(["set", f"{COLUMN}.1.3", "string on"], [3], ports) == ["wrong-type"]
    assert poe_agent.answer(["set", f"{COLUMN}.1.3", "integer 3"], [3], ports) == ["wrong-value"]
    assert ports.calls == []  # none of them reached the power device
    broken = Ports(3, broken=True)
    assert poe_agent.answer(["set", f"{COLUMN}.1.3", "integer 2"], [3], broken) == ["resource-unavailable"]
    assert poe_agent.answer(["get", f"{COLUMN}.1.3"], [3], broken) == ["NONE"]


@given(ports=st.sets(st.integers(min_value=1, max_value=48), max_size=12), on=st.sets(st.integers(1, 48)))
def test_a_walk_visits_every_port_once_in_order_with_its_state(ports, on):
    """snmpwalk's getnext from the column's root reaches each port's row once, in index order
    (10 after 9, as OIDs compare), and ends past the last."""
    device = Ports(*on)
    seen, oid = [], COLUMN
    for _ in range(len(ports) + 1):
        reply = poe_agent.answer(["getnext", oid], ports, device)
        if reply == ["NONE"]:
            break
        oid, _, value = reply
        seen.append((int(oid.rsplit(".", 1)[1]), value))
    assert seen == [(port, "1" if port in on else "2") for port in sorted(ports)]


def test_requests_are_read_as_snmpd_writes_them():
    stream = io.StringIO(f"PING\nget\n{COLUMN}.1.3\n\nset\n{COLUMN}.1.3\ninteger 1\ngetnext\n{COLUMN}\n")
    assert list(poe_agent.requests(stream)) == [
        ["PING"],
        ["get", f"{COLUMN}.1.3"],
        ["set", f"{COLUMN}.1.3", "integer 1"],
        ["getnext", COLUMN],
    ]


def test_the_agent_serves_the_column_to_the_management_network_only():
    config = poe_agent.snmpd_config(
        "10.203.45.2", ["/usr/bin/python3", "-m", "x", "/tmp/a b.json"], "10.203.45.0/24"
    )
    assert "agentAddress udp:10.203.45.2:161\n" in config
    assert "rwcommunity private 10.203.45.0/24\n" in config
    assert f"pass_persist {COLUMN} /usr/bin/python3 -m x '/tmp/a b.json'\n" in config
