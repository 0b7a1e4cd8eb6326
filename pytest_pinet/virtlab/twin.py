"""A twin of a hardware lab's env file, built on this machine: the rehearsal of a first night.

``lab/rpi-lab.yaml`` draws a lab: two Pis, two peer PCs, a managed PoE switch (SNMP) and a
PDU (HTTP) that switch their power, a console server, one /24 per cable, a management network.
:func:`up` builds that drawing from the file itself, with the parts the virtual lab has:

- every host a network namespace with its own sshd, on the management network under the
  **same last octet** as in the file (``192.168.10.41`` is ``10.203.N.41`` here);
- every cable a GbE-shaped veth pair between the interfaces the file names (``eth0`` to
  ``enp3s0``), without addresses or MTU: the lab's own provisioning gives them, as on
  hardware (``twin_networkd.install_networkd`` applies the systemd-networkd files the page
  tells a lab to write);
- the rack: a power device at each address the file gives one, speaking its model (labgrid's
  ``simplerest`` or ``gude24`` over HTTP; ``poe_mib`` through net-snmp's snmpd and
  ``poe_agent.py``), whose ports switch the hosts the file puts on them, and a console server
  (ser2net) at the file's address and ports, each line RFC 2217 or raw TCP as the file says,
  one UART per board;
- each scratch disk a loop device; the logins read each user's own ``authorized_keys``
  (root's under the twin's own root home), so the page's key step is what lets pinet in;
- the file's last board, where this machine can run QEMU, a QEMU board (``qemu_board.py``)
  in its namespace: its own kernel booted from its SD card when its PoE port powers it, its
  UART on its console server line, its cables bridged to its taps.  Its image knows its
  name and addresses, as a lab's flashed image does; the lab's key reaches it by the page's
  step, typed on its console (:func:`console_shell`).

What the file says is not re-planned: the env a run uses is the lab's file with the
substitutions of :func:`substitutions` applied to its text (docs/rehearsal.md lists them),
never rewritten into another shape.  ``pinet lab down`` removes a twin as it removes any
lab, by its name.
"""

from __future__ import annotations

import json
import re
import shlex
import sys
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml

from ..errors import PinetError
from ..yaml_text import load_yaml
from . import envfile, poe_agent, qemu_board, rack, sshd, system, two_boards, virtual_lab
from .topology import DiskSpec, HostSpec, LabSpec, LinkSpec, RouteSpec

# The management network the twin puts the file's last octets on: 10.203.N.0/24, as every
# virtual lab's (N is the lab's number).
MGMT = re.compile(r"^(\d+\.\d+\.\d+)\.(\d+)$")
# The page's ordinary login user on the peers becomes this user of this machine.
TWIN_USER = "pinet-lab"
RACK = rack.RACK
DISK_MIB = 256
WAIT_S = 30  # for a power device, a UART or a console server to come up
# What the QEMU board's SD card holds when the twin is built: the lab's image, as flashed.
QEMU_IMAGE = "debian12-k6.1"


@dataclass(frozen=True)
class Twin:
    """A twin that is up: its plan, the file it twins and where its own files are."""

    spec: LabSpec
    source: Path

    @property
    def folder(self) -> Path:
        return self.spec.state_dir / "twin"

    @property
    def root_home(self) -> Path:
        """The twin hosts' root home: root's ``~/.ssh/authorized_keys`` on a twin board."""
        return self.folder / "root-home"

    def networkd_dir(self, host: str) -> Path:
        """A host's ``/etc/systemd/network`` (the twin's: under its own folder)."""
        return self.folder / host / "etc" / "systemd" / "network"


def _resource(target: Any, kind: str) -> dict[str, Any]:
    """The resource ``kind`` of a target of the env file, or an empty one."""
    found = ((target or {}).get("resources") or {}).get(kind) or {}
    return found if isinstance(found, dict) else {}


