"""The ``pinet`` command: its parser, assembled from each command module's own ``register``.

Every error a user can cause (not root, missing tool, bad file) ends as one line on stderr
and exit status 2, never a traceback.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from .. import __version__
from ..errors import PinetError
from ..extras import require_lab_extra
from . import accept, bench, bisect, compare, labs, regressions, report, run, runs, thresholds, trends
from .lab import check, degrade, down, export, power, status, up, vhost_power

# Commands that reach a lab through labgrid (and write Allure results): without the ``lab``
# extra they stop at once with one line, not with an ImportError minutes into a run.
NEEDS_LAB = {"run", "bisect", "bench", "lab check"}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="pinet", description="network regression testing of boards")
    parser.add_argument("--version", action="version", version=f"pytest-pinet {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    lab_parser = sub.add_parser("lab", help="the lab: build the virtual one, power, check, degrade")
    lab_sub = lab_parser.add_subparsers(dest="lab_command", required=True)
    for lab_command in (up, export, down, status, vhost_power, degrade, power, check):
        lab_command.register(lab_sub)
    for command in (trends, compare, runs, labs, accept, regressions, thresholds, report, bench, run, bisect):
        command.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra:
        if getattr(args, "command", None) not in ("run", "bisect"):
            parser.error(f"unrecognized arguments: {' '.join(extra)}")
        args.pytest_args = [*extra, *args.pytest_args]  # `pinet run --pinet-duration 60 ...`
    if getattr(args, "command", None) == "run" and args.pytest_args[:1] == ["--"]:
        args.pytest_args = args.pytest_args[1:]  # `pinet run -- ARGS`: the ARGS are pytest's
    try:
        command = " ".join(filter(None, (args.command, getattr(args, "lab_command", None))))
        simulated = getattr(args, "noise_only", False) or getattr(args, "history_only", False)
        if command in NEEDS_LAB and not simulated:  # a bench that builds no lab needs no labgrid
            require_lab_extra(f"pinet {command}")
        return int(args.func(args))
    except PinetError as exc:
        print(f"pinet: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("pinet: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # Read through ``head`` or a pager that quit: the reader has what it wanted.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error at exit
        return 0
