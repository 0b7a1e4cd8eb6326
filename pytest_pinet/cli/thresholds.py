"""`pinet thresholds explain`: which rule judges a context, its floor and limit, and why each
other matching rule lost (a lab rule wins over every shipped one; inside a layer the most
specific). For a context written out (``--context``) or a test's newest stored measurement
(``--test-id``); the thresholds file is the one a run in this directory would use."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ..errors import PinetError
from ..judge.linerate import tcp_goodput_limit
from ..judge.threshold_rules import SHIPPED, load_thresholds
from .store_access import STORE_HELP, open_store

# Context keys whose values are numbers, as the rules compare them.
NUMERIC = ("link_speed_mbps", "mtu", "streams", "rate_target_mbps", "opposite_rate_mbps", "block_bytes")


def parse_context(text: str) -> dict[str, Any]:
    """``key=value,key=value`` as a context (numbers where a rule compares numbers)."""
    context: dict[str, Any] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        key, sep, value = part.partition("=")
        if not sep or not key.strip():
            raise PinetError(f"--context: {part!r} is not KEY=VALUE (e.g. scenario=ethernet,mtu=1500)")
        key, value = key.strip(), value.strip()
        try:
            context[key] = (
                float(value) if key in NUMERIC and "." in value else int(value) if key in NUMERIC else value
            )
        except ValueError:
            raise PinetError(f"--context: {key} must be a number, got {value!r}") from None
    return context


def _context_and_limit(args: argparse.Namespace) -> tuple[dict[str, Any], float | None, str]:
    if args.test_id:
        store = open_store(args.db)
        try:
            data = store.latest_of_test(args.test_id)
        finally:
            store.close()
        if data is None:
            raise PinetError(f"no measurement of a test {args.test_id!r} in the store (see `pinet runs`)")
        limit = data.get("limit_mbps")
        return dict(data["context"]), float(limit) if limit is not None else None, f"test {data['test_id']}"
    context = parse_context(args.context)
    limit = args.limit
    if limit is None and "link_speed_mbps" in context and "mtu" in context:
        limit = tcp_goodput_limit(float(context["link_speed_mbps"]), int(context["mtu"]))
    return context, limit, "the context given"


def cmd_explain(args: argparse.Namespace) -> int:
    """Print the rule that judges the context, the floor, the limit and the losers."""
    if bool(args.context) == bool(args.test_id):
        raise PinetError("name what to explain: --context KEY=VALUE,... or --test-id TEST (one of them)")
    own = Path("lab") / "thresholds.yaml"
    path = Path(args.thresholds) if args.thresholds else own if own.is_file() else SHIPPED
    thresholds = load_thresholds(path)
    context, limit, what = _context_and_limit(args)
    shown = ", ".join(f"{k}={v}" for k, v in context.items() if v not in ("", 0, None))
    print(f"{what}: {shown}")
    print(f"thresholds: {path} ({'shipped' if thresholds.mode == 'shipped' else thresholds.mode})")
    for line in thresholds.explain(context, limit):
        print(line)
    return 0


def register(sub: Any) -> None:
    """Register ``thresholds explain`` on the ``pinet`` command's subparsers."""
    thresholds = sub.add_parser("thresholds", help="the threshold rules: which one judges what")
    thresholds_sub = thresholds.add_subparsers(dest="thresholds_command", required=True)
    explain = thresholds_sub.add_parser(
        "explain", help="the rule that judges a context or a test, its floor, and the rules that lost"
    )
    explain.add_argument(
        "--context", default="", help="KEY=VALUE,... e.g. scenario=ethernet,duplex=half,mtu=1500"
    )
    explain.add_argument("--test-id", default="", help="a test id (or part of one) of the store")
    explain.add_argument(
        "--limit", type=float, default=None, help="the line-rate limit, Mbit/s (default: TCP's)"
    )
    explain.add_argument(
        "--thresholds", default="", help="a thresholds file (default: lab/thresholds.yaml, else shipped)"
    )
    explain.add_argument("--db", default=None, help=STORE_HELP)
    explain.set_defaults(func=cmd_explain)
