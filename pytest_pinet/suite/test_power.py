"""The board comes back from a power cycle and is provisioned (labgrid power, pinned SSH)."""

from __future__ import annotations

import pytest

# --pinet-image: the board runs each image in turn (the measuring fixtures ask for it themselves)
pytestmark = [pytest.mark.usefixtures("pinet_flash_image")]


@pytest.mark.ethernet
def test_board_boots_after_power_cycle(pinet_powered_board, pinet_board_strategy, pinet_host_facts):
    assert pinet_board_strategy.status.name == "provisioned"
    # Bounded: the strategy's own timeout; recorded for the report.
    assert pinet_board_strategy.boot_seconds is not None
    assert pinet_board_strategy.boot_seconds < pinet_board_strategy.boot_timeout
    facts = pinet_host_facts[pinet_powered_board.name]
    assert facts.kernel and facts.iperf3_version
