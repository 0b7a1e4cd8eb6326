"""What every test of this repository shares (the unit, integration and suite tests alike).

- Measurements taken by this repository's own tests go to a temporary results directory
  (``PINET_RESULTS``), never into ``results/`` of the checkout, where the main job keeps a
  user's history: a test run must not become part of the baselines it is judged against.
  An explicit ``--pinet-results`` still wins.
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

with contextlib.suppress(ImportError):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot
    import numpy  # noqa: F401


def pytest_configure(config: pytest.Config) -> None:
    """Point the results (and so the default store) at a directory of this test run."""
    if "PINET_RESULTS" not in os.environ:  # xdist workers inherit the controller's
        os.environ["PINET_RESULTS"] = tempfile.mkdtemp(prefix="pinet-test-results-")
