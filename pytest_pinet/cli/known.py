"""`pinet known`: known issues, named against what changed on red contexts' paths.

``pinet known add --change "board eth1 firmware" --why "..."`` says a difference the
fingerprints show is understood (``record.known_issues``); ``pinet regressions`` and the
morning page then show the issue beside every red context whose "what changed" names it.
``--contexts`` narrows it to context keys matching a glob. ``pinet known`` lists the issues,
``pinet known remove ID`` takes one back (its row stays). A known issue is not an
acceptance: the contexts stay red until ``pinet accept``.
"""

from __future__ import annotations

import argparse
import getpass
import time
from typing import Any

from ..errors import PinetError
from .store_access import STORE_HELP, open_store


def cmd_known(args: argparse.Namespace) -> int:
    """Add, remove or list known issues."""
    who = str(args.who or getpass.getuser())
    store = open_store(args.db)
    try:
        if args.action == "add":
            if not (args.change or "").strip() or not (args.why or "").strip():
                raise PinetError("pinet known add: say which difference (--change) and why (--why)")
            issue_id = store.add_known_issue(args.change.strip(), args.why.strip(), who, args.contexts)
            print(f'known issue #{issue_id}: "{args.change.strip()}" on {args.contexts}: {args.why.strip()}')
            return 0
        if args.action == "remove":
            if args.id is None:
                raise PinetError("pinet known remove: name the issue's ID (pinet known lists them)")
            if not store.remove_known_issue(args.id, who):
                raise PinetError(
                    f"pinet known remove: no open known issue #{args.id} (pinet known lists them)"
                )
            print(f"known issue #{args.id} removed by {who}")
            return 0
        issues = store.known_issues()
    finally:
        store.close()
    for issue in issues:
        day = time.strftime("%Y-%m-%d", time.gmtime(issue.at))
        print(f"{issue.text()} on {issue.contexts}, {day}")
    print(f"{len(issues)} known issue(s)")
    return 0


def register(sub: Any) -> None:
    """Register ``known`` on the ``pinet`` command's subparsers."""
    known = sub.add_parser(
        "known",
        help="known issues: a difference on red contexts' paths that is understood (not an acceptance)",
    )
    known.add_argument("action", nargs="?", choices=("list", "add", "remove"), default="list")
    known.add_argument("id", nargs="?", type=int, help="remove: the issue's ID")
    known.add_argument("--change", help='add: the difference it names, as "what changed" shows it')
    known.add_argument("--why", help="add: what is known about it")
    known.add_argument("--contexts", default="*", help="add: only contexts whose key matches this glob")
    known.add_argument("--who", help="who says so (default: the login name)")
    known.add_argument("--db", default=None, help=STORE_HELP)
    known.set_defaults(func=cmd_known)
