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

# The rooms a measuring run reaches lazily: provisioning, recovery and strategies (lab), remote
# commands and profiles (host), measurers, traffic and probes, verdicts, the data model.
RUN_ROOMS = ("lab", "host", "measure", "traffic", "judge", "model")


def import_run_modules(package: str = "pytest_pinet") -> list[str]:
    """Import every module of ``RUN_ROOMS``; the names of those that could not be (a module
    whose optional dependency is absent is one this run cannot use anyway)."""
    skipped = []
    for room in RUN_ROOMS:
        module = importlib.import_module(f"{package}.{room}")
        for info in pkgutil.walk_packages(module.__path__, f"{module.__name__}."):
            try:
                importlib.import_module(info.name)
            except ImportError:
                skipped.append(info.name)
    return skipped
