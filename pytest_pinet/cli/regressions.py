"""`pinet regressions`: every context whose latest night is in a regression nobody accepted
yet (since which run, how many nights, the level before and after), and the acceptances of the
last week; exit 1 while any is pending. ``pinet accept`` makes a level the new normal."""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

from ..exit_codes import Exit
from ..judge.detection import detection_power
from ..model.context_key import ContextKey
from ..record.detection_page import power_json
from ..record.night_digest import context_text, scope_text
from ..record.nightly import Persisting
from ..record.red_changes import red_changes
from ..record.standing_memo import persisting_regressions
from .store_access import STORE_HELP, open_store

WEEK_S = 7 * 86400.0


def cmd_regressions(args: argparse.Namespace) -> int:
    """Contexts in a persisting regression, and the acceptances of the last week."""
    store = open_store(args.db)
    try:
        pending = persisting_regressions(store, lab=args.lab)
        recent = store.acceptances(since=time.time() - WEEK_S)
        floors = store.floors([p.key for p in pending])
        changes = red_changes(store, pending)
    finally:
        store.close()
    # What each context's accepted nights let one night catch (goodput: against its floor too).
    powers = {
        (p.key, p.metric.name): detection_power(
            p.standing.accepted, floor=floors.get(p.key) if p.metric.sign > 0 else None
        )
        for p in pending
    }
    if args.json:
        data: dict[str, Any] = {
            "regressions": [
                {
                    "lab": ContextKey.parse(p.key).get("lab"),
                    "context": p.key,
                    "label": context_text(p.key),
                    "since_run": p.first.run_id,
                    "first_seen": p.first.started,
                    "nights": len(p.standing.regressed),
                    "metric": p.metric.name,
                    "unit": p.metric.unit,
                    "accepted": p.before,
                    "regressed": p.now,
                    **({"accepted_mbps": p.before, "regressed_mbps": p.now} if p.metric.sign > 0 else {}),
                    "change_pct": p.change_pct,
                    "detection": power_json(powers[p.key, p.metric.name]),
                    "what_changed": list(changes[p.key, p.metric.name].lines),
                    "known": list(changes[p.key, p.metric.name].known),
                }
                for p in pending
            ],
            "accepted_last_week": [{**vars(a), "label": scope_text(a.context_key)} for a in recent],
        }
        print(json.dumps(data, indent=2))
        return int(Exit.REGRESSION) if pending else 0
    by_lab: dict[str, list[Persisting]] = {}
    for p in pending:
        by_lab.setdefault(ContextKey.parse(p.key).get("lab"), []).append(p)
    for lab, of_lab in sorted(by_lab.items()):
        if len(by_lab) > 1:  # a store shared by labs: each lab's under its name
            print(f"lab {lab}: {len(of_lab)} context(s) in regression")
        for p in of_lab:
            changed = changes[p.key, p.metric.name].text()
            print(f"{context_text(p.key)}\n  {p.explain()}" + (f"\n  {changed}" if changed else ""))
            power = powers[p.key, p.metric.name]
            if power is not None:
                print(f"  what it can catch: {power.explain()}")
    print(f"{len(pending)} context(s) in regression" if pending else "no context in regression")
    for accepted in recent:
        print(f"accepted this week: {accepted.explain()}  [{scope_text(accepted.context_key)}]")
    return int(Exit.REGRESSION) if pending else 0


def register(sub: Any) -> None:
    """Register ``regressions`` on the ``pinet`` command's subparsers."""
    regressions = sub.add_parser(
        "regressions", help="contexts in a regression nobody accepted yet: since when, how many nights"
    )
    regressions.add_argument("--db", default=None, help=STORE_HELP)
    regressions.add_argument("--json", action="store_true", help="the regressions as JSON")
    regressions.add_argument("--lab", default=None, help="only this lab's contexts (a store shared by labs)")
    regressions.set_defaults(func=cmd_regressions)
