"""The ``pinet`` command: its parser, assembled from each command module's own ``register``.

A command module is any module of this package (``pinet NAME``) or of ``lab`` (``pinet lab
NAME``) that has a ``register``; one that reaches a lab through labgrid says so with
``NEEDS_LAB = True``, and one that passes the rest of its command line to pytest has a
``pytest_args`` argument.  No list here names them: a new command is a new module.

Every error a user can cause ends as one line on stderr, never a traceback, and the exit status
of the one table (:mod:`pytest_pinet.exit_codes`): 4 for a bad file or option, 11 for a missing
tool, extra or root, 7 for a lab fault, 2 for any other stop.
"""

from __future__ import annotations

import argparse
import importlib
import os
import pkgutil
import sys
from collections.abc import Iterator, Sequence
from types import ModuleType

from .. import __version__
from ..errors import PinetError
from ..exit_codes import exit_of
from ..extras import require_lab_extra
from . import lab


def command_modules(package: ModuleType) -> Iterator[ModuleType]:
    """The modules of ``package`` (not its subpackages, nor ``__main__``, which runs the command
    when imported) that register a command, by name."""
    for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda info: info.name):
        if not info.ispkg and not info.name.startswith("_"):
            module = importlib.import_module(f"{package.__name__}.{info.name}")
            if callable(getattr(module, "register", None)):
                yield module


def needs_lab(args: argparse.Namespace) -> bool:
    """Whether the chosen command reaches a lab through labgrid (and writes Allure results), as
    its module declares: without the ``lab`` extra it stops at once with one line, not with an
    ImportError minutes into a run.  A bench that builds no lab needs no labgrid."""
    module = sys.modules[args.func.__module__]
    simulated = getattr(args, "noise_only", False) or getattr(args, "history_only", False)
    return bool(getattr(module, "NEEDS_LAB", False)) and not simulated


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="pinet", description="network regression testing of boards")
    parser.add_argument("--version", action="version", version=f"pytest-pinet {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    lab_parser = sub.add_parser("lab", help="the lab: build the virtual one, power, check, degrade")
    lab_sub = lab_parser.add_subparsers(dest="lab_command", required=True)
    for lab_command in command_modules(lab):
        lab_command.register(lab_sub)
    for command in command_modules(sys.modules[__package__]):
        command.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra:
        if not hasattr(args, "pytest_args"):
            parser.error(f"unrecognized arguments: {' '.join(extra)}")
        args.pytest_args = [*extra, *args.pytest_args]  # `pinet run --pinet-duration 60 ...`
    if getattr(args, "command", None) == "run" and args.pytest_args[:1] == ["--"]:
        args.pytest_args = args.pytest_args[1:]  # `pinet run -- ARGS`: the ARGS are pytest's
    try:
        command = " ".join(filter(None, (args.command, getattr(args, "lab_command", None))))
        if needs_lab(args):
            require_lab_extra(f"pinet {command}")
        return int(args.func(args))
    except PinetError as exc:
        print(f"pinet: {exc}", file=sys.stderr)
        return int(exit_of(exc))
    except KeyboardInterrupt:
        print("pinet: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # Read through ``head`` or a pager that quit: the reader has what it wanted.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error at exit
        return 0
