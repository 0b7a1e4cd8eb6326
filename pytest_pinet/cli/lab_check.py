"""``pinet lab check ENV``: validate a lab env file (pinet section and labgrid targets) without
touching hardware, and list what it describes."""

from __future__ import annotations

import argparse
from typing import Any


def register(lab_sub: Any) -> None:
    """``pinet lab check ENV``."""
    check = lab_sub.add_parser("check", help="validate a lab env file without touching hardware")
    check.add_argument("env_file")
    check.set_defaults(func=cmd_lab_check)


def cmd_lab_check(args: argparse.Namespace) -> int:
    """Validate a lab env file (pinet section and labgrid targets) with no hardware."""
    from ..host.ssh_route import how_reached
    from ..lab.check import check_env_file

    inventory = check_env_file(args.env_file)
    print(f"{args.env_file}: valid lab {inventory.lab!r}")
    for host in inventory.hosts.values():
        ep = host.endpoint
        model = f" ({host.model})" if host.model else ""
        login = f"{ep.username}@{ep.address}:{ep.port}"
        print(f"  {host.role:5} {host.name:10} ssh {login}{model}, {how_reached(ep)}")
    for link in inventory.links:
        print(
            f"  link  {link.name:14} {link.board}:{link.board_interface} {link.board_address} <-> "
            f"{link.peer}:{link.peer_interface} {link.peer_address}  {link.adapter}, "
            f"{link.speed_mbps} Mbit/s, MTU {link.mtu}"
        )
    for route in inventory.routes:
        print(
            f"  route {route.name:14} {route.wan.peer} ({route.wan.name}) -> {route.board} -> "
            f"{route.lan.peer} ({route.lan.name})"
        )
    from ..lab.image_catalogue import problems

    catalogue = inventory.catalogue
    for image in catalogue.images:
        missing = problems(image)
        print(f"  image {image.describe()}" + (f"  NOT READY: {'; '.join(missing)}" if missing else ""))
    for board in inventory.boards:
        takes = [i.name for i in catalogue.images if catalogue.can_take(board.name, i)]
        how = (
            ", ".join(sorted(catalogue.deliveries.get(board.name, ())))
            or "no image delivery (no SD mux + writer, no TFTP)"
        )
        if catalogue.images:
            print(f"  board {board.name:10} takes {', '.join(takes) or 'none of the images'} ({how})")
    print_suite_readiness(inventory)
    return 0


def print_suite_readiness(inventory: Any) -> None:
    """Per suite of pytest_pinet/suite: can this lab run it, on what, and why not."""
    from ..lab.features import suite_readiness
    from ..lab.inventory import read_env_data

    print("  suites:")
    for suite in suite_readiness(inventory, read_env_data(inventory.source)):
        print(f"    {suite.suite:12} {suite.status}: {suite.why}")
