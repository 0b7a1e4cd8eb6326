"""`pinet runs [list|exclude|include]`: the runs of the store, and taking a known-bad one out
of the baselines and trends (or back in), always with a reason."""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

from .store_access import STORE_HELP, open_store


def cmd_runs(args: argparse.Namespace) -> int:
    """List the runs, or take one out of (or back into) the baselines."""
    store = open_store(args.db)
    try:
        if args.action == "exclude":
            store.exclude_run(args.run, args.why or "")
            print(f"run {args.run} excluded from baselines and trends: {args.why}")
        elif args.action == "include":
            back = store.include_run(args.run)
            print(f"run {args.run} " + ("counts again" if back else "was not excluded"))
        else:
            runs = [run for run in store.runs() if args.lab in (None, run["lab"])]
            if args.json:
                print(json.dumps(runs, indent=2))
            for run in [] if args.json else runs:
                started = time.strftime("%Y-%m-%d %H:%M", time.gmtime(run["started"]))
                excluded = f"  EXCLUDED: {run['excluded']}" if run["excluded"] else ""
                count = f"{run['measurements']:5} measurements"
                print(f"{run['run_id']:28} {started} UTC  {run['lab']:16} {count}{excluded}")
    finally:
        store.close()
    return 0


def register(sub: Any) -> None:
    """Register ``runs`` on the ``pinet`` command's subparsers."""
    runs = sub.add_parser("runs", help="list the runs of the store; exclude a known-bad one from baselines")
    runs.add_argument("action", nargs="?", choices=("list", "exclude", "include"), default="list")
    runs.add_argument("run", nargs="?", help="the run id (exclude, include)")
    runs.add_argument("--why", help="why the run is excluded (required for exclude)")
    runs.add_argument("--db", default=None, help=STORE_HELP)
    runs.add_argument("--json", action="store_true", help="the runs as JSON")
    runs.add_argument("--lab", default=None, help="list only this lab's runs (a store shared by labs)")
    runs.set_defaults(func=cmd_runs)
