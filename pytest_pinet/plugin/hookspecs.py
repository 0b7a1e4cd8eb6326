"""Hooks a lab's ``conftest.py`` (or another plugin) can implement to change pinet's policy
without patching it: the verdict, the place a process takes, and where results also go.

Each has a default implementation in :mod:`pytest_pinet.plugin.hooks`; a conftest's implementation
runs first (``firstresult`` hooks stop at the first answer that is not None).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import pluggy

if TYPE_CHECKING:
    from ..judge.standing import Standing
    from ..judge.threshold_rules import Thresholds
    from ..judge.verdict import JudgePolicy, Verdict
    from ..lab.places import Place
    from ..model import Measurement

hookspec = pluggy.HookspecMarker("pytest")


@hookspec(firstresult=True)
def pytest_pinet_judge_measurement(
    measurement: Measurement,
    thresholds: Thresholds,
    history: Sequence[float],
    policy: JudgePolicy,
    standing: Standing,
) -> Verdict | None:
    """Judge one measurement; return a Verdict, or None to leave it to the next implementation.

    ``history`` holds the earlier accepted goodputs of the same context, one per night (oldest
    first), that may serve as a baseline; ``standing`` is the same context's accepted nights
    and pending regression (:mod:`pytest_pinet.judge.standing`).  The default is
    :func:`pytest_pinet.judge.verdict.judge_measurement`.
    """


@hookspec
def pytest_pinet_measurement_recorded(measurement: Measurement, raw_dir: Path) -> None:
    """A measurement was committed to the results files and the store (a result sink: a
    dashboard, a message bus).  ``raw_dir`` holds the tool outputs kept beside it."""


@hookspec(firstresult=True)
def pytest_pinet_choose_place(candidates: list[Place], preferred: int) -> Sequence[Place] | None:
    """The places this process may take, in the order to try them; None keeps pinet's own
    order (an xdist worker ``gwN`` first tries the N-th place, then the next free one)."""
