"""Where a user's history lives: outside any checkout, so a nightly that clones afresh keeps it.

The results store (every measurement, the baselines are made of it, and each lab's Allure
history) defaults to the XDG data directory (``$XDG_DATA_HOME/pinet``, else ``~/.local/share/pinet``).
A results directory inside the checkout is scratch: raw outputs of one run, Allure results,
the report.  ``--pinet-db`` / ``PINET_DB`` name another store (a lab's PostgreSQL).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path


def data_home(environ: Mapping[str, str] | None = None) -> Path:
    """``$XDG_DATA_HOME/pinet``, else ``~/.local/share/pinet``."""
    environ = os.environ if environ is None else environ
    base = environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "pinet"


def default_store_url(environ: Mapping[str, str] | None = None) -> str:
    """The SQLite store in the data directory."""
    return f"sqlite:///{data_home(environ) / 'pinet.sqlite'}"


def store_url(db: str, environ: Mapping[str, str] | None = None) -> str:
    """The store a run uses: the one named, else the default (its directory made)."""
    if db:
        return db
    data_home(environ).mkdir(parents=True, exist_ok=True)
    return default_store_url(environ)
