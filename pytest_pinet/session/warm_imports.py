"""Import the modules a measuring session may reach later, now, in the main thread.

Why: pytest rewrites the asserts of its plugins' modules as they are first imported (pinet is
an entry-point plugin, so every module of the package is rewritten), parsing each with
``ast``.  CPython 3.11 counts the depth of its AST conversion per interpreter, not per thread
(cpython gh-106905): a thread formatting a traceback at the same moment (paramiko logs one
when a hung board's connection is reset) makes the import fail with "SystemError: AST
constructor recursion depth mismatch".  In CI a module first imported during fault recovery
did exactly that, and the recovery failed instead of power-cycling the board.

So a session that reaches a lab imports the rooms a run may need (about 0.4 s, then cached by
pytest's rewritten bytecode) before any SSH connection, observer or probe thread exists.
Only pinet's lab fixtures call this: other suites' start-up never pays for it.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
from pathlib import Path

# The room whose modules take the measurements: it and every room it imports (provisioning,
# recovery and strategies in lab, remote commands and profiles in host, traffic and probes,
# verdicts, the results it records, the data model) are what a measuring run reaches lazily.
MEASURING_ROOM = "measure"


def run_rooms(package_dir: Path) -> list[str]:
    """The measuring room and every room its modules import, read from their import lines (so
    a room the measurers start to use is warmed with no list to update)."""
    rooms = {MEASURING_ROOM}
    for source in (package_dir / MEASURING_ROOM).rglob("*.py"):
        rooms |= set(re.findall(r"^\s*from \.\.(\w+)", source.read_text(encoding="utf-8"), re.M))
    return sorted(room for room in rooms if (package_dir / room / "__init__.py").is_file())


def import_run_modules(package: str = "pytest_pinet") -> list[str]:
    """Import every module of the rooms a run reaches (:func:`run_rooms`); the names of those
    that could not be (a module whose optional dependency is absent is one this run cannot use
    anyway)."""
    skipped = []
    top = importlib.import_module(package)
    for room in run_rooms(Path(next(iter(top.__path__)))):
        module = importlib.import_module(f"{package}.{room}")
        for info in pkgutil.walk_packages(module.__path__, f"{module.__name__}."):
            try:
                importlib.import_module(info.name)
            except ImportError:
                skipped.append(info.name)
    return skipped
