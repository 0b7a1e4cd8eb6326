"""``pinet lab check ENV``: validate a lab env file (pinet section and labgrid targets) without
touching hardware, and list what it describes; ``--live``: also check every board and link of
it against the inventory (docs/lab-health.md)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ...errors import PinetError
from ...exit_codes import Exit
from .lab_args import add_lab_option, spec_of
from .power import board_strategy_for

# Reaches a lab through labgrid: without the lab extra it stops at once, naming the extra.
NEEDS_LAB = True


def register(lab_sub: Any) -> None:
    """``pinet lab check ENV``."""
    check = lab_sub.add_parser("check", help="validate a lab env file without touching hardware")
    check.add_argument(
        "env_file", nargs="?", default=None, help="the env file (default with --live: --lab's)"
    )
    check.add_argument(
        "--live",
        action="store_true",
        help="also connect and compare every board and link with the inventory: expected, found, verdict",
    )
    check.add_argument(
        "--coordinator",
        default=None,
        metavar="HOST:PORT",
        help="the labgrid coordinator of a place file's RemotePlace: check that the place exists there",
    )
    add_lab_option(check)
    check.set_defaults(func=cmd_lab_check)


def cmd_lab_check(args: argparse.Namespace) -> int:
    """Validate a lab env file (pinet section and labgrid targets) with no hardware."""
    from ...host.ssh_route import how_reached
    from ...lab.env_check import check_env_file, remote_places, root_warnings

    if args.env_file is None:
        if not args.live:
            raise PinetError("pinet lab check: name the env file (or --live for the virtual lab)")
        args.env_file = str(spec_of(args).env_file)
    inventory = check_env_file(args.env_file, args.coordinator)
    if args.live:
        return live_check(inventory, Path(args.env_file))
    print(f"{args.env_file}: valid lab {inventory.lab!r}")
    remote = remote_places(args.env_file)
    for place, targets in _by_place(remote).items():
        how = (
            f"the place is on coordinator {args.coordinator}; built by the run that acquires it"
            if args.coordinator
            else "built by the run that acquires the place; give --coordinator HOST:PORT to check it exists"
        )
        print(f"  place {place}: targets {', '.join(targets)} ({how})")
    for host in inventory.hosts.values():
        ep = host.endpoint
        model = f" ({host.model})" if host.model else ""
        login = f"{ep.username}@{ep.address}:{ep.port}"
        if host.name in remote:  # the exporter's NetworkService of the place, named after the host
            login = f"through place {remote[host.name]} (its NetworkService {host.name})"
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
    from ...lab.image_catalogue import problems

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
    from .rule_coverage import rule_coverage

    for line in rule_coverage(inventory):
        print(line)
    for warning in root_warnings(inventory):
        print(f"  WARNING: {warning}")
    return 0


def _by_place(remote: dict[str, str]) -> dict[str, list[str]]:
    """Target names grouped by the place that holds them."""
    places: dict[str, list[str]] = {}
    for target, place in remote.items():
        places.setdefault(place, []).append(target)
    return places


def live_check(inventory: Any, env_file: Path) -> int:
    """Expected, found and verdict per board and link; exit 7 (a lab fault: the lab is not as
    its env file says, the lab's owner is called, not the boards') when any is unhealthy.

    A host the lab keeps dark between runs (the QEMU board) is booted through labgrid for the
    check and switched off again after it, as a test run does.
    """
    from ...lab.health import report_table
    from ...lab.health_gate import check_lab
    from ...lab.health_table import load_health_table

    own = Path("lab") / "lab_health.yaml"
    table = load_health_table([own] if own.is_file() else [])
    booted = []
    try:
        for entry in inventory.hosts.values():
            if entry.power_on_at_start:
                strategy, target = board_strategy_for(env_file, entry.name, 300.0)
                booted.append((strategy, target))
                strategy.transition("reachable")
                print(f"{entry.name}: booted for the check, SSH after {strategy.boot_seconds:.1f} s")
        report = check_lab(inventory, table)
    finally:
        for strategy, target in booted:
            strategy.transition("off")
            target.deactivate_all_drivers()
    for line in report_table(report):
        print(line)
    bad = [s for s in report.subjects() if not report.healthy(s)]
    print(
        f"{inventory.source}: " + (f"UNHEALTHY: {', '.join(bad)}" if bad else "every board and link healthy")
    )
    return int(Exit.LAB_FAULT) if bad else 0


def print_suite_readiness(inventory: Any) -> None:
    """Per suite of pytest_pinet/suite: can this lab run it, on what, and why not."""
    from ...lab.features import suite_readiness
    from ...lab.inventory import read_env_data

    print("  suites:")
    for suite in suite_readiness(inventory, read_env_data(inventory.source)):
        print(f"    {suite.suite:12} {suite.status}: {suite.why}")
