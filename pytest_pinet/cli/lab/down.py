"""``pinet lab down``: undo what ``pinet lab up`` made (namespaces, processes, links, files),
safe to repeat and complete after a crash."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ...virtlab import virtual_lab
from ...virtlab.names import COMPANION_SUFFIX
from ...virtlab.topology import LabSpec, companion_name
from .lab_args import add_lab_option, spec_of


def register(lab_sub: Any) -> None:
    """Register ``lab down`` on ``pinet lab``'s subparsers."""
    down = lab_sub.add_parser("down", help="remove everything the lab made (idempotent)")
    add_lab_option(down)
    down.add_argument("--all", action="store_true", help="every pinet lab on this machine")
    down.set_defaults(func=cmd_lab_down)


def _places_present(state_root: Path) -> set[str]:
    """Labs ``pinet lab up --places N`` made (pinet1..pinetN): by namespace or state directory."""
    found = {ns.split("-", 1)[0] for ns in virtual_lab.namespaces("pinet")}
    found |= {p.name for p in state_root.glob("pinet*") if p.is_dir()}
    return {name for name in found if name.removeprefix("pinet").removesuffix(COMPANION_SUFFIX).isdigit()}


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
