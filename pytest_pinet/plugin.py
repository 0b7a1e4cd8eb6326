"""pytest entry point of pytest-pinet: options, markers, hooks, header, lab lifecycle, summary.

The plugin is thin and quiet: options come from one table (:mod:`pytest_pinet.options`), the
run's state is made on first need (:mod:`pytest_pinet.fixtures.state`), and a pytest run
that uses no pinet fixture and passes no pinet option sees nothing of pinet: no header, no
results directory, no settings parsed.  Fixtures live in :mod:`pytest_pinet.fixtures`.
"""

from __future__ import annotations

import os
import time
from collections.abc import Generator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from . import hookspecs
from .errors import ConfigError, LabFault, PinetError
from .fixtures.state import MEASURED, PINET_RUN, RUN_ID, UNDECIDED_PREFIX, pinet_run
from .option_layers import any_given, check_named_lab_files, named_lab
from .options import add_options
from .plugin_items import combination_of, one_board_after_another
from .plugin_summary import write_allure_run_files, write_summary
from .redaction import mask

if TYPE_CHECKING:
    # What a run uses (the judge, the store, the lab) loads when a run needs it: a pytest run
    # that does not use pinet pays for none of it (``pinet bench`` measures the start-up cost).
    from .judge.standing import Standing
    from .judge.thresholds import Thresholds
    from .judge.verdict import JudgePolicy, Verdict
    from .model import Measurement
    from .record.planned import PlannedTest
    from .session.run import PinetRun
    from .settings import PinetSettings

# The suites' markers, registered only where pinet is active (a pinet option or ini key given,
# or the shipped suite collected, whose conftest registers them): a project that does not use
# pinet keeps --strict-markers catching its own typo of "storage" or "routing".
MARKERS = {
    "ethernet": "built-in or adapter Ethernet throughput between a board and a peer",
    "half_duplex": "one end sends, the other receives",
    "full_duplex": "both ends send at once",
    "routing": "traffic routed through the board between two peers",
    "latency": "round-trip time idle and under load beside the traffic, judged lower-is-better",
    "usb_adapter": "USB Ethernet adapters of the board",
    "udp": "UDP packet rates",
    "storage": "USB disk throughput",
    "qemu_board": "the QEMU board itself: labgrid power-cycle, serial console, USB devices",
    # labgrid's own marker, registered here only when labgrid's plugin is off (-p no:labgrid):
    # with --lg-env, a test needing a feature no target declares is skipped by labgrid
    # (adapters: usb-ethernet, disks: usb-disk; pinet derives them, see lab/features.py)
    "lg_feature": "labgrid feature flags a target must declare",
}


def register_markers(config: pytest.Config) -> None:
    """Register the suites' markers once, leaving any already registered (labgrid's
    ``lg_feature``, or a project's own line for the same name) as it is."""
    known = {line.split(":", 1)[0].split("(", 1)[0].strip() for line in config.getini("markers")}
    if config.pluginmanager.hasplugin("labgrid"):
        known.add("lg_feature")  # labgrid's plugin registers it in its own (trylast) configure
    for name, text in MARKERS.items():
        if name not in known:
            config.addinivalue_line("markers", f"{name}: {text}")


pytest_plugins = [
    "pytest_pinet.fixtures.lab_access",
    "pytest_pinet.fixtures.tcp",
    "pytest_pinet.fixtures.judging",
    "pytest_pinet.fixtures.routing",
    "pytest_pinet.fixtures.udp",
    "pytest_pinet.fixtures.storage",
    "pytest_pinet.fixtures.images",
]
FIXTURE_MODULES = "pytest_pinet.fixtures."
AUTOUSE_FIXTURES = frozenset({"pinet_flash_image", "pinet_board_image", "pinet_repetition"})
ENGAGED = pytest.StashKey[bool]()
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
PLANNED = "pinet_planned"
COMBINATION = "pinet_combination"  # the test with its parameters but not its board (see combination_of)
UNDECIDED = "pinet_undecided"  # a test report's property: its verdict could not be decided


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


def _options_given(config: pytest.Config) -> bool:
    """True when the command line or the ini file names any pinet option."""
    return any_given(config.getoption, config.getini)


@pytest.hookimpl(trylast=True)
def pytest_pinet_judge_measurement(
    measurement: Measurement,
    thresholds: Thresholds,
    history: Sequence[float],
    policy: JudgePolicy,
    standing: Standing,
) -> Verdict:
    """The default verdict: thresholds, accepted baseline and thermal guard of :mod:`pytest_pinet.judge`."""
    from .judge.verdict import judge_measurement

    return judge_measurement(measurement, thresholds, history, policy, standing)


