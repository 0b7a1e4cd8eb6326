"""``pinet bisect``: the first image of an ordered list (good first, bad last) whose figures
regress; the probes and the search are ``image_probes``, shared with ``pinet accept``."""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from ..errors import ConfigError, PinetError
from ..redaction import register as register_secret
from .accept import since_change_references
from .lab.lab_args import db_url

# Reaches a lab through labgrid: without the lab extra it stops at once, naming the extra.
NEEDS_LAB = True


def register(sub: Any) -> None:
    """``pinet bisect --images A,B,C [--repeat N] -- SELECTION``."""
    bis = sub.add_parser(
        "bisect",
        help="find the first image (of an ordered list, good first) whose measurements regress",
        description="Flash each probed image, run the selection --repeat times on it, and halve the "
        "interval between the last good and the first bad image. Exit 0: found; 1: the ends do not "
        "differ beyond noise; 3: a probe measured nothing.",
    )
    bis.add_argument(
        "--images", required=True, help="catalogue images in order, known good first, known bad last"
    )
    bis.add_argument(
        "--repeat", type=int, default=3, help="repetitions of the selection per image (default 3)"
    )
    bis.add_argument(
        "--min-band",
        type=float,
        default=1.0,
        help="smallest change in percent called a regression (default 1)",
    )
    bis.add_argument(
        "--since-change",
        metavar="CONTEXT",
        help="a context in a persisting regression (see `pinet regressions`): its accepted level and its "
        "regressed level from the store are the good and bad ends, which are then not measured again",
    )
    bis.add_argument(
        "--metric",
        choices=("goodput", "latency"),
        default="goodput",
        help="goodput (Mbit/s: a fall is bad) or latency (RTT under load p90, ms: a rise is bad)",
    )
    bis.add_argument("--results", default="results", help="results directory (default results)")
    bis.add_argument("pytest_args", nargs=argparse.REMAINDER, help="the selection and lab options, after --")
    bis.set_defaults(func=cmd_bisect)


def cmd_bisect(args: argparse.Namespace) -> int:
    """The first image of an ordered list (good first, bad last) whose figures regress."""
    from .image_probes import bisect, pytest_probe, save

    images = [name.strip() for name in args.images.split(",") if name.strip()]
    if len(images) < 2:
        raise PinetError(
            "--images needs at least two names: the known good image first, the known bad one last"
        )
    if args.repeat < 2:
        raise ConfigError("--repeat", "must be at least 2: one run per image has no noise to judge against")
    db = db_url()
    register_secret(urlsplit(db).password)
    results = Path(args.results) / time.strftime("bisect-%Y%m%d-%H%M%S")
    selection = args.pytest_args[1:] if args.pytest_args[:1] == ["--"] else args.pytest_args
    said = " ".join(selection) or "(all)"
    print(f"bisect: {len(images)} images, {args.repeat} repetitions each, selection {said}")
    references = since_change_references(args.since_change, db, args.metric) if args.since_change else None
    result = bisect(
        images,
        pytest_probe(selection, args.repeat, results, db, metric=args.metric),
        min_band_percent=args.min_band,
        references=references,
    )
    saved = save(result, results / "bisect.json")
    print(f"bisect: {result.message}")
    print(f"bisect: {len(result.probes)} provisionings; evidence: {saved} and the store's runs above")
    return {"found": 0, "no-difference": 1}.get(result.outcome, 3)
