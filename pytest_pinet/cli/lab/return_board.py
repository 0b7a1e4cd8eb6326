"""``pinet lab return BOARD``: put a board that is out of service back into the nights.

A board whose health check failed ``--pinet-out-of-service-after`` nights in a row is left out
of every night (record/board_service.py) until a person who fixed it says so here: the next
night measures it again, and its earlier failed checks no longer count.
"""

from __future__ import annotations

import argparse
import getpass
from typing import Any

from ...errors import ConfigError
from ..store_access import STORE_HELP, open_store


def register(lab_sub: Any) -> None:
    """``pinet lab return BOARD [--lab-name LAB] [--why TEXT]``."""
    back = lab_sub.add_parser(
        "return", help="put a board that is out of service (failed health checks) back into the nights"
    )
    back.add_argument("board")
    back.add_argument(
        "--lab-name",
        default=None,
        help="the lab (its env file's pinet: lab:); needed only when the store holds several with this board",
    )
    back.add_argument("--why", default="", help="what was fixed (kept with the return)")
    back.add_argument("--who", default=None, help="who returns it (default: this user)")
    back.add_argument("--db", default=None, help=STORE_HELP)
    back.set_defaults(func=cmd_lab_return)


def cmd_lab_return(args: argparse.Namespace) -> int:
    """Return the board; say whether it was out of service, and since when."""
    store = open_store(args.db)
    try:
        labs = [lab for lab in store.labs_with_board(args.board) if args.lab_name in (None, lab)]
        if not labs:
            where = f" of lab {args.lab_name}" if args.lab_name else ""
            raise ConfigError(
                args.board, f"no health check of this board{where} in the store: nothing to return"
            )
        if len(labs) > 1:
            raise ConfigError(
                "--lab-name", f"{args.board} is a board of {', '.join(labs)}: name one with --lab-name"
            )
        lab = labs[0]
        was = store.board_out_of_service(lab, args.board, 1)  # what had failed its last checks
        who = str(args.who or getpass.getuser())
        store.return_board(lab, args.board, who, args.why)
    finally:
        store.close()
    if not was:
        print(f"{args.board} of {lab}: returned by {who} (its last health checks passed)")
    else:
        print(f"{args.board} of {lab}: returned to service by {who}")
    for out in was:
        print(
            f"  {out.name}: had failed {out.nights} night(s) in a row since run {out.since_run}: {out.reason}"
        )
    print(f"{args.board}: the next night measures it; its earlier failed checks no longer count")
    return 0
