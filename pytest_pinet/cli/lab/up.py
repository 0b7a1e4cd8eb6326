"""``pinet lab up``: build the virtual lab (namespaces, and the QEMU board), one lab or K places,
with its rack (power switch, console server, exporter) on request; ``pinet lab down`` undoes it."""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

from ...errors import ConfigError
from ...virtlab import lab_status, twin, two_boards, virtual_lab
from ...virtlab.names import ACCELERATORS, BOARD_KINDS, DEFAULT_IMAGE
from ...virtlab.qemu_image import RECIPES
from ...virtlab.topology import QEMU_BOARD, LabSpec
from .lab_args import add_lab_option, spec_of
from .power import check_qemu_board
from .status import print_status


def register(lab_sub: Any) -> None:
    """Register ``lab up`` on ``pinet lab``'s subparsers."""
    up = lab_sub.add_parser("up", help="build the lab: hosts, GbE link, sshd, labgrid env file")
    add_lab_option(up)
    up.add_argument("--replace", action="store_true", help="rebuild even if the lab is up")
    up.add_argument(
        "--places",
        type=int,
        default=0,
        metavar="K",
        help="build K independent labs pinet1..pinetK, one place per xdist worker (ignores --lab)",
    )
    up.add_argument(
        "--board",
        choices=BOARD_KINDS,
        default="both",
        help="the boards: both (default: pi, a namespace, and qpi, a QEMU machine with its own "
        "kernel, console and USB), netns or qemu alone",
    )
    up.add_argument(
        "--image",
        choices=[r.name for r in RECIPES],
        default=DEFAULT_IMAGE,
        help="the OS image on the QEMU board's SD card at lab up (--pinet-image reflashes it)",
    )
    up.add_argument(
        "--accel", choices=ACCELERATORS, default="tcg", help="how QEMU runs the board (default tcg)"
    )
    up.add_argument(
        "--no-boot-check",
        dest="boot_check",
        action="store_false",
        help="QEMU board: skip booting and power-cycling it through labgrid once after building",
    )
    up.add_argument(
        "--rack",
        action="store_true",
        help="QEMU board: power switch, console server (ser2net) and labgrid exporter, as a hardware lab's",
    )
    up.add_argument("--coordinator", default="", help="HOST:PORT the rack's exporter publishes to (--rack)")
    up.add_argument(
        "--twin",
        default="",
        metavar="ENV",
        help="instead: a twin of a hardware lab's env file (its hosts, cables, power devices and "
        "consoles, docs/rehearsal.md), to rehearse its pages' steps on this machine",
    )
    up.set_defaults(func=cmd_lab_up)


def cmd_lab_up(args: argparse.Namespace) -> int:
    if args.places:
        return _places_up(args)
    if args.twin:
        return _twin_up(args)
    spec = spec_of(args)
    started = time.monotonic()
    env_file = virtual_lab.up(spec, replace=args.replace)
    print(f"virtual lab {spec.name} up in {time.monotonic() - started:.1f} s; env file {env_file}")
    print_status(lab_status.status(spec), as_json=False)
    if args.rack:
        return _rack_up(spec, args.coordinator)
    if (spec.is_qemu or spec.is_pair) and args.boot_check:
        check_qemu_board(env_file, QEMU_BOARD)
    return 0


def _places_up(args: argparse.Namespace) -> int:
    """K independent labs pinet1..pinetK: own namespaces, addresses, keys and env file each."""
    if not 1 <= args.places <= 99:
        raise ConfigError("--places", f"must be 1..99, got {args.places}")
    for number in range(1, args.places + 1):
        args.lab = f"pinet{number}"
        spec = spec_of(args)
        started = time.monotonic()
        env_file = virtual_lab.up(spec, replace=args.replace)
        print(f"place {spec.name} up in {time.monotonic() - started:.1f} s; env file {env_file}")
        if (spec.is_qemu or spec.is_pair) and args.boot_check:
            check_qemu_board(env_file, QEMU_BOARD)
    print(
        f"{args.places} places up; run `pytest -n {args.places}` (each worker takes its own) "
        "and `pinet lab down` to remove them"
    )
    return 0


def _rack_up(spec: LabSpec, coordinator: str) -> int:
    """The virtual rack in front of the QEMU board (power switch, ser2net, exporter)."""
    from ...virtlab import rack

    try:
        env_file = rack.up(spec, coordinator, virtual_lab.run_ip)
    except BaseException:
        virtual_lab.down(spec)
        raise
    print(
        f"virtual rack of {spec.name}: switch {rack.switch_url(spec)}, console "
        f"rfc2217://{rack.address(spec)}:{rack.CONSOLE_PORT}, place {spec.name} on {coordinator}\n"
        f"use it: pytest --pinet-coordinator {coordinator} --pinet-place-tags {rack.TAGS[0]} "
        f"--pinet-lab {env_file.parent}"
    )
    return 0


def _twin_up(args: argparse.Namespace) -> int:
    """The twin of ``--twin ENV``, and the map from that file to it."""
    state_root = Path(args.state_root) if args.state_root else LabSpec(name=args.lab).state_root
    started = time.monotonic()
    built = twin.up(Path(args.twin), args.lab, state_root)
    print(f"twin {args.lab} of {built.source} up in {time.monotonic() - started:.1f} s")
    qemu = twin.qemu_host(built.spec)
    print(
        f"board {qemu} is a QEMU board (booting from its SD card; its console is its console server line)"
        if qemu
        else f"every board is a namespace: {two_boards.qemu_missing() or 'the file names one board'}"
    )
    print("its env is that file with these changes (docs/rehearsal.md):")
    for old, new in sorted(twin.substitutions(built).items()):
        print(f"  {old}  ->  {new}")
    print(f"root's ~/.ssh on its hosts: {built.root_home}/.ssh; pinet lab down --lab {args.lab} removes it")
    return 0