def _read(source: Path) -> dict[str, Any]:
    try:
        data = load_yaml(source.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise PinetError(f"{source}: cannot read the env file to twin: {exc}") from None
    if not isinstance(data, dict) or not isinstance(data.get("pinet"), dict):
        raise PinetError(f"{source}: no pinet: section, nothing to twin")
    return data


def qemu_choice(source: Path) -> str:
    """The board the twin makes a QEMU board: the file's last, when it has two or more and
    this machine can run QEMU ("" otherwise: every board a namespace)."""
    boards = [h for h, e in (_read(source)["pinet"].get("hosts") or {}).items() if e.get("role") == "board"]
    return boards[-1] if len(boards) > 1 and not two_boards.qemu_missing() else ""


def plan(source: Path, name: str, state_root: Path, qemu: str | None = None) -> LabSpec:
    """The lab plan of ``source``'s drawing: its hosts, cables, routes and disks, its
    management addresses moved onto the twin's network.

    ``qemu`` names the board that is a QEMU machine (None: as the twin that is up was built).
    The lab code knows one QEMU board per lab, its first board (``LabSpec.board_host``), so
    that board comes first in the plan's hosts; the file's order is kept otherwise."""
    if qemu is None:
        qemu = virtual_lab.built_as(LabSpec(name=name, state_root=state_root)).get("twin_qemu", "")
    data = _read(source)
    pinet, targets = data["pinet"], data.get("targets") or {}
    index = LabSpec(name=name).index
    hosts = []
    for host, entry in (pinet.get("hosts") or {}).items():
        address = str(
            ((targets.get(host) or {}).get("resources") or {}).get("NetworkService", {}).get("address", "")
        )
        match = MGMT.match(address)
        if match is None:
            raise PinetError(f"{source}: host {host} has no NetworkService address a twin can take")
        hosts.append(HostSpec(host, str(entry["role"]), mgmt=f"10.203.{index}.{match.group(2)}"))
    links = tuple(
        LinkSpec(
            str(link["name"]),
            str(link["board"]),
            str(link["board_interface"]),
            str(link["peer"]),
            str(link["peer_interface"]),
            speed_mbps=int(link.get("speed_mbps", 1000)),
            mtu=int(link.get("mtu", 1500)),
            adapter=str(link.get("adapter", "builtin")),
            board_address=str(link["board_address"]),
            peer_address=str(link["peer_address"]),
        )
        for link in pinet.get("links") or []
    )
    routes = tuple(
        RouteSpec(str(r["name"]), str(r["board"]), lan=str(r["lan"]), wan=str(r["wan"]))
        for r in pinet.get("routes") or []
    )
    disks = tuple(DiskSpec(str(d["name"]), str(d["host"]), DISK_MIB) for d in pinet.get("disks") or [])
    if qemu:
        hosts.sort(key=lambda host: host.name != qemu)
    return LabSpec(
        name=name,
        hosts=tuple(hosts),
        links=links,
        routes=routes,
        disks=disks,
        state_root=state_root,
        links_provisioned=True,
        board="qemu" if qemu else "netns",
        image=QEMU_IMAGE if qemu else "",
    )


def mgmt_prefix(source: Path) -> str:
    """The file's management network, as its first host's address starts (``192.168.10.``)."""
    data = _read(source)
    for target in (data.get("targets") or {}).values():
        address = str(_resource(target, "NetworkService").get("address", ""))
        match = MGMT.match(address)
        if match:
            return match.group(1) + "."
    raise PinetError(f"{source}: no NetworkService address, so no management network to twin")


def disk_devices(twin: Twin) -> dict[str, str]:
    """Each scratch disk's loop device, by the disk's name."""
    found = {
        Path(back).name.removesuffix(".img"): device
        for device, back in virtual_lab.loop_devices(twin.spec.state_dir)
    }
    return {d.name: found[d.name] for d in twin.spec.disks if d.name in found}


def substitutions(twin: Twin) -> dict[str, str]:
    """The map from the lab's file to its twin: what differs, and nothing else.

    The management network keeps its last octets; a disk's device is its loop device; the
    peers' user ``lab`` is :data:`TWIN_USER`; the TFTP root is the twin's folder."""
    data = _read(twin.source)
    pinet = data["pinet"]
    index = twin.spec.index
    found = {mgmt_prefix(twin.source): f"10.203.{index}."}
    devices = disk_devices(twin)
    for disk in pinet.get("disks") or []:
        if disk["name"] in devices:
            found[str(disk["device"])] = devices[disk["name"]]
    for target in (data.get("targets") or {}).values():
        service = _resource(target, "NetworkService")
        if service.get("username") not in (None, "root"):
            found[f"username: {service['username']}"] = f"username: {TWIN_USER}"
        tftp = _resource(target, "TFTPProvider")
        if tftp:
            found[str(tftp["internal"])] = str(twin.folder / "tftp") + "/"
    # A veth is not an RTL8153: its driver, USB IDs and bus are no adapter's, and the lab's
    # health check would rightly call every USB link a mismatch. The twin's USB adapters are
    # the virtual lab's emulated one (docs/rehearsal.md).
    for link in pinet.get("links") or []:
        if str(link.get("adapter", "builtin")) != "builtin":
            found[f"adapter: {link['adapter']}"] = "adapter: emulated-usb"
    return found


def substitute(text: str, table: dict[str, str]) -> str:
    """``text`` with each key of ``table`` replaced, longest first (a path before its prefix)."""
    for old in sorted(table, key=len, reverse=True):
        text = text.replace(old, table[old])
    return text


def _power_ports(source: Path) -> dict[str, dict[str, Any]]:
    """Each power device of the file (by its address): its model and its ports' hosts."""
    devices: dict[str, dict[str, Any]] = {}
    for host, target in (_read(source).get("targets") or {}).items():
        port = _resource(target, "NetworkPowerPort")
        if not port:
            continue
        raw = str(port["host"])
        address = urlsplit(raw).hostname if "://" in raw else raw
        entry = devices.setdefault(str(address), {"model": str(port["model"]), "ports": {}})
        entry["ports"][str(port["index"])] = host
    return devices


@dataclass(frozen=True)
class ConsoleLine:
    """A board's line on a console server: its TCP port and how it is spoken there
    (``rfc2217``: labgrid sets the speed through the server; ``raw``: plain TCP, the server's
    own port setting holds the speed)."""

    board: str
    address: str
    port: int
    protocol: str = "rfc2217"


def _consoles(source: Path) -> dict[str, list[ConsoleLine]]:
    """Each console server of the file (by its address): the lines of its boards."""
    servers: dict[str, list[ConsoleLine]] = {}
    for host, target in (_read(source).get("targets") or {}).items():
        serial = _resource(target, "NetworkSerialPort")
        if serial:
            protocol = str(serial.get("protocol", "rfc2217"))
            if protocol not in ("rfc2217", "raw"):
                raise PinetError(
                    f"{source}: {host}'s NetworkSerialPort protocol {protocol!r}: rfc2217 or raw"
                )
            line = ConsoleLine(host, str(serial["host"]), int(serial["port"]), protocol)
            servers.setdefault(line.address, []).append(line)
    return servers


def _twin_address(spec: LabSpec, source: Path, address: str) -> str:
    match = MGMT.match(address)
    if match is None or match.group(1) + "." != mgmt_prefix(source):
        raise PinetError(f"{source}: {address} is not on the lab's management network")
    return f"10.203.{spec.index}.{match.group(2)}"


def up(source: Path, name: str, state_root: Path) -> Twin:
    """Build the twin of ``source`` (hosts, cables, disks, rack); a failure removes it all."""
    spec = plan(source, name, state_root, qemu_choice(source))
    system.require_tools(("ser2net",))
    virtual_lab.up(spec, replace=True)
    twin = Twin(spec, source.resolve())
    try:
        twin.folder.mkdir(mode=0o755, exist_ok=True)
        (twin.folder / "tftp").mkdir(exist_ok=True)
        twin.root_home.mkdir(mode=0o700, exist_ok=True)
        _own_logins(twin)
        _rack(twin)
        # The plan ``down`` and the power ports read again: a copy that lives as long as the
        # twin, so a lab file moved or edited meanwhile cannot strand it.
        kept = twin.folder / "twinned.yaml"
        kept.write_text(twin.source.read_text(encoding="utf-8"), encoding="utf-8")
        built = json.loads((spec.state_dir / "lab.json").read_text(encoding="utf-8"))
        built["twin"] = str(kept)
        built["twin_qemu"] = qemu_host(spec)
        (spec.state_dir / "lab.json").write_text(json.dumps(built), encoding="utf-8")
    except BaseException:
        virtual_lab.down(spec)
        raise
    return twin


def of(name: str, state_root: Path) -> Twin | None:
    """The twin that is up under ``name``, if that lab is one."""
    probe = LabSpec(name=name, state_root=state_root)
    source = virtual_lab.built_as(probe).get("twin")
    return Twin(plan(Path(source), name, state_root), Path(source)) if source else None


def qemu_host(spec: LabSpec) -> str:
    """The twin's QEMU board, or "" when every board is a namespace."""
    return spec.board_host.name if spec.is_qemu else ""


def _own_logins(twin: Twin) -> None:
    """Each host's sshd reads the logging-in user's own ``~/.ssh/authorized_keys`` (root's in
    the twin's root home), not the virtual lab's shared key: the page's key step lets pinet in."""
    for host in twin.spec.hosts:
        if host.name == qemu_host(twin.spec):
            continue  # its own sshd, in its own OS: root's keys in its /root/.ssh
        host_dir = twin.spec.host_dir(host.name)
        config = host_dir / "sshd_config"
        text = config.read_text(encoding="utf-8")
        kept = [line for line in text.splitlines() if not line.startswith(("AuthorizedKeys",))]
        kept.append("AuthorizedKeysFile .ssh/authorized_keys")
        kept += ["Match User root", f"    AuthorizedKeysFile {twin.root_home}/.ssh/authorized_keys"]
        config.write_text("\n".join(kept) + "\n", encoding="utf-8")
        sshd.stop(host_dir)
        sshd.start(twin.spec.netns(host.name), host_dir, twin.spec.mgmt_address(host.name))


def _rack(twin: Twin) -> None:
    """The rack's namespace on the management network: the file's power devices and console
    servers at their (twin) addresses."""
    spec = twin.spec
    addresses = set(_power_ports(twin.source)) | set(_consoles(twin.source))
    rack.plumb(spec, virtual_lab.run_ip, [_twin_address(spec, twin.source, a) for a in sorted(addresses)])
    boards = [h.name for h in spec.hosts if h.role == "board"]
    for number, (address, device) in enumerate(sorted(_power_ports(twin.source).items())):
        _start_switch(twin, number, _twin_address(spec, twin.source, address), device, boards)
    for address, lines in sorted(_consoles(twin.source).items()):
        _start_console_server(twin, _twin_address(spec, twin.source, address), lines)


def _start_switch(twin: Twin, number: int, address: str, device: dict[str, Any], boards: list[str]) -> None:
    folder = twin.folder
    ports = {index: _port(twin, host) for index, host in device["ports"].items()}
    # The boards' UARTs live with their power (a board that is off sends nothing).
    uarts = [
        {"tty_link": str(folder / f"{b}.tty"), "uart_socket": str(folder / f"{b}.uart")}
        for b in boards
        if b in device["ports"].values()
    ]
    config = {
        "address": address,
        "port": 80,
        "ports": ports,
        "log": str(folder / f"power-{number}.log"),
        "uarts": uarts,
        "ready": str(folder / f"power-{number}.pid"),  # written once it serves
    }
    path = folder / f"power-{number}.json"
    path.write_text(json.dumps(config, indent=1), encoding="utf-8")
    argv = [sys.executable, "-m", "pytest_pinet.virtlab.power_switch", str(path)]
    rack.spawn(twin.spec, argv, folder / f"power-{number}.out", cwd=folder)
    rack.wait(
        (folder / f"power-{number}.pid").exists, WAIT_S, f"the {device['model']} power device at {address}"
    )
    if device["model"] == "poe_mib":
        _start_snmp_agent(twin, path, address)


def _start_snmp_agent(twin: Twin, power: Path, address: str) -> None:
    """A managed PoE switch's SNMP agent at its address: net-snmp's snmpd, the PoE MIB's port
    column passed to ``poe_agent`` which switches the power device's ports (labgrid's
    ``poe_mib`` model then power-cycles the twin's boards over SNMP, as on the lab's switch)."""
    system.require_tools(("snmpd",))
    helper = [sys.executable, "-m", "pytest_pinet.virtlab.poe_agent", str(power)]
    config = power.with_suffix(".snmpd.conf")
    network = f"{address.rsplit('.', 1)[0]}.0/24"  # the management network, as a switch allows it
    config.write_text(poe_agent.snmpd_config(address, helper, network), encoding="utf-8")
    argv = poe_agent.snmpd_argv(config, power.with_suffix(".snmpd.pid"))
    rack.spawn(
        twin.spec,
        argv,
        power.with_suffix(".snmpd.out"),
        cwd=twin.folder,
        env=poe_agent.snmpd_environment(twin.folder),
    )
    rack.wait(
        partial(rack.listening, twin.spec, poe_agent.SNMP_PORT, address, udp=True),
        WAIT_S,
        f"the PoE switch's SNMP agent at {address}",
    )


def _port(twin: Twin, host: str) -> dict[str, Any]:
    """A power port's switching: a namespace host's power command, or the QEMU board's
    process, its serial port on the board's UART.  Every host is on when the rack is: a
    lab's boards and peers are plugged in."""
    spec = twin.spec
    if host == qemu_host(spec):
        argv = rack.qemu_argv(spec, twin.folder / f"{host}.uart")
        log = str(qemu_board.log_path(spec))
        return {"name": host, "kind": "qemu", "argv": argv, "log": log, "on_at_start": True}
    return {
        "name": host,
        "kind": "netns",
        "on": shlex.split(envfile.power_command(spec, host, "on")),
        "off": shlex.split(envfile.power_command(spec, host, "off")),
        "on_at_start": True,
    }


def _start_console_server(twin: Twin, address: str, lines: list[ConsoleLine]) -> None:
    """ser2net at the console server's address, each line as the file speaks it: RFC 2217
    (telnet with the serial options) or raw TCP."""
    folder = twin.folder
    text = "%YAML 1.1\n---\n"
    for line in lines:
        board = line.board
        rack.wait((folder / f"{board}.tty").exists, WAIT_S, f"{board}'s UART")
        accepter = "telnet(rfc2217),tcp" if line.protocol == "rfc2217" else "tcp"
        text += (
            f"connection: &{board}\n"
            f"  accepter: {accepter},{address},{line.port}\n"
            f"  connector: serialdev,{folder / f'{board}.tty'},115200n81,local\n"
            "  options:\n"
            "    kickolduser: true\n"
        )
    config = folder / f"ser2net-{address}.yaml"
    config.write_text(text, encoding="utf-8")
    argv = [system.find_tool("ser2net"), "-n", "-c", str(config)]
    rack.spawn(twin.spec, argv, folder / f"ser2net-{address}.log", cwd=folder)
    for line in lines:
        serving = partial(rack.listening, twin.spec, line.port, address)
        rack.wait(serving, WAIT_S, f"the console server on {address}:{line.port}")


def console_line(twin: Twin, board: str) -> ConsoleLine:
    """``board``'s line on its console server, at the server's twin address."""
    for address, lines in _consoles(twin.source).items():
        for line in lines:
            if line.board == board:
                return ConsoleLine(
                    board, _twin_address(twin.spec, twin.source, address), line.port, line.protocol
                )
    raise PinetError(f"{twin.source}: {board} has no NetworkSerialPort, so no console to log in at")
