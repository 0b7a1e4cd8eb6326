"""A reflashed board is asked afresh what a cache kept about its last image.

Two per-host caches outlive a connection: the iperf3 version (it picks a server's flags,
which differ across 3.11) and the path of the UDP generator built on the card.  A reflash
may bring another iperf3 and wipes the generator, so forgetting a board's facts forgets both.
"""

from __future__ import annotations

from pytest_pinet.host.remote import CommandResult


def test_a_reflashed_host_is_asked_its_iperf3_version_again():
    """The version picks a server's flags; an image with another iperf3 must not inherit the
    last image's answer through the cache."""
    from pytest_pinet.lab.inventory import Inventory
    from pytest_pinet.measure import FactsCache
    from pytest_pinet.traffic.iperf3_server import iperf3_version

    class Board:
        name = "pi"
        answers = ("iperf 3.9 (cJSON 1.7.13)", "iperf 3.12 (cJSON 1.7.15)")
        asked = 0

        def run(self, argv, timeout=None):
            self.asked += 1
            return CommandResult("iperf3 --version", 0, self.answers[self.asked - 1], "")

    board = Board()
    assert iperf3_version(board) == (3, 9)  # type: ignore[arg-type]
    assert iperf3_version(board) == (3, 9) and board.asked == 1  # type: ignore[arg-type]
    facts = FactsCache(Inventory.__new__(Inventory), {"pi": board})  # type: ignore[dict-item]
    facts.forget("pi")
    assert iperf3_version(board) == (3, 12) and board.asked == 2  # type: ignore[arg-type]


def test_a_reflashed_board_is_looked_at_again_for_its_udp_generator():
    """The generator lives on the card: a reflash wipes it, and a cached path would run a
    binary that is no longer there."""
    from pytest_pinet.lab.inventory import Inventory
    from pytest_pinet.measure import FactsCache
    from pytest_pinet.traffic.udpgen import ensure_udpgen

    class Board:
        name = "pi"

        def __init__(self) -> None:
            self.commands: list[list[str]] = []

        def run(self, argv, timeout=None):
            self.commands.append(argv)
            return CommandResult(" ".join(argv), 0, "", "")  # `test -x`: the binary is there

    board = Board()
    path = ensure_udpgen(board)  # type: ignore[arg-type]
    assert ensure_udpgen(board) == path and len(board.commands) == 1  # type: ignore[arg-type]
    FactsCache(Inventory.__new__(Inventory), {"pi": board}).forget("pi")  # type: ignore[dict-item]
    assert ensure_udpgen(board) == path and len(board.commands) == 2  # type: ignore[arg-type]
    assert board.commands[1][:2] == ["test", "-x"]
