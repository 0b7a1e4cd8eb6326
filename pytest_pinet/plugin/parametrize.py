"""Every board: a test that measures a board runs once per board of the lab (``--pinet-boards``
selects), the adapter matrix once per link, and each again per image (``--pinet-image``) and
repetition (``--pinet-repeat``); the lab's boards are known at collection, without building it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import pytest

from .run_state import pinet_run

if TYPE_CHECKING:
    from ..session.settings import PinetSettings


@dataclass(frozen=True)
class PlannedLab:
    """What a run will measure, known at collection: its boards, each link's board and the
    boards that route."""

    boards: list[str]
    links: list[tuple[str, str]]  # (link, board)
    routers: list[str]


def planned_lab(settings: PinetSettings) -> PlannedLab | None:
    """The lab a run will measure: from the env file, or the virtual lab's plan (known
    without building it); None for a directory of places' env files, whose boards are the
    reserved place's own."""
    if settings.virtual:
        spec = settings.lab_spec()
        boards = [host.name for host in spec.hosts if host.role == "board"]
        links = [(link.name, link.board) for link in spec.links if link.board in boards]
        return PlannedLab(boards, links, [route.board for route in spec.routes])
    from ..lab.inventory import load_inventory

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
    planned = planned_lab(settings)
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
    from ..lab.inventory import load_inventory

    if settings.virtual:
        from ..virtlab.qemu_image import RECIPES

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
