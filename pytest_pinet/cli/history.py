"""`pinet trends`, `pinet compare` and `pinet runs`: what a nightly user asks of the history.

All three read the results store (``--db``, else ``$PINET_DB``, else the default store in the
XDG data directory) and print for people, or JSON with ``--json``.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

from ..errors import PinetError
from ..judge.changepoints import ChangePoint, ChangePolicy, detect_change_points
from ..judge.standing import Acceptance
from ..record.data_home import default_store_url
from ..record.store import ResultsStore, store_exists
from ..redaction import mask

STORE_HELP = "store URL (default: $PINET_DB, else pinet.sqlite in ~/.local/share/pinet)"


def open_store(db: str | None) -> ResultsStore:
    """The store named, else $PINET_DB, else the default; a missing SQLite file is an error."""
    url = db or os.environ.get("PINET_DB") or default_store_url()
    if not store_exists(url):
        raise PinetError(f"no results store at {url}: run the suite first or pass --db")
    return ResultsStore(url)


def cmd_trends(args: argparse.Namespace) -> int:
    """Change points over every context's history in the results store."""
    from ..record.context_trend import run_series

    store = open_store(args.db)
    policy = ChangePolicy(min_change_percent=args.min_change)
    found = 0
    report: list[dict[str, Any]] = []
    try:
        acceptances = store.acceptances()
        for key in store.context_keys():
            series = run_series(store.history(key), args.metric)
            if not series:
                continue
            changes = detect_change_points(series, policy)
            label = ", ".join(
                p
                for p in key.split("|")
                if p.split("=", 1)[0] in ("board", "link", "direction", "duplex", "profile", "qdisc")
                and not p.endswith("=")
            )
            found += len(changes)
            report.append(
                {
                    "context": key,
                    "label": label,
                    "runs": len(series),
                    "change_points": [
                        {
                            **asdict(change),
                            "explain": explain_change(change, args.metric),
                            "accepted": _accepted(key, change, acceptances),
                        }
                        for change in changes
                    ],
                }
            )
            if args.json:
                continue
            if args.verbose or changes:
                print(f"{label}  ({len(series)} runs)")
            for change in changes:
                print(f"  change point: {explain_change(change, args.metric)}")
                for line in _accepted(key, change, acceptances):
                    print(f"    {line}")
    finally:
        store.close()
    if args.json:
        print(json.dumps({"store": mask(store.url), "change_points": found, "contexts": report}, indent=2))
    else:
        print(f"{found} change point(s)" if found else "no change points")
    return 1 if found else 0


def _accepted(key: str, change: ChangePoint, acceptances: Sequence[Acceptance]) -> list[str]:
    """The acceptances that made ``change`` the new level of context ``key``, one line each."""
    return [a.explain() for a in acceptances if a.covers(key, change.run_id)]


def explain_change(change: ChangePoint, metric: str) -> str:
    """A change point in the metric's unit, saying whether it went the metric's bad way."""
    if metric != "latency":
        return change.explain()
    worse = change.after_mean > change.before_mean  # RTT under load: lower is better
    changes = ", ".join(f"{k} {a} -> {b}" for k, (a, b) in change.came_with.items()) or "no recorded change"
    return (
        f"run {change.run_id}: RTT under load {change.before_mean:.1f} -> {change.after_mean:.1f} ms "
        f"({change.change_percent:+.2f} %, {'worse' if worse else 'better'}: lower is better, "
        f"p={change.p_value:.1e}); came with: {changes}"
    )


def cmd_compare(args: argparse.Namespace) -> int:
    """Two runs per context: both figures, the change, and whether it is beyond noise."""
    from ..record.compare import as_data, compare_runs, table, value_of

    store = open_store(args.db)
    try:
        a, b = store.of_run(args.run_a), store.of_run(args.run_b)
        for run_id, rows in ((args.run_a, a), (args.run_b, b)):
            if not rows:
                raise PinetError(
                    f"run {run_id} has no measurements in {mask(store.url)}: see `pinet runs list`"
                )
        history: dict[str, list[float]] = {}
        for key in {row.context_key for row in (*a, *b)}:
            per_run: dict[str, list[float]] = {}
            for row in store.history(key):
                if row.run_id not in (args.run_a, args.run_b) and row.verdict not in (
                    "lab-fault",
                    "invalid-thermal",
                ):
                    value = value_of(row, args.metric)
                    if value is not None:
                        per_run.setdefault(row.run_id, []).append(value)
            history[key] = [sorted(v)[len(v) // 2] for v in per_run.values()]
        deltas = compare_runs(a, b, history, args.metric)
    finally:
        store.close()
    if args.json:
        print(json.dumps({"run_a": args.run_a, "run_b": args.run_b, "contexts": as_data(deltas)}, indent=2))
    else:
        print("\n".join(table(deltas, args.run_a, args.run_b)))
    return 1 if any(d.beyond_noise for d in deltas) else 0


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
            runs = store.runs()
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
    """Register trends, compare and runs on the ``pinet`` command's subparsers."""
    trends = sub.add_parser("trends", help="change points over each context's history in the results store")
    trends.add_argument("--db", default=None, help=STORE_HELP)
    trends.add_argument("--min-change", type=float, default=1.0, help="smallest shift that counts, percent")
    trends.add_argument("-v", "--verbose", action="store_true", help="list contexts without changes too")
    trends.add_argument("--json", action="store_true", help="every context and its change points as JSON")
    trends.add_argument(
        "--metric",
        choices=("goodput", "latency"),
        default="goodput",
        help="goodput (per-second Mbit/s) or latency (every probe's RTT under load, ms; a rise is worse)",
    )
    trends.set_defaults(func=cmd_trends)

    compare = sub.add_parser("compare", help="two runs per context: figures, change and whether beyond noise")
    compare.add_argument("run_a")
    compare.add_argument("run_b")
    compare.add_argument("--db", default=None, help=STORE_HELP)
    compare.add_argument("--json", action="store_true", help="the comparison as JSON")
    compare.add_argument(
        "--metric",
        choices=("goodput", "latency"),
        default="goodput",
        help="goodput (Mbit/s, higher is better) or latency (RTT under load p99, ms, lower is better)",
    )
    compare.set_defaults(func=cmd_compare)

    runs = sub.add_parser("runs", help="list the runs of the store; exclude a known-bad one from baselines")
    runs.add_argument("action", nargs="?", choices=("list", "exclude", "include"), default="list")
    runs.add_argument("run", nargs="?", help="the run id (exclude, include)")
    runs.add_argument("--why", help="why the run is excluded (required for exclude)")
    runs.add_argument("--db", default=None, help=STORE_HELP)
    runs.add_argument("--json", action="store_true", help="the runs as JSON")
    runs.set_defaults(func=cmd_runs)
