"""``pinet lab status``: the virtual lab's hosts, addresses, links, shaping and rack, for
people or as JSON; exit 1 when the lab is not up."""

from __future__ import annotations

import argparse
import json
from typing import Any

from ...virtlab import lab_status
from ...virtlab.topology import QEMU_BOARD
from .lab_args import add_lab_option, spec_of


def register(lab_sub: Any) -> None:
    """Register ``lab status`` on ``pinet lab``'s subparsers."""
    status = lab_sub.add_parser("status", help="hosts, addresses, links and shaping")
    add_lab_option(status)
    status.add_argument("--json", action="store_true")
    status.set_defaults(func=cmd_lab_status)


def cmd_lab_status(args: argparse.Namespace) -> int:
    data = lab_status.status(spec_of(args))
    print_status(data, as_json=args.json)
    return 0 if data["up"] else 1


def print_status(data: dict[str, object], *, as_json: bool) -> None:
    if as_json:
        print(json.dumps(data, indent=2))
        return
    board = data.get("board", "netns")
    image = f", image {data['image']}" if data.get("image") else ""
    print(
        f"lab {data['lab']}: {'up' if data['up'] else 'down'}  board {board}{image}  "
        f"env file: {data['env_file'] or '-'}"
    )
    for host in data["hosts"]:  # type: ignore[attr-defined]
        state = "present" if host["present"] else "absent"
        sshd = "sshd running" if host["sshd_running"] else "sshd stopped"
        if host.get("qemu"):
            sshd = "QEMU running" if host["sshd_running"] else "QEMU off (a test run boots it)"
        print(
            f"  host {host['name']:4} ({host['role']}) netns {host['netns']} {state}, {sshd}, "
            f"ssh {host['mgmt_address']}"
        )
        for line in host["interfaces"]:
            print(f"      {line}")
    for link in data["links"]:  # type: ignore[attr-defined]
        print(
            f"  link {link['name']}: {link['board']} <-> {link['peer']}  "
            f"{link['speed_mbps']} Mbit/s MTU {link['mtu']}"
        )
        for side in ("board", "peer"):
            if side == "board" and str(link["board"]).startswith(QEMU_BOARD + ":"):
                print("      board egress: shaped inside the QEMU board")
            elif f"{side}_qdisc" in link:
                print(f"      {side} egress: {link[f'{side}_qdisc']}")
    if data.get("rack"):
        _print_rack(data["rack"])  # type: ignore[arg-type]


def _print_rack(rack: dict[str, object]) -> None:
    def running(key: str) -> str:
        return "running" if rack[key] else "NOT running"

    print(f"  rack netns {rack['netns']}, address {rack['address']}")
    print(f"      power switch {rack['switch']} (simplerest) {running('switch_running')}")
    print(f"      console server {rack['console']} (ser2net) {running('ser2net_running')}")
    print(
        f"      exporter {rack['exporter']} {running('exporter_running')}, "
        f"coordinator {rack['coordinator'] or '-'}, place {rack['place']}"
    )
    print(f"      run's env file: {rack['env_file'] or '-'}")
