"""A night's path, flat, and what differs between two nights of one context.

Every measurement carries the facts of its hosts (``model.host_facts``): kernel and image,
each interface's driver, firmware, offloads, rings, MTU and qdisc, the sysctls pinet reads,
the Pi's firmware and bootloader, governor, throttling, the iperf3 that measured; the
board's and the peer's.  A lab engineer's first question about a red context is "what is
different since the last good night?", so a regression names the facts that differ between
its last accepted night and its first red one, and says so when none did (then the drop
came with nothing pinet can see: a cable, a switch, the room).

A fingerprint works on the facts as the results file and the store keep them (JSON
objects), so reading one needs nothing of the code that gathered them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# Readings, not settings: they change by the minute on a healthy host (the clock under a
# governor, the temperature, the carrier's last flap), and the host's name is the context's.
READINGS = frozenset({"temperature_c", "cpu_mhz", "carrier", "host", "name"})
NOTHING_CHANGED = "nothing in the fingerprint changed"
NOT_RECORDED = "not recorded"


def fingerprint(facts: Mapping[str, Mapping[str, Any]]) -> dict[str, str]:
    """``facts`` by role ("board", "peer"; as stored) as ``{"board eth0 offloads gro": "on"}``.

    A fact a host did not give (None, "") is left out: unknown is not a value."""
    flat: dict[str, str] = {}
    for role, host in sorted(facts.items()):
        for key, value in host.items():
            if key == "interfaces" and isinstance(value, Mapping):
                for name, interface in sorted(value.items()):
                    if isinstance(interface, Mapping):
                        for field, setting in interface.items():
                            _flatten(flat, f"{role} {name} {field}", field, setting)
            else:
                _flatten(flat, f"{role} {key}", key, value)
    return flat


def _flatten(flat: dict[str, str], where: str, field: str, value: Any) -> None:
    if field in READINGS or value is None or value == "":
        return
    if isinstance(value, Mapping):
        for key, inner in sorted(value.items()):
            _flatten(flat, f"{where} {key}", str(key), inner)
    elif isinstance(value, bool):
        flat[where] = "on" if value else "off"
    elif isinstance(value, list | tuple):
        flat[where] = ", ".join(str(v) for v in value) or "none"
    else:
        flat[where] = str(value)


def differences(before: Mapping[str, str], after: Mapping[str, str]) -> list[str]:
    """Each fact that differs, as ``"board eth0 offloads gro: on -> off"``, in name order; a
    fact one night recorded and the other did not is named too (an older pinet, a tool the
    host lost)."""
    lines = []
    for key in sorted(before.keys() | after.keys()):
        old, new = before.get(key), after.get(key)
        if old != new:
            lines.append(f"{key}: {_shown(old)} -> {_shown(new)}")
    return lines


def _shown(value: str | None) -> str:
    return NOT_RECORDED if value is None else value


def what_changed(before: Mapping[str, str] | None, after: Mapping[str, str] | None) -> list[str]:
    """The lines a red context shows: its differences, :data:`NOTHING_CHANGED`, or why there
    is nothing to compare (a night whose facts were not kept)."""
    if before is None or after is None or not before or not after:
        return [
            "no fingerprint of " + ("the last good night" if not before else "the red night") + " to compare"
        ]
    return differences(before, after) or [NOTHING_CHANGED]
