"""``pinet lab export``: offer places pinet1..K of the virtual lab through a labgrid
coordinator (an exporter config and one RemotePlace env file per place)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from .lab_args import add_lab_option, spec_of


def register(lab_sub: Any) -> None:
    """Register ``lab export`` on ``pinet lab``'s subparsers."""
    export = lab_sub.add_parser(
        "export", help="offer places pinet1..K through a labgrid coordinator (exporter + env files)"
    )
    add_lab_option(export)
    export.add_argument("--places", type=int, required=True, metavar="K", help="places pinet1..pinetK")
    export.add_argument("--out", required=True, help="directory for exporter.yaml and PLACE.yaml env files")
    export.add_argument("--coordinator", default="", help="HOST:PORT: create the places there, tagged")
    export.add_argument("--exporter-name", default="pinet", help="the exporter's -n name (default pinet)")
    export.set_defaults(func=cmd_lab_export)


def cmd_lab_export(args: argparse.Namespace) -> int:
    """Write exporter and RemotePlace env files for places pinet1..K; register them."""
    from ...lab.coordinator import Client
    from ...virtlab.coordinator_export import DEFAULT_TAGS, register_places, write_export

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