def pytest_configure(config: pytest.Config) -> None:
    """Register markers; with a pinet option given, validate the settings before anything runs."""
    check_named_lab(config)
    workerinput = getattr(config, "workerinput", None)
    config.stash[RUN_ID] = workerinput["pinet_run_id"] if workerinput else _new_run_id()
    config.stash[ENGAGED] = _options_given(config)
    if config.stash[ENGAGED]:
        register_markers(config)
        pinet_run(config)  # a bad option stops the run here, naming its source
    if config.pluginmanager.hasplugin("xdist"):
        config.pluginmanager.register(_XdistBridge(config.stash[RUN_ID]), "pinet-xdist-bridge")
    if workerinput is None:
        config.pluginmanager.register(_Coverage(config), "pinet-coverage")
    if config.pluginmanager.hasplugin("labgrid"):
        config.pluginmanager.register(_DerivedFeatures(), "pinet-derived-features")


def check_named_lab(config: pytest.Config) -> None:
    """A lab named any of the five ways that labgrid could not even read stops the run here,
    with one line naming the way it was named (see :func:`options.check_named_lab_files`)."""
    try:
        check_named_lab_files(*named_lab(config.getoption, config.getini, os.environ))
    except ConfigError as exc:
        raise pytest.UsageError(str(exc)) from None


class _Coverage:
    """On the controller (or a plain run): the outcome of every test that meant to measure,
    from the reports every worker sends, so the run knows what it measured and what not."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.planned: dict[str, PlannedTest] = {}

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        properties = dict(report.user_properties)
        if PLANNED not in properties:
            return
        if not self.config.stash.get(ENGAGED, False):
            self.config.stash[ENGAGED] = True
            pinet_run(self.config)  # an xdist controller learns of pinet from its workers
        from .record.planned import PlannedTest

        test = self.planned.setdefault(report.nodeid, PlannedTest(report.nodeid))
        test.combination = str(properties.get(COMBINATION, "")) or test.combination
        test.measured = test.measured or MEASURED in properties
        if report.skipped:
            reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
            test.update("skipped", str(reason).removeprefix("Skipped: "))
        elif report.failed:
            test.update("failed", str(properties.get("pinet_lab_fault", "")))


UNSUPPORTED_FEATURES = "unsupported feature(s): "  # how labgrid's plugin words its skip


class _DerivedFeatures:
    """labgrid skips a test whose ``lg_feature`` no target of its env declares.  For pinet's
    own tests on a pinet lab the inventory says what the lab has (a USB adapter on a link:
    ``usb-ethernet``; a disk: ``usb-disk``), so such a skip is lifted for the features the
    inventory implies; any other test keeps labgrid's verdict, and a feature the lab lacks
    still skips, counted as not measured with labgrid's reason."""

    @pytest.hookimpl(trylast=True)  # after labgrid's own hook has marked its skips
    def pytest_collection_modifyitems(self, config: pytest.Config, items: list[pytest.Item]) -> None:
        skipped = [item for item in items if _feature_skip(item) is not None and _uses_pinet([item])]
        if not skipped:
            return
        from labgrid.pytestplugin.hooks import LABGRID_ENV_KEY

        from .lab.features import derived_features
        from .lab.inventory import load_inventory

        env = config.stash.get(LABGRID_ENV_KEY, None)
        try:
            derived = derived_features(load_inventory(env.config_file)) if env is not None else set()
        except PinetError:
            return  # not a pinet lab: labgrid's verdict stands
        for item in skipped:
            mark = _feature_skip(item)
            assert mark is not None
            missing = {
                f.strip() for f in str(mark.kwargs["reason"]).removeprefix(UNSUPPORTED_FEATURES).split(",")
            }
            if missing <= derived:
                item.own_markers.remove(mark)


def _feature_skip(item: pytest.Item) -> pytest.Mark | None:
    """The skip labgrid put on ``item`` for a feature its env does not declare, if any."""
    for mark in item.own_markers:
        if mark.name == "skip" and str(mark.kwargs.get("reason", "")).startswith(UNSUPPORTED_FEATURES):
            return mark
    return None


