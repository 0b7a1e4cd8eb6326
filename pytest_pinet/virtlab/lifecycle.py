"""Bring the virtual lab up for a test run and down again, exactly once.

With pytest-xdist several processes may need the lab at the same moment.  A file lock makes
the first one build it; an owner file records which run built it, so only that run's
controller tears it down at the end, and a lab a developer brought up by hand (``pinet lab
up``) is left alone.
"""

from __future__ import annotations

import contextlib
import fcntl
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from . import lab
from .topology import LabSpec


@contextmanager
def _locked(spec: LabSpec) -> Iterator[None]:
    spec.state_root.mkdir(parents=True, exist_ok=True)
    lock_path = spec.state_root / f"{spec.name}.lock"
    with open(lock_path, "a+", encoding="utf-8") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _owner_file(spec: LabSpec) -> Path:
    return spec.state_dir / "owner"


def ensure_up(spec: LabSpec, run_id: str) -> Path:
    """Return the env file of a running lab, building it (owned by ``run_id``) if needed."""
    with _locked(spec):
        if lab.is_up(spec):
            return spec.env_file
        env_file = lab.up(spec)
        _owner_file(spec).write_text(run_id, encoding="utf-8")
        return env_file


def release(spec: LabSpec, run_id: str) -> bool:
    """Tear the lab down if ``run_id`` built it; return True if it did."""
    with _locked(spec):
        owner = _owner_file(spec)
        try:
            built_by = owner.read_text(encoding="utf-8").strip()
        except OSError:
            built_by = ""
        if built_by == run_id:
            lab.down(spec)
            return True
    if not spec.state_dir.exists():
        # No lab at all: the lock file this call made is the only trace; leave none.
        (spec.state_root / f"{spec.name}.lock").unlink(missing_ok=True)
        with contextlib.suppress(OSError):
            spec.state_root.rmdir()
    return False
