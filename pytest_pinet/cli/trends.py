"""`pinet trends`: change points over every context's history in the results store, printed
for people or as JSON with ``--json``; exit 1 when any context changed level."""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

from ..judge.changepoints import ChangePoint, ChangePolicy, detect_change_points
from ..judge.standing import Acceptance
from ..model.context_key import ContextKey
from ..record.known_issues import KnownIssue
from ..record.red_changes import RedChange, change_of
from ..record.store import ResultsStore
from ..redaction import mask
from .store_access import STORE_HELP, open_store


def cmd_trends(args: argparse.Namespace) -> int:
    """Change points over every context's history in the results store."""
    from ..judge.detection import detection_power
    from ..record.context_trend import run_series
    from ..record.detection_page import power_json
    from ..record.nightly import GOODPUT, LATENCY
    from ..record.standing_memo import StandingBook

    store = open_store(args.db)
    policy = ChangePolicy(min_change_percent=args.min_change)
    found = 0
    report: list[dict[str, Any]] = []
    try:
        acceptances = store.acceptances()
        issues = store.known_issues()
        keys = store.context_keys(args.lab)
        book = StandingBook(store)
        metric = LATENCY if args.metric == "latency" else GOODPUT
        floors = store.floors(keys) if metric is GOODPUT else {}
        for key in keys:
            series = run_series(store.history(key, probes=args.metric == "latency"), args.metric)
            if not series:
                continue
            changes = detect_change_points(series, policy)
            runs = [run.run_id for run in series]
            paths = {
                change.run_id: _path_change(store, key, runs, change.run_id, issues).lines
                for change in changes
            }
            label = ", ".join(ContextKey.parse(key).shown())
            found += len(changes)
            power = detection_power(book.now(key, metric).accepted, floor=floors.get(key))
            report.append(
                {
                    "context": key,
                    "label": label,
                    "runs": len(series),
                    "detection": power_json(power),
                    "change_points": [
                        {
                            **asdict(change),
                            "explain": explain_change(change, args.metric),
                            "accepted": _accepted(key, change, acceptances),
                            "what_changed": list(paths[change.run_id]),
                        }
                        for change in changes
                    ],
                }
            )
            if args.json:
                continue
            if args.verbose or changes:
                print(f"{label}  ({len(series)} runs)")
                if power is not None:
                    print(f"  what it can catch: {power.explain()}")
            for change in changes:
                print(f"  change point: {explain_change(change, args.metric)}")
                if paths[change.run_id]:
                    print(f"    path: {'; '.join(paths[change.run_id])}")
                for line in _accepted(key, change, acceptances):
                    print(f"    {line}")
    finally:
        store.close()
    if args.json:
        print(json.dumps({"store": mask(store.url), "change_points": found, "contexts": report}, indent=2))
    else:
        print(f"{found} change point(s)" if found else "no change points")
    return 1 if found else 0


def _path_change(
    store: ResultsStore, key: str, runs: list[str], run_id: str, issues: list[KnownIssue]
) -> RedChange:
    """What differs on ``key``'s path between the run before a change point and its own
    (model.fingerprint): beyond the context's keys that ``came with`` names."""
    before = runs[runs.index(run_id) - 1] if run_id in runs and runs.index(run_id) > 0 else None
    return change_of(store, key, before, run_id, issues)


def _accepted(key: str, change: ChangePoint, acceptances: Sequence[Acceptance]) -> list[str]:
    """The acceptances that made ``change`` the new level of context ``key``, one line each."""
    return [a.explain() for a in acceptances if a.covers(key, change.run_id)]


def explain_change(change: ChangePoint, metric: str) -> str:
    """A change point in the metric's unit, saying whether it went the metric's bad way."""
    if metric != "latency":
        return change.explain()
    worse = change.after_median > change.before_median  # RTT under load: lower is better
    changes = ", ".join(f"{k} {a} -> {b}" for k, (a, b) in change.came_with.items()) or "no recorded change"
    return (
        f"run {change.run_id}: RTT under load {change.before_median:.1f} -> {change.after_median:.1f} ms "
        f"({change.change_percent:+.2f} %, {'worse' if worse else 'better'}: lower is better, "
        f"p={change.p_value:.1e}); came with: {changes}"
    )


def register(sub: Any) -> None:
    """Register ``trends`` on the ``pinet`` command's subparsers."""
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
    trends.add_argument("--lab", default=None, help="only this lab's contexts (a store shared by labs)")
    trends.set_defaults(func=cmd_trends)
