"""PinetBoardStrategy on the virtual lab: a real power cycle through labgrid, bounded waits.

(The fixture is not called `strategy`: labgrid's plugin treats that name as its own.)
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from labgrid import Environment

from pytest_pinet.errors import LabFault
from pytest_pinet.host.remote import RemoteHost, SshEndpoint
from pytest_pinet.lab.inventory import load_inventory
from pytest_pinet.lab.strategy import BoardState, PinetBoardStrategy
from pytest_pinet.virtlab import virtual_lab


def _sleeping(spec) -> bool:
    """True when a `sleep` runs inside the board's namespace."""
    return any("sleep" in _cmdline(p) for p in virtual_lab.netns_pids(spec.netns("pi")))


def _cmdline(pid: int) -> str:
    """A process's command line, empty when it ended between listing and reading."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
    except OSError:
        return ""


@pytest.fixture
def board_power(fresh_lab):
    virtual_lab.up(fresh_lab)
    inventory = load_inventory(fresh_lab.env_file)
    target = Environment(config_file=str(fresh_lab.env_file)).get_target("pi")
    made = PinetBoardStrategy(target, "pinet-strategy")
    made.remote = RemoteHost(inventory.hosts["pi"].endpoint, connect_timeout=2)
    yield made, inventory
    made.remote.close()
    target.deactivate_all_drivers()


def test_provisioning_really_power_cycles(board_power, fresh_lab):
    made, _ = board_power
    # A process started on the board before the cycle must be gone after it.
    made.remote.run_shell("nohup sleep 600 >/dev/null 2>&1 &")
    assert _sleeping(fresh_lab)
    made.transition("provisioned")
    assert made.status == BoardState.provisioned
    assert made.boot_seconds is not None and 0 < made.boot_seconds < 30
    assert not _sleeping(fresh_lab)
    assert made.remote.check(["echo", "up"]).strip() == "up"
    made.transition("off")
    assert virtual_lab.netns_pids(fresh_lab.netns("pi")) == []


def test_board_that_never_answers_is_a_bounded_boot_timeout(board_power):
    made, inventory = board_power
    good = inventory.hosts["pi"].endpoint
    made.remote = RemoteHost(
        SshEndpoint("pi", "10.203.9.99", "root", 22, good.identity, good.known_hosts), connect_timeout=1
    )
    made.boot_timeout = 3.0
    with pytest.raises(LabFault) as info:
        made.transition("reachable")
    assert info.value.category == "boot-timeout"
    assert "no console on this target" in str(info.value)
    # One more power cycle first, as a lab engineer would, and the fault says so.
    assert made.boot_cycles == 2 and "in each of 2 power cycles" in str(info.value)
    # Each stalled cycle is kept with its reason and console, for the run's boot facts.
    assert [c.split(":")[0] for c in made.stalled_cycles] == ["cycle 1", "cycle 2"]
    assert all("console tail" in c for c in made.stalled_cycles)


def test_cli_power_cycle_goes_through_labgrid(board_power, fresh_lab):
    cycle = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest_pinet.cli",
            "lab",
            "power",
            "--lab",
            "pinet9",
            "--state-root",
            str(fresh_lab.state_root),
            "pi",
            "cycle",
            "--wait",
            "30",
        ],
        capture_output=True,
        text=True,
        timeout=90,
    )
    assert cycle.returncode == 0, cycle.stderr
    assert "reachable over SSH after" in cycle.stdout
