"""What every test of this repository shares (the unit, integration and suite tests alike).

- Measurements taken by this repository's own tests go to a temporary results directory,
  store and data directory (``PINET_RESULTS``, ``PINET_DB``, ``XDG_DATA_HOME``), never to
  the user's store in ``~/.local/share/pinet``: a test run must not become part of the
  baselines it is judged against.  An explicit ``--pinet-results`` / ``--pinet-db`` wins.
- The lab a user names (``LG_ENV``, ``PINET_LAB``, a coordinator) is the lab the suite under
  ``pytest_pinet/suite`` measures, from a clone as from an installed package.  The
  repository's own tests under ``tests/`` build and name their own virtual labs: while one
  runs, those variables are unset, so none of them can drive a user's real lab by accident.
  A test that means to use the named lab says so with ``@pytest.mark.real_lab``.
- pytester's in-process runs restore ``sys.modules`` afterwards, so a module first imported
  inside one (numpy, through the plugin's charts) is dropped, and numpy refuses to load twice
  per process: every later chart test would see an ImportError.  Importing them after
  collection, when a test uses pytester, keeps them in the snapshot pytester restores; the
  suite's own runs in subprocesses (dozens of nights per test command) skip the 0.3 s.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import tomllib
from collections.abc import Generator, Iterator
from pathlib import Path

import pytest
from packaging.requirements import Requirement

# How a user names a lab outside the command line.  The suite (pytest_pinet/suite) measures the
# lab so named, as it does installed; the repository's own tests (tests/) never see it.
LAB_VARIABLES = ("LG_ENV", "LG_COORDINATOR", "PINET_LAB", "PINET_COORDINATOR")
pytest_plugins = ["tests.slowest_tests", "tests.worker_schedule"]
TESTS = Path(__file__).resolve().parent / "tests"


def _import_chart_modules() -> None:
    """matplotlib and numpy, imported once before pytester first takes its snapshot."""
    with contextlib.suppress(ImportError):
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot
        import numpy  # noqa: F401


@pytest.fixture(autouse=True)
def _no_real_lab_in_repository_tests(request: pytest.FixtureRequest) -> Iterator[None]:
    """The repository's tests under tests/ run with no lab named by the environment (their
    pytester and subprocess runs inherit it), unless a test asks with ``real_lab``."""
    if TESTS not in Path(str(request.node.path)).parents or request.node.get_closest_marker("real_lab"):
        yield
        return
    with pytest.MonkeyPatch.context() as patch:
        for name in LAB_VARIABLES:
            patch.delenv(name, raising=False)
        yield


def _test_command_board(config: pytest.Config) -> None:
    """The test command (``pytest`` with no paths: the ini's testpaths) runs the suite on the
    namespace board alone, unless a board is asked for (``--pinet-board``, ``PINET_BOARD``).
    Its 10 s windows stay: shorter ones leave the adaptive rule no room, and a fixed 5 s run
    at GbE's 940 Mbit/s floor would toss a coin where the adaptive one says "undecided".

    Why: the test command tests pinet's code; measuring the two-board lab is the main job's
    (``pinet run``).  The QEMU board's own paths are tested by tests/integration
    (test_qemu_lab runs the suite's QEMU cases on it, test_every_board and the virtual rack
    boot it), and its whole suite took 21 of CI's minutes twice over what it proves.  A run
    naming the suite (``pytest pytest_pinet/suite``, ``-m routing``) keeps the default, both."""
    if config.args_source is not pytest.Config.ArgsSource.TESTPATHS:
        return
    if getattr(config.option, "pinet_board", None) is None and not os.environ.get("PINET_BOARD"):
        config.option.pinet_board = "netns"
        config.stash[TEST_COMMAND_BOARD] = True


TEST_COMMAND_BOARD = pytest.StashKey[bool]()


def pytest_report_header(config: pytest.Config) -> list[str]:
    """Say why the test command's suite measures one board, where a reader looks first."""
    if config.stash.get(TEST_COMMAND_BOARD, False):
        return ["pinet: the test command measures the suite on the namespace board (pinet run: both boards)"]
    return []


def _test_extra() -> set[str]:
    """The modules the test extra brings, read from pyproject.toml's own list (a distribution
    ``psycopg[binary]>=3.1`` is the module ``psycopg``), so the hint never lags behind it."""
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "pyproject.toml"), "rb") as f:
        extras = tomllib.load(f)["project"]["optional-dependencies"]
    return {Requirement(spec).name.lower().replace("-", "_") for spec in extras["test"]}


