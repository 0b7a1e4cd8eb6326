"""Write the labgrid environment file that describes a virtual lab.

The file is an ordinary labgrid env: one target per host with a ``NetworkService`` (how to
reach it) and an ``ExternalPowerDriver`` (how to switch it off and on), plus a ``pinet:``
section with what labgrid has no words for: roles, links, the pinned known_hosts.  The same
reader then serves the virtual lab and a real one.
"""

from __future__ import annotations

import shlex
import sys
from pathlib import Path
from typing import Any

import yaml

from ..lab.traffic_turn import machine_turn_file
from . import qemu_board
from .qemu_image import BoardImage
from .topology import LabSpec

QEMU_ADAPTIVE_PRECISION_PCT = 10.0


def power_command(spec: LabSpec, host: str, state: str) -> str:
    """The command line labgrid runs to switch ``host`` on or off."""
    argv = [
        sys.executable,
        "-m",
        "pytest_pinet.cli",
        "lab",
        "vhost-power",
        "--lab",
        spec.name,
        "--state-root",
        str(spec.state_root),
        host,
        state,
    ]
    return shlex.join(argv)


def env_data(
    spec: LabSpec, devices: dict[str, str] | None = None, image: BoardImage | None = None
) -> dict[str, Any]:
    """The env file's content as data (``image``: the QEMU board's, for a QEMU lab)."""
    targets, extra_sections = _targets(spec, image)
    _declare_features(spec, targets, devices or {})
    return {"targets": targets, **extra_sections, "pinet": _pinet_section(spec, devices or {}, image)}


def _targets(spec: LabSpec, image: BoardImage | None) -> tuple[dict[str, Any], dict[str, Any]]:
    """One labgrid target per host, and the sections a QEMU board's target needs beside them."""
    targets: dict[str, Any] = {}
    extra_sections: dict[str, Any] = {}
    for host in spec.hosts:
        if spec.is_qemu and host.name == spec.board_host.name:
            if image is None:
                raise ValueError("a QEMU lab's env file needs the board image")
            public_key = (spec.state_dir / "id_ed25519.pub").read_text(encoding="utf-8")
            targets[host.name] = qemu_board.target(spec, public_key)
            extra_sections = qemu_board.env_sections(spec, image)
            continue
        targets[host.name] = {
            "resources": {
                "NetworkService": {"address": spec.mgmt_address(host.name), "username": "root", "port": 22}
            },
            "drivers": {
                "ExternalPowerDriver": {
                    "cmd_on": power_command(spec, host.name, "on"),
                    "cmd_off": power_command(spec, host.name, "off"),
                    "delay": 1.0,
                }
            },
        }
    return targets, extra_sections


def _declare_features(spec: LabSpec, targets: dict[str, Any], devices: dict[str, str]) -> None:
    """labgrid's feature flags: which boards have what the adapter and storage suites need
    (``pytest.mark.lg_feature``), as a lab declares them in its own env file."""
    for host in spec.hosts:
        features = sorted(
            {"usb-ethernet" for link in spec.links if link.board == host.name and link.adapter != "builtin"}
            | {"usb-disk" for disk in spec.disks if disk.host == host.name and disk.name in devices}
        )
        if features and host.name in targets:
            targets[host.name]["features"] = features


def _links(spec: LabSpec) -> list[dict[str, Any]]:
    return [
        {
            "name": link.name,
            "board": link.board,
            "board_interface": link.board_interface,
            "board_address": spec.link_address(link, "board"),
            "peer": link.peer,
            "peer_interface": link.peer_interface,
            "peer_address": spec.link_address(link, "peer"),
            "adapter": link.adapter,
            "speed_mbps": link.speed_mbps,
            "mtu": link.mtu,
        }
        for link in spec.links
    ]


def _pinet_section(spec: LabSpec, devices: dict[str, str], image: BoardImage | None) -> dict[str, Any]:
    """What labgrid has no words for: roles, links, routes, disks, the pinned known_hosts."""
    hosts: dict[str, Any] = {
        host.name: {"role": host.role, "tcp_congestion": "cubic"}
        | ({"model": host.model} if host.model else {})
        for host in spec.hosts
    }
    if spec.is_qemu:
        # Off until a test run's strategy boots it through labgrid, as a board on a PDU.
        hosts[spec.board_host.name]["power_on_at_start"] = True
        # Emulated (TCG): its seconds scatter by 5-25 % and its nights by 13-41 %, so a run
        # stops once its mean is known to 10 % (measure/base.board_settle).
        hosts[spec.board_host.name]["adaptive_precision_pct"] = QEMU_ADAPTIVE_PRECISION_PCT
    disk_bus = "usb" if spec.is_qemu else "loop"
    # The QEMU board's OS images, flashed onto its SD card by --pinet-image or pinet bisect.
    catalogue = {"images": qemu_board.catalogue(image)} if spec.is_qemu and image is not None else {}
    return {
        "lab": spec.name,
        "kind": "virtual",
        "ssh": {
            "identity": str(spec.state_dir / "id_ed25519"),
            "known_hosts": str(spec.state_dir / "known_hosts"),
            # This machine's own namespaces: a developer's ~/.ssh/config has no say here.
            "config": "none",
        },
        # The namespaces share this machine's kernel, whose default congestion control
        # may be BBR; the boards' OSes default to cubic, so the lab asks for it per test.
        "hosts": hosts,
        "links": _links(spec),
        # Every link of every virtual lab here runs on this machine's cores: two boards
        # measured at once would each carry the other's load (lab/traffic_turn.py).
        "traffic_turn": str(machine_turn_file()),
        "routes": [
            {"name": r.name, "board": r.board, "lan": r.lan, "wan": r.wan}
            | ({"omit_s": r.omit_s} if r.omit_s else {})
            for r in spec.routes
        ],
        # A loop device over a sparse file stands for the seed's USB disk; it is the
        # lab's own, so mkfs on it is allowed (scratch).
        "disks": [
            {"name": d.name, "host": d.host, "device": devices[d.name], "scratch": True, "bus": disk_bus}
            for d in spec.disks
            if d.name in devices
        ],
        **catalogue,
    }


def write_env_file(
    spec: LabSpec, devices: dict[str, str] | None = None, image: BoardImage | None = None
) -> Path:
    """Write ``env.yaml`` into the lab's state directory; return its path."""
    header = (
        f"# labgrid environment of virtual lab {spec.name}, written by `pinet lab up`.\n"
        "# Removed by `pinet lab down`; pass it to pytest with --pinet-lab.\n"
    )
    text = header + yaml.safe_dump(env_data(spec, devices, image), sort_keys=False)
    spec.env_file.write_text(text, encoding="utf-8")
    return spec.env_file
