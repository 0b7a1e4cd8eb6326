"""What ``pinet lab status`` shows: each host's namespace, sshd (or QEMU) and interfaces, each
cable with its shaping."""

from __future__ import annotations

from dataclasses import dataclass

from . import qemu_board, rack, shaping, sshd
from .topology import COMPANION_NAMES, LabSpec, parts
from .virtual_lab import is_qemu_board, is_up, namespaces, netns_pids, run_ip


@dataclass
class HostStatus:
    """One host as ``pinet lab status`` shows it."""

    name: str
    role: str
    netns: str
    present: bool
    mgmt_address: str
    sshd_running: bool
    interfaces: list[str]


def status(spec: LabSpec) -> dict[str, object]:
    """Hosts, addresses, links and shaping of the lab, as data for display or JSON (of a
    two-board lab: both labs', under the names its env file gives them)."""
    if spec.is_pair:
        return _pair_status(spec)
    present = set(namespaces(spec.netns_prefix))
    hosts = []
    for host in spec.hosts:
        netns = spec.netns(host.name)
        here = netns in present
        interfaces = []
        if here:
            out = run_ip("-br", "addr", "show", netns=netns, check=False)
            interfaces = [" ".join(line.split()) for line in out.splitlines() if line.strip()]
        pid = sshd.read_pid(spec.host_dir(host.name))
        if is_qemu_board(spec, host.name):
            pid = qemu_board.running_pid(spec)
        hosts.append(
            HostStatus(
                host.name,
                host.role,
                netns,
                here,
                spec.mgmt_address(host.name),
                here and pid > 0 and pid in netns_pids(netns),
                interfaces,
            ).__dict__
            | {"qemu": is_qemu_board(spec, host.name)}
        )
    links = []
    for link in spec.links:
        entry: dict[str, object] = {
            "name": link.name,
            "board": f"{link.board}:{link.board_interface} {spec.link_address(link, 'board')}",
            "peer": f"{link.peer}:{link.peer_interface} {spec.link_address(link, 'peer')}",
            "speed_mbps": link.speed_mbps,
            "mtu": link.mtu,
        }
        for side, host_name, device in (
            ("board", link.board, link.board_interface),
            ("peer", link.peer, link.peer_interface),
        ):
            if spec.netns(host_name) in present:
                entry[f"{side}_qdisc"] = shaping.describe(spec.netns(host_name), device)
        links.append(entry)
    return {
        "lab": spec.name,
        "up": is_up(spec),
        "board": spec.board,
        "image": spec.image or None,
        "env_file": str(spec.env_file) if spec.env_file.exists() else None,
        "hosts": hosts,
        "links": links,
        "rack": rack.status(spec),
    }


def _pair_status(pair: LabSpec) -> dict[str, object]:
    both = [status(part) for part in parts(pair)]
    for key in ("hosts", "links"):
        for entry in both[1][key]:  # type: ignore[attr-defined]
            entry["name"] = COMPANION_NAMES.get(entry["name"], entry["name"])
            for side in ("board", "peer"):
                if side in entry and key == "links":
                    host, rest = str(entry[side]).split(":", 1)
                    entry[side] = f"{COMPANION_NAMES.get(host, host)}:{rest}"
    return {
        "lab": pair.name,
        "up": is_up(pair),
        "board": pair.board,
        "image": pair.image or None,
        "env_file": str(pair.env_file) if pair.env_file.exists() else None,
        "hosts": both[0]["hosts"] + both[1]["hosts"],  # type: ignore[operator]
        "links": both[0]["links"] + both[1]["links"],  # type: ignore[operator]
        "rack": both[0]["rack"] or both[1]["rack"],
    }
