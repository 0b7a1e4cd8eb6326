"""One exclusive ``flock`` on a file, held for a block: how the virtual lab's processes that
may run at once (xdist workers, a second run, a bench) take turns on something of the machine
(a lab's lifecycle, the image cache, the machine-wide settings).  An ``flock`` goes with its
holder: a killed process frees it at once, and the file itself may stay."""

from __future__ import annotations

import contextlib
import fcntl
from collections.abc import Iterator
from pathlib import Path


@contextlib.contextmanager
def exclusive(path: Path) -> Iterator[None]:
    """Hold the lock of ``path`` (made, with its folder, if missing) while the block runs."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+", encoding="utf-8") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
