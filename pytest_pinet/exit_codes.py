"""The one table of exit statuses, for a night (pytest with pinet, ``pinet run``), every
``pinet`` command and the CI recipes alike: a pager tells a lab fault (the lab's owner) from a
regression (the boards' owner) by the number alone.

pytest's own 0-5 keep their meaning (1 is then a failed test that is no verdict on a board);
pinet adds 6-11.  A night with several kinds of failure exits with the one its owner must hear
first: a regression, then a figure below its floor, then any other failure, then lab faults
(a lab fault beside a regression never hides the regression).  docs/nightly.md prints this
table and a test compares the two; lab/ci/pinet-ci.sh keeps the codes it uses as shell
variables, compared by the same test.
"""

from __future__ import annotations

import enum

from .errors import ConfigError, LabFault, MissingToolError, PinetError


class Exit(enum.IntEnum):
    """Why a night or a command ended as it did."""

    GREEN = 0
    FAILED = 1
    INTERRUPTED = 2
    INTERNAL_ERROR = 3
    BAD_CONFIG = 4
    NOTHING_COLLECTED = 5
    NO_REPORT = 6
    LAB_FAULT = 7
    NOTHING_MEASURED = 8
    REGRESSION = 9
    BELOW_THRESHOLD = 10
    MISSING_PREREQUISITE = 11


# What each status says, and whose it is: the line ``pinet run`` prints and docs/nightly.md's table.
MEANING: dict[Exit, str] = {
    Exit.GREEN: "no failures: every planned measurement that ran passed, and at least one was taken",
    Exit.FAILED: "a test failed that is no verdict on a board (a check of the suite, a test's own error)",
    Exit.INTERRUPTED: "interrupted (Ctrl-C, a session-level error), or a command stopped with the reason",
    Exit.INTERNAL_ERROR: "internal error of pytest or a plugin",
    Exit.BAD_CONFIG: "bad configuration: an option, an env file, a rules file or a recipe variable",
    Exit.NOTHING_COLLECTED: "no tests collected",
    Exit.NO_REPORT: "no report: every test passed, but the report could not be built or published",
    Exit.LAB_FAULT: "lab faults only: the lab failed, not a board; nothing is a regression",
    Exit.NOTHING_MEASURED: "nothing was measured",
    Exit.REGRESSION: "a regression: a board measured worse than its own history",
    Exit.BELOW_THRESHOLD: "below threshold: a figure under its floor (or over its ceiling), no regression",
    Exit.MISSING_PREREQUISITE: "a missing prerequisite: a tool, an extra, Node.js, ssh-agent, root",
}

# Whose morning a red status is: the recipes route a night's end by it.
OWNER: dict[Exit, str] = {
    Exit.REGRESSION: "boards",
    Exit.BELOW_THRESHOLD: "boards",
    Exit.LAB_FAULT: "lab",
    Exit.NOTHING_MEASURED: "lab",
    Exit.MISSING_PREREQUISITE: "lab",
    Exit.BAD_CONFIG: "lab",
    Exit.NO_REPORT: "lab",
}


# Statuses that answer the question asked (a night that ran and judged, green or red for the
# boards; a query that found something, as ``pinet regressions`` or ``pinet trends``): what a
# caller that wants figures, not a verdict, accepts from a run (``pinet bench``'s batches).
ANSWERS = frozenset({Exit.GREEN, Exit.FAILED, Exit.REGRESSION, Exit.BELOW_THRESHOLD})


def night_exit(
    pytest_status: int,
    verdicts_failed: set[Exit],
    other_failures: int,
    lab_faults: int,
    measured_nothing: bool,
) -> Exit | None:
    """A night's status from what failed (``verdicts_failed``: the statuses of the failed
    verdicts; ``other_failures``: failed tests that were neither a verdict nor the lab's) and
    whether anything was measured; None keeps pytest's own status (``pytest_status``).  A lab
    fault is never a regression, a night that measured nothing is never green, and the owner
    who must hear first decides (see the module's docstring)."""
    green = pytest_status in (Exit.GREEN, Exit.NOTHING_COLLECTED)
    if green:
        return Exit.NOTHING_MEASURED if measured_nothing else None
    if pytest_status != Exit.FAILED:
        return None  # interrupted, an internal or usage error: pytest's word stands
    if Exit.REGRESSION in verdicts_failed:
        return Exit.REGRESSION
    if verdicts_failed:
        return Exit.BELOW_THRESHOLD
    if lab_faults and not other_failures:
        return Exit.LAB_FAULT
    return None


def exit_of(error: PinetError) -> Exit:
    """The status a ``pinet`` command ends with for an error it raised on purpose (a missing
    extra is both a setting and a prerequisite: the prerequisite is what the lab must fix)."""
    if isinstance(error, MissingToolError):
        return Exit.MISSING_PREREQUISITE
    if isinstance(error, ConfigError):
        return Exit.BAD_CONFIG
    if isinstance(error, LabFault):
        return Exit.LAB_FAULT
    return Exit.INTERRUPTED


def meaning(code: int) -> str:
    """The table's line for ``code``; a code outside it says so (a signal, a crash)."""
    try:
        return MEANING[Exit(code)]
    except ValueError:
        return "not one of pinet's exit statuses (a signal or a crash)"
