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
    combination: str = ""  # the test and its parameters without the board (plugin.combination_of)

    def update(self, outcome: str, why: str) -> None:
        """Keep the phase that says most: a failure over a skip over a pass."""
        rank = {"passed": 0, "skipped": 1, "failed": 2}
        if rank.get(outcome, 0) > rank.get(self.outcome, 0) or (
            outcome == self.outcome and why and not self.why
        ):
            self.outcome, self.why = outcome, why


def _why_not(test: PlannedTest) -> str:
    if test.outcome == "skipped":
        return f"skipped: {test.why}" if test.why else "skipped"
    if test.outcome == "failed":
        return f"lab fault: {test.why}" if test.why else "failed before measuring"
    return "passed without recording a measurement"


def measured_counts(planned: Mapping[str, PlannedTest]) -> tuple[int, int]:
    """(measured, planned) tests."""
    return sum(test.measured for test in planned.values()), len(planned)


def unmeasured_combinations(planned: Mapping[str, PlannedTest]) -> tuple[dict[str, list[PlannedTest]], int]:
    """The planned combinations (a test and its parameters, whichever board) that no board
    measured, each with its tests; and how many combinations were planned."""
    combinations: dict[str, list[PlannedTest]] = {}
    for _, test in sorted(planned.items()):
        combinations.setdefault(test.combination or test.nodeid, []).append(test)
    missing = {name: tests for name, tests in combinations.items() if not any(t.measured for t in tests)}
    return missing, len(combinations)


def combination_reason(tests: Sequence[PlannedTest]) -> str:
    """Why no board measured a combination: each distinct reason once."""
    return "; ".join(dict.fromkeys(_why_not(test) for test in tests))


def coverage_lines(planned: Mapping[str, PlannedTest], rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """How many planned tests measured, then each one that did not and why; then how many
    planned combinations no board measured, each with its reasons."""
    if not planned:
        return []
    measured, total = measured_counts(planned)
    lines = [
        f"pinet: measured {measured} of {total} planned tests "
        f"({len(rows)} measurement{'s' if len(rows) != 1 else ''})"
    ]
    lines += [
        f"  not measured: {t.nodeid}: {_why_not(t)}" for _, t in sorted(planned.items()) if not t.measured
    ]
    missing, combinations = unmeasured_combinations(planned)
    lines.append(
        f"pinet: {len(missing)} of {combinations} planned combinations measured on no board"
        + (":" if missing else "")
    )
    lines += [f"  on no board: {name}: {combination_reason(tests)}" for name, tests in missing.items()]
    return lines


def measured_nothing(planned: Mapping[str, PlannedTest], rows: Sequence[Mapping[str, Any]]) -> bool:
    """True when tests meant to measure ran and not one measurement was taken."""
    return bool(planned) and not rows
