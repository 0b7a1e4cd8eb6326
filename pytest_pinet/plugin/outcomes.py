"""What a test's report means to pinet: whether it planned to measure, what combination it
measured, whether its verdict was undecided or the lab failed it; and, on the controller, the
outcome of every planned test, from which the night's exit status is decided.

A red night says why by its exit status (the one table, :mod:`pytest_pinet.exit_codes`):
a regression, a figure below its floor, another test's failure, lab faults only, nothing
measured; with several kinds, the one whose owner must hear first. A night whose
verdicts were not all decided keeps its status and says so in its status line: an undecided
verdict is neither a pass nor a regression (its interval held the line), and a nightly that
turned red on one would cry wolf on every figure that sits at its floor.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import TYPE_CHECKING, Any

import pytest

from ..errors import LabFault
from ..exit_codes import MEANING, Exit, night_exit
from ..redaction import mask
from .engagement import engage, engaged
from .run_state import FAILED_AS, MEASURED, PINET_RUN, UNDECIDED_PREFIX

if TYPE_CHECKING:
    from ..record.planned import PlannedTest

# The axes a combination is measured over, not part of it: which board (or link of a board)
# and which repetition.
BOARD_AXES = ("pinet_board", "pinet_link", "pinet_repetition")


def combination_of(item: pytest.Item) -> str:
    """What a planned test measures, whichever board measures it: the test and its parameters
    (scenario, direction, profile, qdisc, filesystem ...) without the board, e.g.
    ``test_download_through_the_board[qdisc=sfq]``; one board that cannot carry it may leave it
    to another."""
    params = getattr(getattr(item, "callspec", None), "params", {})
    shown = [
        f"{name.removeprefix('pinet_')}={value}" for name, value in params.items() if name not in BOARD_AXES
    ]
    name = getattr(item, "originalname", None) or item.name
    return f"{name}[{', '.join(shown)}]" if shown else name


# A test asking for one of these means to measure: a run of such tests that measured nothing
# is not green (see record/planned.py).
MEASURING_FIXTURES = frozenset(
    {
        "pinet_measure_tcp",
        "pinet_measure_routing",
        "pinet_measure_udp",
        "pinet_measure_storage",
        "pinet_measure_site",
        "pinet_record_measurement",
    }
)
# A failed verdict's words, by the status they give a night (others: a test failed, 1).
FAILED_AS_STATUS = {
    "regression": Exit.REGRESSION,
    "below-threshold": Exit.BELOW_THRESHOLD,
    "above-ceiling": Exit.BELOW_THRESHOLD,
}
NIGHT_STATUS = pytest.StashKey[str]()
COVERAGE_PLUGIN = "pinet-coverage"
PLANNED = "pinet_planned"
COMBINATION = "pinet_combination"  # the test with its parameters but not its board (see combination_of)
UNDECIDED = "pinet_undecided"  # a test report's property: its verdict could not be decided


def verdict_statuses(failed_as: str) -> set[Exit]:
    """The night statuses a failed test's verdict words give (``regression,below-threshold``);
    none for a failure that was no verdict on a board."""
    return {FAILED_AS_STATUS[word] for word in failed_as.split(",") if word in FAILED_AS_STATUS}


class Coverage:
    """On the controller (or a plain run): the outcome of every test that meant to measure,
    from the reports every worker sends, so the run knows what it measured and what not."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.planned: dict[str, PlannedTest] = {}
        self.lab_faults: set[str] = set()  # tests a lab fault failed (in any phase)
        # Failures that were not the lab's, by test and phase: a regression in the call and a
        # lab fault in the teardown is a regression; a module that did not collect is one too.
        self.other_failures: set[str] = set()
        self.verdicts_failed: set[Exit] = set()  # the statuses failed verdicts give the night
        self.undecided: set[str] = set()

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        properties = dict(report.user_properties)
        if report.failed:
            if "pinet_lab_fault" in properties:
                self.lab_faults.add(report.nodeid)
            elif statuses := verdict_statuses(str(properties.get(FAILED_AS, ""))):
                self.verdicts_failed.update(statuses)
            else:
                self.other_failures.add(f"{report.nodeid} ({report.when})")
        if UNDECIDED in properties:
            self.undecided.add(report.nodeid)
        if PLANNED not in properties and "pinet_lab_fault" not in properties:
            return
        if not engaged(self.config):
            engage(self.config)  # an xdist controller learns of pinet from its workers
        if PLANNED not in properties:
            return
        from ..record.planned import PlannedTest

        test = self.planned.setdefault(report.nodeid, PlannedTest(report.nodeid))
        test.combination = str(properties.get(COMBINATION, "")) or test.combination
        test.measured = test.measured or MEASURED in properties
        if report.skipped:
            reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
            test.update("skipped", str(reason).removeprefix("Skipped: "))
        elif report.failed:
            test.update("failed", str(properties.get("pinet_lab_fault", "")))

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.failed:  # a module that did not even import is no lab fault
            self.other_failures.add(f"{report.nodeid} (collection)")


