"""What the plugin does with collected tests: engage pinet when they use its fixtures, measure
one board after another (and one image after another), give each board's tests one xdist
group, lift labgrid's feature skips the inventory answers, and name what a test measures
whichever board measures it."""

from __future__ import annotations

import pytest

from ..errors import PinetError
from .end_of_run import header_lines
from .engagement import engage, engaged, uses_pinet
from .parametrize import planned_lab
from .run_state import PINET_RUN


def one_board_after_another(
    items: list[pytest.Item], boards: list[str], links: list[tuple[str, str]]
) -> None:
    """Every test of one board before the first of the next (the adapter matrix's links too):
    a board is booted when its first test needs it, so the QEMU board's emulation (two busy
    cores of this machine) never runs while the namespace board measures."""
    if len(boards) < 2:
        return
    board_of_link = dict(links)

    def board_rank(item: pytest.Item) -> int:
        params = getattr(getattr(item, "callspec", None), "params", {})
        board = params.get("pinet_board") or board_of_link.get(params.get("pinet_link", ""))
        return boards.index(board) if board in boards else -1

    items.sort(key=board_rank)


UNSUPPORTED_FEATURES = "unsupported feature(s): "  # how labgrid's plugin words its skip


class DerivedFeatures:
    """labgrid skips a test whose ``lg_feature`` no target of its env declares.  For pinet's
    own tests on a pinet lab the inventory says what the lab has (a USB adapter on a link:
    ``usb-ethernet``; a disk: ``usb-disk``), so such a skip is lifted for the features the
    inventory implies; any other test keeps labgrid's verdict, and a feature the lab lacks
    still skips, counted as not measured with labgrid's reason."""

    @pytest.hookimpl(trylast=True)  # after labgrid's own hook has marked its skips
    def pytest_collection_modifyitems(self, config: pytest.Config, items: list[pytest.Item]) -> None:
        skipped = [item for item in items if _feature_skip(item) is not None and uses_pinet([item])]
        if not skipped:
            return
        from labgrid.pytestplugin.hooks import LABGRID_ENV_KEY

        from ..lab.features import derived_features
        from ..lab.inventory import load_inventory

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


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """A run whose tests use pinet's fixtures engages pinet: settings checked, header shown.

    Each test of a board joins that board's ``xdist_group``: with ``-n N --dist loadgroup``
    one worker measures one board (its hosts are held per test either way, see
    ``PlaceKeeper.hold``)."""
    # xdist registers its marker; without xdist (-p no:xdist) --strict-markers would refuse it.
    for item in items if config.pluginmanager.hasplugin("xdist") else ():
        params = getattr(getattr(item, "callspec", None), "params", {})
        group = params.get("pinet_board") or params.get("pinet_link")
        if group is not None and item.get_closest_marker("xdist_group") is None:
            item.add_marker(pytest.mark.xdist_group(f"pinet-{group}"))
    engaged_run = config.stash.get(PINET_RUN, None)
    if engaged_run is not None:
        planned = planned_lab(engaged_run.settings)
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
    if not engaged(config) and uses_pinet(items):
        engage(config)
        run = config.stash[PINET_RUN]
        reporter = config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None and not run.is_worker:
            for line in header_lines(run):
                reporter.write_line(line)
