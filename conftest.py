"""What every test of this repository shares (the unit, integration and suite tests alike).

- Measurements taken by this repository's own tests go to a temporary results directory,
  store and data directory (``PINET_RESULTS``, ``PINET_DB``, ``XDG_DATA_HOME``), never to
  the user's store in ``~/.local/share/pinet``: a test run must not become part of the
  baselines it is judged against.  An explicit ``--pinet-results`` / ``--pinet-db`` wins.
- pytester's in-process runs restore ``sys.modules`` afterwards, so a module first imported
  inside one (numpy, through the plugin's charts) is dropped, and numpy refuses to load twice
  per process: every later chart test would see an ImportError.  Importing them here first
  keeps them in the snapshot pytester restores.
"""

from __future__ import annotations

import contextlib
import os
import tempfile

import pytest

# labgrid users keep LG_ENV / LG_COORDINATOR in their shell; pinet reads them as its lab and
# coordinator, and the repository's tests must never drive a user's real lab.
for _name in ("LG_ENV", "LG_COORDINATOR"):
    os.environ.pop(_name, None)

with contextlib.suppress(ImportError):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot
    import numpy  # noqa: F401


def pytest_configure(config: pytest.Config) -> None:
    """Point results, the store and the data directory (Allure history) at a directory of
    this test run, whatever the user's environment says: the repository's tests never touch
    a user's history.  An explicit ``--pinet-results`` / ``--pinet-db`` still wins (the main
    job, ``pinet run``, names both)."""
    if "PINET_REPO_TEST_DIR" not in os.environ:  # xdist workers inherit the controller's
        scratch = tempfile.mkdtemp(prefix="pinet-test-")
        os.environ["PINET_REPO_TEST_DIR"] = scratch
        os.environ["PINET_RESULTS"] = os.path.join(scratch, "results")
        os.environ["PINET_DB"] = "sqlite:///" + os.path.join(scratch, "pinet.sqlite")
        os.environ["XDG_DATA_HOME"] = os.path.join(scratch, "data")