TEST_EXTRA = _test_extra()
TEST_EXTRA_HINT = "pip install -e '.[test]' (in a clone) or pip install 'pytest-pinet[test]'"


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(
    collector: pytest.Collector,
) -> Generator[None, pytest.CollectReport, pytest.CollectReport]:
    """A test module that cannot import a module of the test extra says which extra to
    install, in one line, instead of a bare "No module named 'hypothesis'": still an error
    (a test that silently stopped running proves nothing), but one a newcomer can fix."""
    report = yield
    if report.failed and isinstance(collector, pytest.Module):
        missing = _missing_extra(str(report.longrepr))
        if missing:
            report.longrepr = f"{collector.nodeid} needs {missing}, from the test extra: {TEST_EXTRA_HINT}"
    return report


def _missing_extra(text: str) -> str | None:
    """The module of the test extra a ModuleNotFoundError names, if that is what failed."""
    for module in sorted(TEST_EXTRA):
        if f"No module named '{module}" in text:
            return module
    return None


_SCRATCH = pytest.StashKey[str]()
_PASSED = pytest.StashKey[bool]()


@pytest.hookimpl(tryfirst=True)  # before pinet's own configure reads the board option
def pytest_configure(config: pytest.Config) -> None:
    """Choose the test command's board (``_test_command_board``), register the test tiers
    (below) and point results, the store and the data directory
    (Allure history) at a directory of this test run, whatever the user's environment says:
    the repository's tests never touch a user's history.  An explicit ``--pinet-results`` /
    ``--pinet-db`` still wins (the main job, ``pinet run``, names both)."""
    _test_command_board(config)
    for name, text in TIERS.items():
        config.addinivalue_line("markers", f"{name}: {text}")
    config.addinivalue_line(
        "markers", "real_lab: a repository test that may use the lab LG_ENV / PINET_LAB names"
    )
    _shipped_rules_only()
    if "PINET_REPO_TEST_DIR" not in os.environ:  # xdist workers inherit the controller's
        scratch = tempfile.mkdtemp(prefix="pinet-test-")
        config.stash[_SCRATCH] = scratch
        os.environ["PINET_REPO_TEST_DIR"] = scratch
        os.environ["PINET_RESULTS"] = os.path.join(scratch, "results")
        os.environ["PINET_DB"] = "sqlite:///" + os.path.join(scratch, "pinet.sqlite")
        os.environ["XDG_DATA_HOME"] = os.path.join(scratch, "data")


def _shipped_rules_only() -> None:
    """This repository's ``lab/`` is the example a lab engineer copies, not a lab of its own:
    a ``lab/thresholds.yaml`` or ``lab/profiles.yaml`` put there (as a lab would, after copying)
    must not move the floors its own tests judge by.  pinet reads ``lab/NAME.yaml`` under the
    rootdir when nothing names the file, so the tests name the shipped ones, through the
    environment that their subprocess runs inherit too.  A file the developer names still
    wins (``PINET_THRESHOLDS``, or ``--pinet-thresholds``, which outranks the environment)."""
    from pytest_pinet.plugin.options import DATA

    for name in ("thresholds", "profiles"):
        os.environ.setdefault(f"PINET_{name.upper()}", str(DATA / f"{name}.yaml"))


# Test tiers: which machine a test needs.  A test's directory gives its tier unless it carries
# one itself (a PostgreSQL test among the store's unit tests is ``integration``).
TIERS = {
    "unit": "no lab, browser, database or root: runs on a clone with nothing set up but the venv",
    "integration": "real tools (namespaces, sshd, iperf3, PostgreSQL, Chromium, linters); most need root",
    "qemu": "the QEMU board (images built once, minutes per test under TCG); also integration",
    "slow": "takes more than about half a minute",
    "needs_root": "network namespaces, sshd, or other users; skipped with the reason otherwise",
}
_REPO = os.path.dirname(os.path.abspath(__file__))


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Remember whether every test passed, for :func:`pytest_unconfigure`."""
    session.config.stash[_PASSED] = exitstatus == 0


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    """The scratch directory this run made goes when every test passed (one was left in /tmp
    per test run); after a failure it stays, its path in the header, for a look at the
    measurements.  Last of all: the summaries read it until then."""
    scratch = config.stash.get(_SCRATCH, None)
    if scratch is not None and config.stash.get(_PASSED, False):
        shutil.rmtree(scratch, ignore_errors=True)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Give every test of this repository its tier: ``unit`` under tests/unit, ``integration``
    under tests/integration and for the network suite (it needs a lab); ``qemu`` implies
    ``integration``."""
    if any("pytester" in getattr(item, "fixturenames", ()) for item in items):
        _import_chart_modules()
    for item in items:
        path = os.path.relpath(str(item.path), _REPO)
        if "root_required" in getattr(item, "fixturenames", ()) or path.startswith("pytest_pinet"):
            item.add_marker(pytest.mark.needs_root)  # the suite builds the virtual lab on demand
        if any(item.get_closest_marker(tier) for tier in ("unit", "integration")):
            continue
        if item.get_closest_marker("qemu") or not path.startswith(os.path.join("tests", "unit")):
            item.add_marker(pytest.mark.integration)
        else:
            item.add_marker(pytest.mark.unit)
