"""Shared setup of the unit tests.

pytester's in-process runs restore ``sys.modules`` afterwards, so a module first imported
inside one (numpy, through the plugin's charts) is dropped, and numpy refuses to load twice
per process: every later chart test would see an ImportError. Importing them here first
keeps them in the snapshot pytester restores.
"""

from __future__ import annotations

import contextlib

with contextlib.suppress(ImportError):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot
    import numpy  # noqa: F401