class _XdistBridge:
    """Hands the controller's run id to every xdist worker (one lab owner per run)."""

    def __init__(self, run_id: str) -> None:
        self.run_id = run_id

    def pytest_configure_node(self, node: Any) -> None:
        node.workerinput["pinet_run_id"] = self.run_id


def _uses_pinet(items: Sequence[pytest.Item]) -> bool:
    """True when a collected test asks, directly or through other fixtures, for one of ours."""
    for item in items:
        info = getattr(item, "_fixtureinfo", None)
        if info is None:
            continue
        for name, definitions in info.name2fixturedefs.items():
            if name in AUTOUSE_FIXTURES:
                continue  # every test has it; it does nothing without --pinet-image
            if any(str(getattr(d.func, "__module__", "")).startswith(FIXTURE_MODULES) for d in definitions):
                return True
    return False


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """A run whose tests use pinet's fixtures engages pinet: settings checked, header shown.

    Each test of a board joins that board's ``xdist_group``: with ``-n N --dist loadgroup``
    one worker measures one board (its hosts are held per test either way, see
    ``PlaceKeeper.hold``)."""
    for item in items:
        params = getattr(getattr(item, "callspec", None), "params", {})
        group = params.get("pinet_board") or params.get("pinet_link")
        if group is not None and item.get_closest_marker("xdist_group") is None:
            item.add_marker(pytest.mark.xdist_group(f"pinet-{group}"))
    engaged_run = config.stash.get(PINET_RUN, None)
    if engaged_run is not None:
        planned = _planned_lab(engaged_run.settings)
        if planned is not None:
            one_board_after_another(items, planned.boards, planned.links)
    images = list(engaged_run.settings.image) if engaged_run is not None else []
    if images:
        # Image is the outermost axis: every test of one image before the next flash.
        def image_rank(item: pytest.Item) -> int:
            params = getattr(getattr(item, "callspec", None), "params", {})
            name = params.get("pinet_board_image")
            return images.index(name) + 1 if name in images else 0

        items.sort(key=image_rank)
    if not config.stash.get(ENGAGED, False) and _uses_pinet(items):
        config.stash[ENGAGED] = True
        run = pinet_run(config)
        reporter = config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None and not run.is_worker:
            for line in header_lines(run):
                reporter.write_line(line)


def header_lines(run: PinetRun) -> list[str]:
    """Which lab, thresholds and results directory this run uses."""
    from .judge.thresholds import describe_mode
    from .record.data_home import store_url

    s = run.settings
    how = "no lab named" if s.lab_source.startswith("default of") else f"from {s.lab_source}"
    kind = {
        "both": "two-board lab {}: namespace board pi and QEMU board qpi",
        "qemu": "QEMU board lab {}",
        "netns": "namespace lab {}",
    }[s.board].format(s.virtual_lab)
    lab = f"virtual ({kind}, built on demand; {how})" if s.virtual else f"{s.lab} ({how})"
    return [
        f"pinet: lab {lab}",
        f"pinet: store {mask(store_url(s.db))} (history and baselines)",
        f"pinet: thresholds {s.thresholds}"
        + (f": {describe_mode(s.thresholds)}" if s.thresholds.is_file() else " (missing!)"),
        f"pinet: results {run.results.path}; iperf3 -P {s.streams} -t {s.duration} -O {s.omit}"
        + (
            f" (adaptive: stops once settled within {s.adaptive_precision} %, after {s.adaptive_min} s)"
            if s.settle_rule()
            else ""
        ),
    ]


def pytest_report_header(config: pytest.Config) -> list[str]:
    """With a pinet option given, say up front which lab and thresholds this run uses."""
    run = config.stash.get(PINET_RUN, None)
    return header_lines(run) if run is not None else []


@dataclass(frozen=True)
class PlannedLab:
    """What a run will measure, known at collection: its boards, each link's board and the
    boards that route."""

    boards: list[str]
    links: list[tuple[str, str]]  # (link, board)
    routers: list[str]


