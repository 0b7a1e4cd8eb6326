"""`pinet accept`: a regression stays red until a person accepts it (``pinet regressions``
lists what waits).  Accepting makes a changed level the new normal: of a run (every context
that regressed in it), of one context (its pending regression, from its first night) or of a
change point (a run and a context), always with ``--why``, recorded with who and when, and
undone with ``--undo ID``.  It reads the store through its methods only (``record.store``,
``record.nightly``).

Goodput and latency under load (lower is better) each have a standing; a context may be in
regression in either.  An acceptance is of a run's level in a context: every figure of it
that regressed from that run on.  ``--metric`` picks which pending regression of a context
``--context`` alone means when both are pending.
"""

from __future__ import annotations

import argparse
import getpass
from typing import Any

from ..errors import ConfigError, PinetError
from ..judge.standing import EVERY_CONTEXT
from ..record.night_digest import context_text, scope_text
from ..record.nightly import METRICS, Persisting
from ..record.standing_memo import persisting_regressions
from ..record.store import ResultsStore
from ..redaction import mask
from .image_probes import Probe, references_of
from .store_access import STORE_HELP, open_store


def _who(args: argparse.Namespace) -> str:
    return str(args.who or getpass.getuser())


def _one_context(store: ResultsStore, wanted: str, pending: list[Persisting]) -> str:
    """The stored context key ``wanted`` names: a whole key, or a part of one key (or of its
    words) that only one context holds, preferring contexts in regression."""
    keys = store.context_keys()
    if wanted in keys:
        return wanted
    for pool in ([p.key for p in pending], keys):
        hits = [k for k in pool if wanted in k or wanted in context_text(k)]
        if len(hits) == 1:
            return hits[0]
        if len(hits) > 1:
            listed = "; ".join(context_text(k) for k in hits[:6])
            raise ConfigError("--context", f"{wanted!r} names {len(hits)} contexts ({listed}): say more")
    raise ConfigError(
        "--context", f"{wanted!r} names no context in {mask(store.url)}: see `pinet regressions`"
    )


def _pending_of(pending: list[Persisting], key: str, metric: str | None) -> Persisting | None:
    """The pending regression of context ``key`` (of ``metric``, when named); both metrics
    pending and none named: the caller must say which."""
    mine = [p for p in pending if p.key == key and (metric is None or p.metric.name == metric)]
    if len({p.first.run_id for p in mine}) > 1:  # the same first run: one acceptance covers both
        names = " and ".join(p.metric.name for p in mine)
        raise PinetError(f"{context_text(key)} is in regression in {names}: say which with --metric")
    return mine[0] if mine else None


def since_change_references(wanted: str, db: str, metric: str = "goodput") -> tuple[Probe, Probe]:
    """``pinet bisect --since-change CONTEXT``: the accepted and the regressed level of the
    one context in a persisting regression of ``metric`` that ``wanted`` names, as bisect's
    two ends (in the metric's own figures: ms for latency)."""
    store = open_store(db or None)
    try:
        pending = [p for p in persisting_regressions(store) if p.metric.name == metric]
        key = _one_context(store, wanted, pending)
    finally:
        store.close()
    regression = _pending_of(pending, key, metric)
    if regression is None or len(regression.standing.accepted) < 2:
        raise PinetError(
            f"--since-change: {context_text(key)} is in no regression (of {metric}) with an accepted level "
            "of 2 or more nights: see `pinet regressions`"
        )
    print(f"bisect: since {regression.explain()}")
    sign = regression.metric.sign
    return references_of(key, regression.standing.accepted, regression.standing.regressed, sign)


def cmd_accept(args: argparse.Namespace) -> int:
    """Accept a run's, a context's or a change point's level; list or undo acceptances."""
    store = open_store(args.db)
    try:
        if args.undo is not None:
            undone = store.undo_acceptance(args.undo, _who(args))
            print(f"undone by {_who(args)}: {undone.explain()}")
            return 0
        if args.list:
            for accepted in store.acceptances():
                print(f"{accepted.explain()}  [{scope_text(accepted.context_key)}]")
            return 0
        if not args.run and not args.context:
            raise PinetError("name what to accept: a RUN, --context CONTEXT, or both (a change point)")
        pending = persisting_regressions(store)
        key = _one_context(store, args.context, pending) if args.context else EVERY_CONTEXT
        run = args.run
        if run is None:
            regression = _pending_of(pending, key, args.metric)
            if regression is None:
                what = f"no {args.metric} regression" if args.metric else "no regression"
                raise PinetError(f"{context_text(key)} is in {what}: nothing to accept")
            run = regression.first.run_id
        accepted = store.accept(run, key, args.why or "", _who(args))
    finally:
        store.close()
    print(f"accepted: {accepted.explain()}  [{scope_text(key)}]")
    print(f"undo with: pinet accept --undo {accepted.id}")
    return 0


def register(sub: Any) -> None:
    """Register ``accept`` on the ``pinet`` command's subparsers."""
    accept = sub.add_parser(
        "accept",
        help="accept a changed level (a run, a context or a change point) as the new baseline",
        description="A regression stays red until accepted. RUN alone: every context that regressed "
        "in that run; --context alone: that context's pending regression; both: the change point at "
        "RUN in that context.",
    )
    accept.add_argument("run", nargs="?", help="the run the accepted level starts at")
    accept.add_argument("--context", help="a context key, or a part of one only one context holds")
    accept.add_argument("--why", help="why the level is accepted (required; shown with the change)")
    accept.add_argument("--who", help="who accepts (default: the login name)")
    accept.add_argument(
        "--metric",
        choices=sorted(METRICS),
        help="with --context alone: which pending regression (goodput, or latency under load) when both are",
    )
    accept.add_argument("--undo", type=int, metavar="ID", help="take acceptance ID back")
    accept.add_argument("--list", action="store_true", help="the standing acceptances")
    accept.add_argument("--db", default=None, help=STORE_HELP)
    accept.set_defaults(func=cmd_accept)
