"""Which planned measurements a run took, and why the others were not taken.

A nightly that measured nothing must never look green: a lab that could not be reached, a
place held elsewhere or every test skipped leaves no measurement, and the run then fails
unless the user opted out.  Free of pytest: the plugin feeds it each test's outcome.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass
class PlannedTest:
    """A test that would measure, and how it went (the worst of its phases)."""

    nodeid: str
    outcome: str = "passed"  # passed, failed, skipped
    why: str = ""  # the skip reason or the lab fault's category
    measured: bool = False  # recorded at least one measurement

    def update(self, outcome: str, why: str) -> None:
        """Keep the phase that says most: a failure over a skip over a pass."""
        rank = {"passed": 0, "skipped": 1, "failed": 2}
        if rank.get(outcome, 0) > rank.get(self.outcome, 0) or (
            outcome == self.outcome and why and not self.why
        ):
            self.outcome, self.why = outcome, why


def coverage_lines(planned: Mapping[str, PlannedTest], rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """How many planned tests measured, then each one that did not and why."""
    if not planned:
        return []
    missing = [test for _, test in sorted(planned.items()) if not test.measured]
    lines = [
        f"pinet: measured {len(planned) - len(missing)} of {len(planned)} planned tests "
        f"({len(rows)} measurement{'s' if len(rows) != 1 else ''})"
    ]
    for test in missing:
        if test.outcome == "skipped":
            why = f"skipped: {test.why}" if test.why else "skipped"
        elif test.outcome == "failed":
            why = f"lab fault: {test.why}" if test.why else "failed before measuring"
        else:
            why = "passed without recording a measurement"
        lines.append(f"  not measured: {test.nodeid}: {why}")
    return lines


def measured_nothing(planned: Mapping[str, PlannedTest], rows: Sequence[Mapping[str, Any]]) -> bool:
    """True when tests meant to measure ran and not one measurement was taken."""
    return bool(planned) and not rows
