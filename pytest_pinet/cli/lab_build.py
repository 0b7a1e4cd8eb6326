"""``pinet lab up|export|down|status|degrade|vhost-power``: build, offer, inspect, slow and remove
the virtual lab (namespaces, and the QEMU board with ``--board qemu``)."""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

from ..errors import PinetError
from ..virtlab import lab_status, virtual_lab
from ..virtlab.names import ACCELERATORS, BOARD_KINDS, COMPANION_SUFFIX, DEFAULT_IMAGE
from ..virtlab.qemu_image import RECIPES
from ..virtlab.topology import QEMU_BOARD, LabSpec, companion_name
from .lab_options import add_lab_option, spec_of
from .lab_power import check_qemu_board


def register(lab_sub: Any) -> None:
    """The lab-building subcommands of ``pinet lab``."""
    _register_up(lab_sub)
    _register_the_rest(lab_sub)


def _register_up(lab_sub: Any) -> None:
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
    up.set_defaults(func=cmd_lab_up)


def _register_the_rest(lab_sub: Any) -> None:
    export = lab_sub.add_parser(
        "export", help="offer places pinet1..K through a labgrid coordinator (exporter + env files)"
    )
    add_lab_option(export)
    export.add_argument("--places", type=int, required=True, metavar="K", help="places pinet1..pinetK")
    export.add_argument("--out", required=True, help="directory for exporter.yaml and PLACE.yaml env files")
    export.add_argument("--coordinator", default="", help="HOST:PORT: create the places there, tagged")
    export.add_argument("--exporter-name", default="pinet", help="the exporter's -n name (default pinet)")
    export.set_defaults(func=cmd_lab_export)

    down = lab_sub.add_parser("down", help="remove everything the lab made (idempotent)")
    add_lab_option(down)
    down.add_argument("--all", action="store_true", help="every pinet lab on this machine")
    down.set_defaults(func=cmd_lab_down)

    status = lab_sub.add_parser("status", help="hosts, addresses, links and shaping")
    add_lab_option(status)
    status.add_argument("--json", action="store_true")
    status.set_defaults(func=cmd_lab_status)

    vhost = lab_sub.add_parser("vhost-power", help="(internal) switch a virtual host; used by its env file")
    add_lab_option(vhost)
    vhost.add_argument("host")
    vhost.add_argument("state", choices=["on", "off"])
    vhost.set_defaults(func=cmd_lab_vhost_power)


def cmd_lab_up(args: argparse.Namespace) -> int:
    if args.places:
        return _places_up(args)
    spec = spec_of(args)
    started = time.monotonic()
    env_file = virtual_lab.up(spec, replace=args.replace)
    print(f"virtual lab {spec.name} up in {time.monotonic() - started:.1f} s; env file {env_file}")
    _print_status(lab_status.status(spec), as_json=False)
    if args.rack:
        return _rack_up(spec, args.coordinator)
    if (spec.is_qemu or spec.is_pair) and args.boot_check:
        check_qemu_board(env_file, QEMU_BOARD)
    return 0


def _places_up(args: argparse.Namespace) -> int:
    """K independent labs pinet1..pinetK: own namespaces, addresses, keys and env file each."""
    if not 1 <= args.places <= 99:
        raise PinetError(f"--places must be 1..99, got {args.places}")
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


def cmd_lab_export(args: argparse.Namespace) -> int:
    """Write exporter and RemotePlace env files for places pinet1..K; register them."""
    from ..lab.coordinator import Client
    from ..virtlab.coordinator_export import DEFAULT_TAGS, register_places, write_export

    specs = []
    for number in range(1, args.places + 1):
        args.lab = f"pinet{number}"
        specs.append(spec_of(args))
    out = Path(args.out)
    for path in write_export(specs, out):
        print(f"wrote {path}")
    if args.coordinator:
        register_places(Client(args.coordinator), specs, args.exporter_name, DEFAULT_TAGS)
        print(f"places {', '.join(s.name for s in specs)} registered on {args.coordinator}")
    print(
        f"serve them: labgrid-exporter -c {args.coordinator or 'HOST:PORT'} -n {args.exporter_name} "
        f"{out / 'exporter.yaml'}\nuse them: pytest -n {args.places} --pinet-coordinator "
        f"{args.coordinator or 'HOST:PORT'} --pinet-place-tags {DEFAULT_TAGS[0]} --pinet-lab {out / 'places'}"
    )
    return 0


def _places_present(state_root: Path) -> set[str]:
    """Labs ``pinet lab up --places N`` made (pinet1..pinetN): by namespace or state directory."""
    found = {ns.split("-", 1)[0] for ns in virtual_lab.namespaces("pinet")}
    found |= {p.name for p in state_root.glob("pinet*") if p.is_dir()}
    return {name for name in found if name.removeprefix("pinet").removesuffix(COMPANION_SUFFIX).isdigit()}


def _rack_up(spec: LabSpec, coordinator: str) -> int:
    """The virtual rack in front of the QEMU board (power switch, ser2net, exporter)."""
    from ..virtlab import rack

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


def cmd_lab_down(args: argparse.Namespace) -> int:
    """Undo what ``lab up`` made: the named lab, or (no --lab) the default lab and the places
    ``lab up --places`` made; ``--all`` every pinet lab of this machine."""
    state_root = Path(args.state_root) if args.state_root else LabSpec().state_root
    if args.all:
        names = sorted({ns.split("-", 1)[0] for ns in virtual_lab.namespaces("pinet")})
        names = sorted(set(names) | {p.name for p in state_root.glob("pinet*") if p.is_dir()})
    elif args.lab == "pinet":
        names = ["pinet", *sorted(_places_present(state_root), key=lambda n: int(n.removeprefix("pinet")))]
    else:
        names = [args.lab]
    # A two-board lab's QEMU companion goes with it, also when the lab's own record of being
    # a pair was lost (a killed `up`): it is found by name.
    present = {ns.split("-", 1)[0] for ns in virtual_lab.namespaces("pinet")}
    present |= {p.name for p in state_root.glob("pinet*") if p.is_dir()}
    names += [
        companion_name(n) for n in names if companion_name(n) in present and companion_name(n) not in names
    ]
    for name in names or [args.lab]:
        args.lab = name
        report = virtual_lab.down(spec_of(args))
        if report.nothing:
            print(f"virtual lab {name}: nothing to remove")
        else:
            print(
                f"virtual lab {name} down: removed {len(report.namespaces)} namespaces, "
                f"{len(report.links)} links, {report.processes} processes"
                + (f", {report.state_dir}" if report.state_dir else "")
            )
    return 0


def cmd_lab_status(args: argparse.Namespace) -> int:
    data = lab_status.status(spec_of(args))
    _print_status(data, as_json=args.json)
    return 0 if data["up"] else 1


def _print_status(data: dict[str, object], *, as_json: bool) -> None:
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


def cmd_lab_vhost_power(args: argparse.Namespace) -> int:
    """Switch a virtual host itself (what the virtual env's ExternalPowerDriver runs)."""
    spec = spec_of(args)
    try:
        spec.host(args.host)
    except KeyError:
        raise PinetError(
            f"no host {args.host!r} in lab {spec.name}; hosts: {[h.name for h in spec.hosts]}"
        ) from None
    virtual_lab.power(spec, args.host, args.state)
    return 0
