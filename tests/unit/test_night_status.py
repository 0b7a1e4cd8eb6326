"""What a night's failures were, for its exit status (plugin/outcomes.py): a lab fault in one
phase never hides a regression in another, and a module that did not collect is no lab fault."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from pytest_pinet.plugin.engagement import ENGAGED
from pytest_pinet.plugin.outcomes import Coverage


def _report(nodeid: str, when: str, failed: bool, lab_fault: bool = False) -> Any:
    properties = [("pinet_lab_fault", "ssh")] if lab_fault else []
    return SimpleNamespace(nodeid=nodeid, when=when, failed=failed, skipped=False, user_properties=properties)


def _coverage() -> Coverage:
    return Coverage(SimpleNamespace(stash={ENGAGED: True}))  # type: ignore[arg-type]


def test_a_regression_with_a_lab_fault_in_its_teardown_is_still_a_regression():
    coverage = _coverage()
    coverage.pytest_runtest_logreport(_report("t::a", "call", failed=True))  # below its floor
    coverage.pytest_runtest_logreport(_report("t::a", "teardown", failed=True, lab_fault=True))
    assert coverage.other_failures == {"t::a (call)"} and coverage.lab_faults == {"t::a"}


def test_lab_faults_alone_are_the_labs_and_a_collection_error_is_not():
    coverage = _coverage()
    coverage.pytest_runtest_logreport(_report("t::a", "setup", failed=True, lab_fault=True))
    coverage.pytest_runtest_logreport(_report("t::b", "call", failed=False))
    assert coverage.lab_faults == {"t::a"} and not coverage.other_failures
    coverage.pytest_collectreport(SimpleNamespace(nodeid="suite/test_x.py", failed=True))  # type: ignore[arg-type]
    assert coverage.other_failures == {"suite/test_x.py (collection)"}