def _planned_lab(settings: PinetSettings) -> PlannedLab | None:
    """The lab a run will measure: from the env file, or the virtual lab's plan (known
    without building it); None for a directory of places' env files, whose boards are the
    reserved place's own."""
    if settings.virtual:
        spec = settings.lab_spec()
        boards = [host.name for host in spec.hosts if host.role == "board"]
        links = [(link.name, link.board) for link in spec.links if link.board in boards]
        return PlannedLab(boards, links, [route.board for route in spec.routes])
    from .lab.inventory import load_inventory

    files = [path for path in settings.lab_files if path.is_file()]
    if not files:
        return None
    inventory = load_inventory(files[0])
    return PlannedLab(
        [b.name for b in inventory.boards],
        [(link.name, link.board) for link in inventory.links],
        [route.board for route in inventory.routes],
    )


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Every board: a test that measures a board runs once per board of the inventory
    (``--pinet-boards`` selects); the adapter matrix (``usb_adapter`` tests asking for
    ``pinet_link``) runs once per link of those boards."""
    wants_links = "pinet_link" in metafunc.fixturenames and metafunc.definition.get_closest_marker(
        "usb_adapter"
    )
    if "pinet_board" not in metafunc.fixturenames and not wants_links:
        return
    settings = pinet_run(metafunc.config).settings
    planned = _planned_lab(settings)
    if planned is None:
        return
    boards, links = planned.boards, planned.links
    if "pinet_route" in metafunc.fixturenames and set(boards) & set(planned.routers):
        # The routing suite runs on the boards that route (each its own route, image by image).
        boards = [name for name in boards if name in planned.routers]
    if settings.boards:
        unknown = sorted(set(settings.boards) - set(boards))
        if unknown:
            raise pytest.UsageError(f"--pinet-boards names {unknown}, the lab's boards are {boards}")
        boards = [name for name in boards if name in settings.boards]
    if wants_links:
        names = [name for name, board in links if board in boards]
        metafunc.parametrize("pinet_link", names, ids=[f"link-{n}" for n in names])
    elif boards:
        metafunc.parametrize("pinet_board", boards, ids=[f"board-{n}" for n in boards], scope="session")
    if settings.image and (boards or wants_links):
        known = _catalogue_names(settings)
        unknown = [name for name in settings.image if known is not None and name not in known]
        if unknown:
            raise pytest.UsageError(
                f"--pinet-image names {unknown}; "
                f"the lab's catalogue has {known or 'no images (pinet.images)'}"
            )
        images = list(settings.image)
        metafunc.parametrize("pinet_board_image", images, ids=[f"image-{n}" for n in images], scope="session")
    if settings.repeat > 1 and (boards or wants_links):
        reps = list(range(1, settings.repeat + 1))
        metafunc.parametrize("pinet_repetition", reps, ids=[f"rep-{n}" for n in reps])


def _catalogue_names(settings: PinetSettings) -> list[str] | None:
    """The image names of the lab's catalogue, known at collection (None: a place's own)."""
    from .lab.inventory import load_inventory

    if settings.virtual:
        from .virtlab.qemu_image import RECIPES

        if settings.board != "qemu":
            return []
        env_file = settings.lab_spec().env_file  # a lab that is up: its catalogue, perhaps extended
        return (
            [i.name for i in load_inventory(env_file).catalogue.images]
            if env_file.exists()
            else [r.name for r in RECIPES]
        )
    files = [path for path in settings.lab_files if path.is_file()]
    return [i.name for i in load_inventory(files[0]).catalogue.images] if files else None


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Every process gives its place back; the controller (or a plain run) also writes the
    run-level report files and tears down the labs the run built."""
    run = session.config.stash.get(PINET_RUN, None)
    if run is None:
        return
    from .record.planned import measured_nothing

    coverage = session.config.pluginmanager.get_plugin("pinet-coverage")
    if (
        isinstance(coverage, _Coverage)
        and measured_nothing(coverage.planned, run.results.load())
        and not run.settings.allow_skips
        and session.exitstatus in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED)
    ):
        session.exitstatus = pytest.ExitCode.TESTS_FAILED  # never green on nothing
    if not run.is_worker:
        alluredir = getattr(session.config.option, "allure_report_dir", None)
        if alluredir:
            coverage = session.config.pluginmanager.get_plugin("pinet-coverage")
            planned = coverage.planned if isinstance(coverage, _Coverage) else {}
            write_allure_run_files(Path(alluredir), run, planned)
    try:
        run.release_lab()
    except PinetError as exc:  # never hide the test results behind a teardown error
        run.lab_error = str(exc)


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


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    """Print every measurement of the run: direction, goodput, expectation, limit."""
    run = config.stash.get(PINET_RUN, None)
    if run is None or run.is_worker:
        return
    coverage = config.pluginmanager.get_plugin("pinet-coverage")
    planned = coverage.planned if isinstance(coverage, _Coverage) else {}
    write_summary(terminalreporter, config, run, planned)
