"""One Allure history per lab, kept in the results store.

Allure 3 reads and appends a JSONL history file while it builds a report; its trend and
history tabs are made of it.  A file in one runner's home directory would give each runner
of a lab a history of its own, so the lines live in the store (the ``allure_history``
table; PostgreSQL when the lab shares one) and are written out to a file only for the
duration of one ``allure generate``.  The lab is the one the night measured, so two labs
sharing a store keep two histories.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from .results_dir import newest_run
from .store import ResultsStore

NO_LAB = "no-lab"  # a night that measured nothing names no lab; its report still has a history


@contextmanager
def lab_history(store: ResultsStore, lab: str, path: Path) -> Iterator[Path]:
    """Write ``lab``'s history to ``path`` for Allure; afterwards keep what Allure added.

    Nothing is kept when the body raises (a report that was not built added nothing).
    Allure may also drop old lines (its history limit): only lines it added are stored, the
    store keeps every night's.
    """
    before = store.allure_history(lab)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"{line}\n" for line in before), encoding="utf-8")
    yield path
    known = set(before)
    after = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
    store.add_allure_history(lab, [line for line in after if line.strip() and line not in known])


def lab_of_newest_run(store: ResultsStore, results: Path) -> str:
    """The lab of the newest run under ``results`` (``NO_LAB`` when none measured)."""
    run_id = newest_run(results)
    lab = store.lab_of_run(run_id) if run_id is not None else None
    return lab if lab is not None else NO_LAB
