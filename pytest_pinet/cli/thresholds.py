"""`pinet thresholds explain`: which rule judges a context, its floor and its path's limit (and
which part of the path sets it), and why each other matching rule lost, judged as a run judges.

What it explains: a context written out (``--context``), a test's newest stored measurement
(``--test-id``), or every context a board of the lab measures (``--board`` with the lab's env
file).  The thresholds file is the one a run from here would use, found in the run's order
(``--thresholds``, ``PINET_THRESHOLDS``, the ini key, ``lab/thresholds.yaml`` under the
rootdir, the shipped rules), and named.  An unknown key, model or scenario stops with the
known ones, never "nothing judges it"."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from ..errors import ConfigError, PinetError
from ..judge.threshold_rules import Judged, Thresholds, judged, load_thresholds
from ..judge.threshold_rules_schema import MATCH_KEYS
from ..lab.board_contexts import describe
from ..model.board_models import BOARD_MODELS, model_fix
from ..model.context import SCENARIOS
from ..session.thresholds_source import thresholds_file
from .store_access import STORE_HELP, open_store

# Context keys whose values are numbers, as the rules compare them.
NUMERIC = ("link_speed_mbps", "mtu", "streams", "rate_target_mbps", "opposite_rate_mbps", "block_bytes")
# What a context is assumed to be where ``--context`` does not say: a TCP run of the suites,
# one way, the way each scenario's first test takes it (the output says what it assumed).
ASSUMED = {"protocol": "TCP", "streams": 10, "rate_target_mbps": 0, "duplex": "half"}
FIRST_DIRECTION = {"routing": "download", "routing+disk-io": "download", "storage": "write"}


def parse_context(text: str) -> dict[str, Any]:
    """``key=value,key=value`` as a context (numbers where a rule compares numbers); a key,
    model or scenario nothing knows is an error naming the known ones."""
    context: dict[str, Any] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        key, sep, value = part.partition("=")
        if not sep or not key.strip():
            raise ConfigError("--context", f"{part!r} is not KEY=VALUE (e.g. scenario=ethernet,mtu=1500)")
        key, value = key.strip(), value.strip()
        if key not in MATCH_KEYS:
            raise ConfigError("--context", f"no context has a key {key!r}; the keys are {sorted(MATCH_KEYS)}")
        try:
            context[key] = (
                float(value) if key in NUMERIC and "." in value else int(value) if key in NUMERIC else value
            )
        except ValueError:
            raise ConfigError("--context", f"{key} must be a number, got {value!r}") from None
    if "model" in context and context["model"] not in BOARD_MODELS:
        raise ConfigError(
            "--context", f"model {context['model']!r} is no known model: {model_fix(context['model'])}"
        )
    if "scenario" in context and context["scenario"] not in SCENARIOS:
        raise ConfigError("--context", f"scenario {context['scenario']!r} is none of {list(SCENARIOS)}")
    if "scenario" not in context:
        raise ConfigError(
            "--context", f"name the scenario (one of {list(SCENARIOS)}): every rule names its own"
        )
    if str(context["scenario"]).startswith("udp-"):
        context.setdefault("protocol", "UDP")
    if context["scenario"] == "storage":
        context.setdefault("protocol", "block")
    return context


def assumptions(context: dict[str, Any]) -> dict[str, Any]:
    """What a context written out leaves unsaid, as a run of its scenario would have it."""
    assumed = {**ASSUMED, "direction": FIRST_DIRECTION.get(str(context["scenario"]), "board->peer")}
    return {key: value for key, value in assumed.items() if key not in context}


def _stored(args: argparse.Namespace) -> tuple[dict[str, Any], str]:
    store = open_store(args.db)
    try:
        data = store.latest_of_test(args.test_id)
    finally:
        store.close()
    if data is None:
        raise PinetError(f"no measurement of a test {args.test_id!r} in the store (see `pinet runs`)")
    return dict(data["context"]), f"test {data['test_id']}"


def _board(args: argparse.Namespace) -> list[dict[str, Any]]:
    from ..lab.board_contexts import board_contexts
    from ..lab.inventory import load_inventory

    env = args.lab or os.environ.get("PINET_LAB") or os.environ.get("LG_ENV")
    if not env:
        raise ConfigError("--board", "needs the lab's env file: --lab FILE (or LG_ENV / PINET_LAB)")
    inventory = load_inventory(env)
    if args.board not in inventory.hosts or inventory.hosts[args.board].role != "board":
        boards = sorted(name for name, host in inventory.hosts.items() if host.role == "board")
        raise ConfigError("--board", f"{env} has no board {args.board!r}; its boards are {boards}")
    return board_contexts(inventory, args.board)


def _lines(thresholds: Thresholds, found: Judged) -> list[str]:
    why = found.path.why if found.path.parts else ""
    return thresholds.explain(found.context, found.path.mbps or None, why)


def cmd_explain(args: argparse.Namespace) -> int:
    """Print the rule that judges each context, the floor, the path's limit and the losers."""
    if sum(map(bool, (args.context, args.test_id, args.board))) != 1:
        raise PinetError("name what to explain: --context KEY=VALUE,..., --test-id TEST or --board NAME")
    contexts = _board(args) if args.board else None
    given = parse_context(args.context) if args.context else None
    path, source = thresholds_file(args.thresholds, os.environ, Path.cwd())
    thresholds = load_thresholds(path)
    print(f"thresholds: {path} ({thresholds.mode}; {source})")
    if contexts is not None:
        for context in contexts:
            found = judged(thresholds, context)
            floor = f"{found.floor:.1f}" if found.floor is not None else "none"
            rule = found.rule.rule_id if found.rule else "no rule"
            limit = f"{found.path.mbps:.1f} ({found.path.part})" if found.path.parts else "none"
            print(f"{describe(context)}: limit {limit}, floor {floor} by {rule}")
        return 0
    context, what = (given, "the context given") if given is not None else _stored(args)
    assumed = assumptions(context) if given is not None else {}
    found = judged(thresholds, {k: v for k, v in {**assumed, **context}.items() if k != "limited_by"})
    shown = ", ".join(f"{k}={v}" for k, v in context.items() if v not in ("", 0, None))
    print(f"{what}: {shown}")
    if assumed:
        print("assumed (not given): " + ", ".join(f"{k}={v}" for k, v in assumed.items()))
    for line in _lines(thresholds, found):
        print(line)
    return 0


def register(sub: Any) -> None:
    """Register ``thresholds explain`` on the ``pinet`` command's subparsers."""
    thresholds = sub.add_parser("thresholds", help="the threshold rules: which one judges what")
    thresholds_sub = thresholds.add_subparsers(dest="thresholds_command", required=True)
    explain = thresholds_sub.add_parser(
        "explain",
        help="the rule that judges a context, a test or a board's paths, its floor and the path's limit",
    )
    explain.add_argument(
        "--context", default="", help="KEY=VALUE,... e.g. model=Pi 4B,scenario=ethernet,duplex=half,mtu=1500"
    )
    explain.add_argument("--test-id", default="", help="a test id (or part of one) of the store")
    explain.add_argument("--board", default="", help="every context a board of the lab (--lab) measures")
    explain.add_argument(
        "--lab", default="", help="the lab's env file for --board (default: LG_ENV, PINET_LAB)"
    )
    explain.add_argument(
        "--thresholds", default="", help="a thresholds file (default: the one a run from here would use)"
    )
    explain.add_argument("--db", default=None, help=STORE_HELP)
    explain.set_defaults(func=cmd_explain)
