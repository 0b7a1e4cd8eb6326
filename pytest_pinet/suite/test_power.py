"""The board comes back from a power cycle and is provisioned (labgrid power, pinned SSH)."""

from __future__ import annotations

import pytest


@pytest.mark.ethernet
def test_board_boots_after_power_cycle(powered_board, board_strategy, host_facts):
    assert board_strategy.status.name == "provisioned"
    # Bounded: the strategy's own timeout; recorded for the report.
    assert board_strategy.boot_seconds is not None
    assert board_strategy.boot_seconds < board_strategy.boot_timeout
    facts = host_facts[powered_board.name]
    assert facts.kernel and facts.iperf3_version
