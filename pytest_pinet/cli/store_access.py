"""The results store as the history commands open it: named by ``--db``, else ``$PINET_DB``,
else the default store in the XDG data directory; a missing SQLite file is an error, never a
new empty store (a typo must not answer "no regressions")."""

from __future__ import annotations

import os

from ..errors import PinetError
from ..record.data_home import default_store_url
from ..record.store import ResultsStore, store_exists

STORE_HELP = "store URL (default: $PINET_DB, else pinet.sqlite in ~/.local/share/pinet)"


def open_store(db: str | None) -> ResultsStore:
    """The store named, else $PINET_DB, else the default; a missing SQLite file is an error."""
    url = db or os.environ.get("PINET_DB") or default_store_url()
    if not store_exists(url):
        raise PinetError(f"no results store at {url}: run the suite first or pass --db")
    return ResultsStore(url)
