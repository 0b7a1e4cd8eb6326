"""pytest's entry point for pinet (``pytest11``): the hooks pytest calls, each implemented in
the module of its concern and gathered here, and the run's lifecycle (configure, finish).

The plugin is thin and quiet: options come from one table (:mod:`.options`), the run's state
is made on first need (:mod:`.run_state`), and a pytest run that uses no pinet fixture
and passes no pinet option sees nothing of pinet (:mod:`.engagement`).
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from ..errors import ConfigError, PinetError
from . import hookspecs
from .collection import DerivedFeatures, pytest_collection_modifyitems
from .end_of_run import pytest_report_header, pytest_terminal_summary, write_allure_run_files
from .engagement import engage, options_given
from .option_sources import check_named_lab_files, named_lab
from .options import add_options
from .outcomes import (
    COVERAGE_PLUGIN,
    Coverage,
    decide_night,
    planned_tests,
    pytest_report_teststatus,
    pytest_runtest_makereport,
)
from .parametrize import pytest_generate_tests
from .run_state import PINET_RUN, RUN_ID, keep_standings
from .xdist_groups import GroupKeeper

if TYPE_CHECKING:
    # What a run uses (the judge, the store, the lab) loads when a run needs it: a pytest run
    # that does not use pinet pays for none of it (``pinet bench`` measures the start-up cost).
    from ..judge.standing import Standing
    from ..judge.threshold_rules import Thresholds
    from ..judge.verdict import JudgePolicy, Verdict
    from ..model import Measurement

# The hooks implemented in the modules of their concern, registered with this module.
__all__ = [
    "pytest_collection_modifyitems",
    "pytest_generate_tests",
    "pytest_report_header",
    "pytest_report_teststatus",
    "pytest_runtest_makereport",
    "pytest_terminal_summary",
]

# The fixture modules, in the order pytest registers them: the order is behaviour (a night's
# tests and their fixtures set up in it; sorted by name, test_accept's fourth night measured
# one context fewer), so it is written here, and tests/unit/test_plugin_layer.py holds it to
# the folder: every module of the fixtures package is listed, and nothing else.
FIXTURE_ORDER = ("lab_access", "lab_health", "tcp", "judging", "routing", "udp", "storage", "images")
pytest_plugins = [f"{__package__}.fixtures.{name}" for name in FIXTURE_ORDER]


def _new_run_id() -> str:
    """A sortable, unique-enough id for one pytest run (one per xdist controller), made without
    loading the results machinery (a run that never uses pinet must not pay for it)."""
    return time.strftime("%Y%m%dT%H%M%S", time.gmtime()) + f"-{os.getpid()}"


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    """Declare pinet's hooks (judging, recording, choosing a place) for conftests to implement."""
    pluginmanager.add_hookspecs(hookspecs)


def pytest_addoption(parser: pytest.Parser) -> None:
    """Register the ``pinet`` option group and its ini keys, all from the one options table."""
    add_options(parser)


@pytest.hookimpl(trylast=True)
def pytest_pinet_judge_measurement(
    measurement: Measurement,
    thresholds: Thresholds,
    history: Sequence[float],
    policy: JudgePolicy,
    standing: Standing,
) -> Verdict:
    """The default verdict: thresholds, accepted baseline and thermal guard of :mod:`pytest_pinet.judge`."""
    from ..judge.verdict import judge_measurement

    return judge_measurement(measurement, thresholds, history, policy, standing)


def pytest_configure(config: pytest.Config) -> None:
    """Register markers; with a pinet option given, validate the settings before anything runs."""
    check_named_lab(config)
    workerinput = getattr(config, "workerinput", None)
    config.stash[RUN_ID] = workerinput["pinet_run_id"] if workerinput else _new_run_id()
    if options_given(config):
        engage(config)  # a bad option stops the run here, naming its source
    if config.pluginmanager.hasplugin("xdist"):
        config.pluginmanager.register(_XdistBridge(config.stash[RUN_ID]), "pinet-xdist-bridge")
        if workerinput is not None:
            config.pluginmanager.register(GroupKeeper(), "pinet-xdist-groups")
    if workerinput is None:
        config.pluginmanager.register(Coverage(config), COVERAGE_PLUGIN)
    if config.pluginmanager.hasplugin("labgrid"):
        config.pluginmanager.register(DerivedFeatures(), "pinet-derived-features")


def check_named_lab(config: pytest.Config) -> None:
    """A lab named any of the five ways that labgrid could not even read stops the run here,
    with one line naming the way it was named (see :func:`options.check_named_lab_files`)."""
    try:
        check_named_lab_files(*named_lab(config.getoption, config.getini, os.environ))
    except ConfigError as exc:
        raise pytest.UsageError(str(exc)) from None


class _XdistBridge:
    """Hands the controller's run id to every xdist worker (one lab owner per run)."""

    def __init__(self, run_id: str) -> None:
        self.run_id = run_id

    def pytest_configure_node(self, node: Any) -> None:
        node.workerinput["pinet_run_id"] = self.run_id


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Every process gives its place back; the controller (or a plain run) also writes the
    run-level report files and tears down the labs the run built."""
    run = session.config.stash.get(PINET_RUN, None)
    if run is None:
        return
    decide_night(session)
    if not run.is_worker:
        keep_standings(run)
        alluredir = getattr(session.config.option, "allure_report_dir", None)
        if alluredir:
            write_allure_run_files(Path(alluredir), run, planned_tests(session.config))
    try:
        run.release_lab()
    except PinetError as exc:  # never hide the test results behind a teardown error
        run.lab_error = str(exc)
