"""A reflashed board is asked afresh what a cache kept about its last image.

Three things known of a host outlive a connection: the iperf3 version (it picks a server's
flags, which differ across 3.11), the path of the UDP generator built on the card, and the
operating system ``uname -s`` named.  A reflash may bring another iperf3 or another system
and wipes the generator, so forgetting a board's facts forgets all three (an OS the
inventory names stands).
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

        def forget_os(self) -> None:
            pass

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
        udpgen = None  # no lab-built generator: pinet builds it on the board

        def __init__(self) -> None:
            self.commands: list[list[str]] = []

        def forget_os(self) -> None:
            pass

        def run(self, argv, timeout=None):
            self.commands.append(argv)
            return CommandResult(" ".join(argv), 0, "", "")  # `test -x`: the binary is there

    board = Board()
    path = ensure_udpgen(board)  # type: ignore[arg-type]
    assert ensure_udpgen(board) == path and len(board.commands) == 1  # type: ignore[arg-type]
    FactsCache(Inventory.__new__(Inventory), {"pi": board}).forget("pi")  # type: ignore[dict-item]
    assert ensure_udpgen(board) == path and len(board.commands) == 2  # type: ignore[arg-type]
    assert board.commands[1][:2] == ["test", "-x"]


def test_a_reflashed_host_is_asked_its_operating_system_again_unless_the_inventory_names_it():
    """A catalogue may hold Raspberry Pi OS and FreeBSD images for one board: the commands a
    host gets follow what it runs now, which ``uname -s`` said before the reflash."""
    from pathlib import Path

    from pytest_pinet.host.platform import LINUX, platform_of_uname
    from pytest_pinet.host.remote import RemoteHost, SshEndpoint
    from pytest_pinet.lab.inventory import Inventory
    from pytest_pinet.measure import FactsCache

    endpoint = SshEndpoint("pi", "10.203.9.2", "root", 22, None, Path("/nonexistent/known_hosts"))
    learned = RemoteHost(endpoint)
    learned._platform = platform_of_uname("pi", "FreeBSD\n")  # what the last image's uname said
    FactsCache(Inventory.__new__(Inventory), {"pi": learned}).forget("pi")
    assert vars(learned)["_platform"] is None  # asked again on next use
    named = RemoteHost(endpoint, platform=LINUX)
    named.forget_os()
    assert named._platform is LINUX  # the inventory's os: stands
