"""What the plugin does with collected tests that use pinet: the order boards are measured
in, and the name of what a test measures whichever board measures it."""

from __future__ import annotations

import pytest

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
