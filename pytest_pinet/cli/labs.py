"""`pinet labs`: every lab of a shared store side by side, each one's newest night in a line
(measured, regressions, below threshold, undecided, lab faults, regressions pending); exit 1
while any lab has a regression pending."""

from __future__ import annotations

import argparse
import json
from typing import Any

from ..exit_codes import Exit
from .store_access import STORE_HELP, open_store


def cmd_labs(args: argparse.Namespace) -> int:
    """Each lab's newest night."""
    from ..record.lab_nights import lab_nights

    store = open_store(args.db)
    try:
        nights = lab_nights(store)
    finally:
        store.close()
    if args.json:
        print(json.dumps([night.as_dict() for night in nights], indent=2))
    else:
        for night in nights:
            print(night.line())
        print(f"{len(nights)} lab(s)" if nights else "no lab has a measured night in this store")
    return int(Exit.REGRESSION) if any(night.pending for night in nights) else 0


def register(sub: Any) -> None:
    """Register ``labs`` on the ``pinet`` command's subparsers."""
    labs = sub.add_parser("labs", help="every lab of a shared store: its newest night and what is pending")
    labs.add_argument("--db", default=None, help=STORE_HELP)
    labs.add_argument("--json", action="store_true", help="the labs' nights as JSON")
    labs.set_defaults(func=cmd_labs)
