"""The SNMP face of a twin's managed PoE switch: net-snmp's ``snmpd`` with this pass-through.

A managed PoE switch powers a Pi through the PoE MIB (RFC 3621): writing 1 (true) or 2
(false) to ``pethPsePortAdminEnable.<group>.<port>`` switches the port, and reading it says
which it is.  labgrid's ``poe_mib`` power model does exactly that over SNMP v1 with the
community ``private``.  The twin answers at the switch's address with a real agent:
``snmpd`` (started in the rack's namespace by :func:`start`) hands that one column to this
program through its ``pass_persist`` protocol, and this program switches the port on the
twin's power device (``power_switch.py``, through its ``simplerest`` HTTP face at the same
address, as a switch's SNMP and web faces switch the same ports).  So labgrid's own driver,
pysnmp and a real SNMP agent are what power-cycle the twin's boards, and a set that the power
device refuses is an SNMP error, not a silent success.

Every get and set is written to a log beside the switch's (``power-N.snmp.log``): the
rehearsal reads there that a board was cycled through SNMP.

``pass_persist``: snmpd writes ``PING`` (answer ``PONG``), ``get``/``getnext`` and an OID, or
``set``, an OID and ``TYPE VALUE``; the answer is ``OID``, ``TYPE``, ``VALUE`` lines, ``NONE``,
``DONE`` or an error word (``not-writable``, ``wrong-type``, ``wrong-value``, ...).
"""

from __future__ import annotations

import json
import os
import shlex
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TextIO

from .system import find_tool

# pethPsePortAdminEnable (RFC 3621), the column labgrid's poe_mib reads and writes; its rows
# are <group>.<port>, and labgrid's model speaks to group 1.
ADMIN_ENABLE = "1.3.6.1.2.1.105.1.1.1.3"
GROUP = 1
TRUE, FALSE = 1, 2  # SNMP's TruthValue
# labgrid's poe_mib model has this community built in: a switch serving it grants it write
# access (docs/hardware-lab.md says to limit it to the lab controller's address).
COMMUNITY = "private"
SNMP_PORT = 161

Switch = Callable[[int, bool | None], bool]  # (port, None: read | on/off) -> is it on


def _oid(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.strip().strip(".").split(".") if part)


def _row(port: int) -> tuple[int, ...]:
    return (*_oid(ADMIN_ENABLE), GROUP, port)


def _dotted(oid: tuple[int, ...]) -> str:
    return "." + ".".join(str(part) for part in oid)


def answer(request: list[str], ports: Iterable[int], switch: Switch) -> list[str]:
    """The pass_persist answer to one request (its lines without the command's newline)."""
    command = request[0].strip().lower()
    if command == "ping":
        return ["PONG"]
    rows = sorted(_row(port) for port in ports)
    oid = _oid(request[1]) if len(request) > 1 else ()
    if command == "get":
        return _value(oid, switch) if oid in rows else ["NONE"]
    if command == "getnext":
        later = [row for row in rows if row > oid]
        return _value(later[0], switch) if later else ["NONE"]
    if command == "set":
        if oid not in rows:
            return ["not-writable"]
        kind, _, value = (request[2] if len(request) > 2 else "").strip().partition(" ")
        if kind.lower() != "integer":
            return ["wrong-type"]
        if value.strip() not in (str(TRUE), str(FALSE)):
            return ["wrong-value"]
        try:
            switch(oid[-1], value.strip() == str(TRUE))
        except OSError:
            return ["resource-unavailable"]
        return ["DONE"]
    return ["NONE"]


def _value(oid: tuple[int, ...], switch: Switch) -> list[str]:
    try:
        on = switch(oid[-1], None)
    except OSError:
        return ["NONE"]
    return [_dotted(oid), "integer", str(TRUE if on else FALSE)]


def requests(stream: TextIO) -> Iterator[list[str]]:
    """snmpd's requests, each as its lines: a set carries three, a get two, PING one."""
    while True:
        first = stream.readline()
        if not first:
            return
        command = first.strip().lower()
        if not command:
            continue
        lines = {"ping": 1, "set": 3}.get(command, 2)
        yield [first.rstrip("\n")] + [stream.readline().rstrip("\n") for _ in range(lines - 1)]


def http_switch(base: str, log: Path) -> Switch:
    """Switch and read ports through the power device's simplerest face at ``base``."""

    def switch(port: int, on: bool | None) -> bool:
        path = f"{base}/api/poe/{port}" + ("" if on is None else f"/{1 if on else 0}")
        try:
            with urllib.request.urlopen(path, timeout=20) as reply:  # noqa: S310 - the twin's own address
                body = reply.read().decode("ascii", errors="replace").strip()
        except (urllib.error.URLError, TimeoutError) as exc:
            _note(log, f"port {port} {'read' if on is None else ('on' if on else 'off')}: failed: {exc}")
            raise OSError(str(exc)) from exc
        state = body == "1" if on is None else on
        _note(log, f"port {port} {'read' if on is None else 'set'}: {'on' if state else 'off'}")
        return state

    return switch


def _note(log: Path, line: str) -> None:
    with log.open("a", encoding="utf-8") as handle:
        handle.write(f"{time.strftime('%H:%M:%S')} snmp {line}\n")


def serve(config_path: Path) -> None:
    """Answer snmpd on stdin/stdout for the power device described by ``config_path``."""
    config = json.loads(config_path.read_text(encoding="utf-8"))
    ports = [int(index) for index in config["ports"]]
    log = config_path.with_suffix(".snmp.log")
    switch = http_switch(f"http://{config['address']}:{config['port']}", log)
    for request in requests(sys.stdin):
        sys.stdout.write("\n".join(answer(request, ports, switch)) + "\n")
        sys.stdout.flush()


def snmpd_config(address: str, helper: list[str], allowed: str, port: int = SNMP_PORT) -> str:
    """snmpd's whole configuration: the PoE column passed to ``helper``, the community that
    labgrid's model uses writable from ``allowed`` (a network) only."""
    command = " ".join(shlex.quote(part) for part in helper)
    return (
        f"agentAddress udp:{address}:{port}\n"
        f"rwcommunity {COMMUNITY} {allowed}\n"
        f"pass_persist .{ADMIN_ENABLE} {command}\n"
    )


def snmpd_argv(config: Path, pid_file: Path) -> list[str]:
    """snmpd in the foreground, reading only ``config`` (never the machine's own files)."""
    return [
        find_tool("snmpd"),
        "-f",
        "-C",
        "-c",
        str(config),
        "-p",
        str(pid_file),
        "-Lf",
        str(config.with_suffix(".log")),
    ]


def snmpd_environment(folder: Path) -> dict[str, str]:
    """snmpd's state under ``folder`` (not the machine's /var/lib/snmp), no MIB files to read."""
    return {**os.environ, "SNMP_PERSISTENT_DIR": str(folder / "snmp-state"), "MIBS": ""}


if __name__ == "__main__":
    serve(Path(sys.argv[1]))
