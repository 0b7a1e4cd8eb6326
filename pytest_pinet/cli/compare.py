"""`pinet compare RUN_A RUN_B`: two runs per context, both figures, the change and whether it
is beyond the context's noise; exit 1 when any change is."""

from __future__ import annotations

import argparse
import json
from typing import Any

from ..errors import PinetError
from ..redaction import mask
from .store_access import STORE_HELP, open_store


def cmd_compare(args: argparse.Namespace) -> int:
    """Two runs per context: both figures, the change, and whether it is beyond noise."""
    from ..record.side_by_side import as_data, compare_runs, table, value_of

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


def register(sub: Any) -> None:
    """Register ``compare`` on the ``pinet`` command's subparsers."""
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
