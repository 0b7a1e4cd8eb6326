"""The test command's two workers: ``pytest`` with no paths (the ini's testpaths, what CI
and the README run) spreads its tests over two pytest-xdist workers, ``--dist loadgroup``:
the QEMU board's group starts on one, the other groups go to whichever worker is free, and
each worker runs one test at a time.

Why: most of its minutes are waits, not work: a lab's sshd, a night's timeouts, a power
switch's retries (tests/slowest_tests.py prints each test's CPU seconds beside its time: the
virtual rack's tests use a tenth of theirs).  One process waited through all of them in
turn.  A third worker was tried: two workers' tests beside the QEMU board's measured a
namespace link above its wire (966 Mbit/s on a 941 Mbit/s cable) and timed the runs apart.
Measurements take turns machine-wide (``pytest_pinet/lab/traffic_turn.py``), so no
figure carries another test's traffic.

What keeps the workers out of each other's way:

- **One emulated board at a time.**  The modules marked ``qemu`` (the QEMU board under TCG
  takes both cores of a 2-core machine) form one group: beside another emulated board, a
  twin's pi5 measured under its floor and a QEMU suite's run timed out.  The group starts
  first: it is the longest.
- **One group per module** otherwise.  A module's tests share its module-scoped lab (one
  name, one set of namespaces); they run on one worker, in order.  The modules whose tests
  build the shared ``fresh_lab`` (``pinet9``) or add the ``lab_users`` (fixed user names)
  form one group; every other module names a lab no other module names
  (tests/unit/test_worker_schedule.py checks that).
- **The suite on one worker**: the test command measures ``pytest_pinet/suite`` on one lab.
- **The workers are not the suite's workers.**  pinet gives each xdist worker of a run a
  virtual place of its own (``pinet1``, ``pinet2``, ...).  These workers run the
  repository's tests, which build and name their own labs and start runs of their own
  (``tests/integration/test_places.py`` starts ``pytest -n 2`` and checks exactly those
  places); so the workers drop ``PYTEST_XDIST_WORKER*`` from their environment, and neither
  the suite they run nor the runs they start take a per-worker place.
- **The order is kept**: the QEMU group, then the slow modules (their marker), then the rest
  (xdist would otherwise start the groups with the most tests first).

``-n``/``--dist`` given, ``-p no:xdist``, a path given, ``--collect-only`` or ``--pdb``:
the run is left as asked.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pytest_pinet.plugin.xdist_groups import keep_groups

WORKERS = 2
REPOSITORY = Path(__file__).resolve().parents[1]
SUITE = REPOSITORY / "pytest_pinet" / "suite"
INTEGRATION = REPOSITORY / "tests" / "integration"
# Fixtures whose tests share one machine-wide name (a lab, local users): one group for them all.
SHARED_NAME_FIXTURES = ("fresh_lab", "lab_users")
SHARED_NAME_GROUP = "shared-lab-pinet9-and-users"
SUITE_GROUP = "suite"
QEMU_GROUP = "qemu-board"
_SPREAD = pytest.StashKey[bool]()
WORKERINPUT_KEY = "pinet_repository_workers"


def _test_command(config: pytest.Config) -> bool:
    return config.args_source is pytest.Config.ArgsSource.TESTPATHS


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config: pytest.Config) -> None:
    """Before xdist reads its options: two workers, by group, for the test command."""
    if hasattr(config, "workerinput") or not _test_command(config):
        return
    if not config.pluginmanager.hasplugin("xdist"):
        return
    option = config.option
    if option.numprocesses is not None or option.dist != "no" or option.collectonly or option.usepdb:
        return
    option.numprocesses, option.dist = WORKERS, "loadgroup"
    option.loadscopereorder = False  # the order below, not the groups' test counts
    config.stash[_SPREAD] = True


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: object) -> None:
    """Tell each worker it is one of the test command's (xdist's hook, on the controller)."""
    config: pytest.Config = node.config  # type: ignore[attr-defined]
    if config.stash.get(_SPREAD, False):
        node.workerinput[WORKERINPUT_KEY] = True  # type: ignore[attr-defined]


def pytest_configure(config: pytest.Config) -> None:
    workerinput = getattr(config, "workerinput", None)
    if workerinput is not None and workerinput.get(WORKERINPUT_KEY):
        # A worker parses the controller's arguments (none) again, so it would not know the
        # groups are to be kept together: without this, a module's tests were spread.
        config.option.loadgroup = True
        for name in ("PYTEST_XDIST_WORKER", "PYTEST_XDIST_WORKER_COUNT", "PYTEST_XDIST_TESTRUNUID"):
            os.environ.pop(name, None)
    if config.stash.get(_SPREAD, False) or (workerinput or {}).get(WORKERINPUT_KEY):
        config.pluginmanager.register(Schedule(), "pinet-repository-worker-schedule")
        config.pluginmanager.register(KeepGroups(), "pinet-repository-worker-groups")


def group_of(item: pytest.Item, shares_names: set[Path], qemu: set[Path]) -> str | None:
    """The xdist group ``item`` runs in (None: a test of neither the suite nor tests/integration)."""
    path = Path(str(item.path))
    if SUITE in path.parents:
        return SUITE_GROUP
    if INTEGRATION not in path.parents:
        return None
    if path in qemu:
        return QEMU_GROUP
    if path in shares_names:
        return SHARED_NAME_GROUP
    return str(path.relative_to(REPOSITORY))


def rank(items: list[pytest.Item]) -> int:
    """Which groups start first: 0 the QEMU board's, 1 the slow ones, 2 the rest."""
    if any(item.get_closest_marker("qemu") for item in items):
        return 0
    if any(item.get_closest_marker("slow") for item in items):
        return 1
    return 2


class Schedule:
    """Groups the test command's tests (before pinet's own board groups) and orders the groups."""

    @pytest.hookimpl(tryfirst=True)
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        shares_names = {
            Path(str(item.path))
            for item in items
            if any(name in getattr(item, "fixturenames", ()) for name in SHARED_NAME_FIXTURES)
        }
        qemu = {Path(str(item.path)) for item in items if item.get_closest_marker("qemu")}
        groups: dict[str, list[pytest.Item]] = {}
        for item in items:
            group = group_of(item, shares_names, qemu)
            if group is None:
                continue
            item.add_marker(pytest.mark.xdist_group(group))
            groups.setdefault(group, []).append(item)
        ranks = {group: rank(members) for group, members in groups.items()}
        first_seen = {group: index for index, group in enumerate(groups)}

        def order(item: pytest.Item) -> tuple[int, int]:
            group = group_of(item, shares_names, qemu)
            if group is None:
                return (3, 0)
            return (ranks[group], first_seen[group])

        items.sort(key=order)  # stable: a group's own tests keep their order

    def pytest_report_header(self) -> list[str]:
        return [
            f"repository tests: {WORKERS} xdist workers, one group per module, the QEMU board's modules in one (tests/worker_schedule.py)"
        ]


class KeepGroups:
    """The groups reach the controller on pytest 9.2 too (``pytest_pinet/plugin/xdist_groups.py``)."""

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, config: pytest.Config, items: list[pytest.Item]) -> None:
        keep_groups(config, items)
