"""Bring the virtual lab up for a test run and down again, exactly once.

With pytest-xdist several processes may need the lab at the same moment.  A file lock makes
the first one build it; an owner file records which run built it, so only that run's
controller tears it down at the end, and a lab a developer brought up by hand (``pinet lab
up``) is left alone.
"""

from __future__ import annotations

import contextlib
from contextlib import AbstractContextManager
from dataclasses import replace
from pathlib import Path

from . import file_lock, virtual_lab
from .topology import LabSpec


def _locked(spec: LabSpec) -> AbstractContextManager[None]:
    return file_lock.exclusive(spec.state_root / f"{spec.name}.lock")


def _owner_file(spec: LabSpec) -> Path:
    return spec.state_dir / "owner"


def ensure_up(spec: LabSpec, run_id: str) -> Path:
    """Return the env file of a running lab, building it (owned by ``run_id``) if needed.

    A lab another test run built and has not torn down yet is taken over: this run now uses
    the place (its caller holds the place's lock), so this run tears it down at its end, and
    the earlier run, finding it no longer owns it, leaves it alone.  A lab brought up by hand
    (``pinet lab up``) has no owner and is never torn down by a run.
    """
    with _locked(spec):
        if virtual_lab.is_up(spec):
            owner = _owner_file(spec)
            if owner.exists():
                owner.write_text(run_id, encoding="utf-8")
            return spec.env_file
        env_file = virtual_lab.up(spec)
        _owner_file(spec).write_text(run_id, encoding="utf-8")
        return env_file


def disown(spec: LabSpec) -> None:
    """Keep a lab for later runs: like one brought up by hand, no run tears it down."""
    with _locked(spec):
        _owner_file(spec).unlink(missing_ok=True)


def owned_labs(spec: LabSpec, run_id: str) -> list[LabSpec]:
    """Every lab under ``spec``'s state root that ``run_id`` owns (each place of a run)."""
    if not spec.state_root.is_dir():
        return []
    found = []
    for owner in sorted(spec.state_root.glob("pinet*/owner")):
        try:
            if owner.read_text(encoding="utf-8").strip() == run_id:
                found.append(replace(spec, name=owner.parent.name))
        except (OSError, ValueError):
            continue
    return found


def release_all(spec: LabSpec, run_id: str) -> list[str]:
    """Tear down every lab ``run_id`` owns; return their names."""
    released = [other.name for other in owned_labs(spec, run_id) if release(other, run_id)]
    if not released:
        release(spec, run_id)  # removes the lock file a run that built nothing may have made
    return released


def release(spec: LabSpec, run_id: str) -> bool:
    """Tear the lab down if ``run_id`` built it; return True if it did."""
    with _locked(spec):
        owner = _owner_file(spec)
        try:
            built_by = owner.read_text(encoding="utf-8").strip()
        except OSError:
            built_by = ""
        if built_by == run_id:
            virtual_lab.down(spec)
            return True
    if not spec.state_dir.exists():
        # No lab at all: the lock file this call made is the only trace; leave none.
        (spec.state_root / f"{spec.name}.lock").unlink(missing_ok=True)
        with contextlib.suppress(OSError):
            spec.state_root.rmdir()
    return False