def planned_tests(config: pytest.Config) -> dict[str, PlannedTest]:
    """The planned tests' outcomes the controller gathered (empty on a worker)."""
    coverage = config.pluginmanager.get_plugin(COVERAGE_PLUGIN)
    return coverage.planned if isinstance(coverage, Coverage) else {}


def decide_night(session: pytest.Session) -> None:
    """The night's exit status, from what failed and what was measured: a lab fault is never a
    regression, a night that measured nothing is never green (unless ``--pinet-allow-skips``),
    and one whose verdicts could not all be decided says so. The reason is kept for the
    summary (:data:`NIGHT_STATUS`)."""
    from ..record.planned import measured_nothing

    coverage = session.config.pluginmanager.get_plugin(COVERAGE_PLUGIN)
    if not isinstance(coverage, Coverage):
        return  # a worker: the controller decides
    run = session.config.stash[PINET_RUN]
    green = session.exitstatus in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED)
    nothing = (
        green and not run.settings.allow_skips and measured_nothing(coverage.planned, run.results.load())
    )
    others, faults = len(coverage.other_failures), len(coverage.lab_faults)
    status = night_exit(int(session.exitstatus), coverage.verdicts_failed, others, faults, nothing)
    if status is Exit.NOTHING_MEASURED:
        why = "nothing was measured"
    elif status is Exit.LAB_FAULT:
        why = f"every failure ({faults}) was a lab fault, none a regression"
    elif status is not None:
        why = MEANING[status] + (
            f" (and {others + faults} other failure(s), listed above)" if others + faults else ""
        )
    elif green and coverage.undecided:
        why = f"with {len(coverage.undecided)} undecided verdict(s): not failed, not proven (listed above)"
    else:
        return
    if status is not None:
        session.exitstatus = status
    session.config.stash[NIGHT_STATUS] = f"exit {int(session.exitstatus)}: {why}"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, None]:
    """Show a lab fault as one line with its category, not as a product traceback, and keep
    it as a fact of the run (recovery keeps the faults it handled itself)."""
    outcome = yield
    report = outcome.get_result()
    if MEASURING_FIXTURES.intersection(getattr(item, "fixturenames", ())):
        report.user_properties.append((PLANNED, "1"))
        if report.when == "setup":
            report.user_properties.append((COMBINATION, combination_of(item)))
    if report.skipped and isinstance(report.longrepr, tuple) and UNDECIDED_PREFIX in str(report.longrepr[2]):
        report.user_properties.append((UNDECIDED, "1"))
    if call.excinfo is not None and isinstance(call.excinfo.value, LabFault):
        fault = call.excinfo.value
        report.longrepr = mask(f"{fault} [not a regression: the lab failed, see the evidence above]")
        report.user_properties.append(("pinet_lab_fault", fault.category))
        run = item.config.stash.get(PINET_RUN, None)
        if run is not None and not fault.recorded:
            fault.recorded = True
            run.results.record_fact(
                "lab-fault",
                {
                    "test_id": item.nodeid,
                    "phase": call.when,
                    "category": fault.category,
                    "host": fault.host,
                    "message": str(fault),
                    "recovered": False,
                    "action": "none",
                },
            )


def pytest_report_teststatus(report: pytest.TestReport) -> tuple[str, str, str] | None:
    """An undecided test is its own outcome in pytest's counts ("2 undecided"), beside passed,
    failed and skipped: its interval held the line it was judged against."""
    if report.when == "call" and (UNDECIDED, "1") in report.user_properties:
        return "undecided", "U", "UNDECIDED"
    return None
