"""Observers: snapshots parsed, CPU shares and interrupt deltas computed from real formats."""

from __future__ import annotations

import pytest

from pytest_pinet.traffic.observers import cpu_use, observe, parse_snapshot, snapshot_script

BEFORE = """@@obs:interrupts
           CPU0       CPU1
 38:        780     313196     GICv2 189 Level     eth0
 39:         11          0     GICv2 190 Level     eth0
@@obs:stat
cpu  100 0 100 800 0 0 0 0 0 0
cpu0 50 0 50 400 0 0 0 0 0 0
cpu1 50 0 50 400 0 0 0 0 0 0
@@obs:nic
rx_bytes 1000
tx_bytes 2000
rx_dropped 0
@@obs:temp
51234
"""
AFTER = """@@obs:interrupts
           CPU0       CPU1
 38:        780     323196     GICv2 189 Level     eth0
 39:         11        500     GICv2 190 Level     eth0
@@obs:stat
cpu  150 0 200 850 0 0 100 0 0 0
cpu0 50 0 50 500 0 0 0 0 0 0
cpu1 100 0 150 450 0 0 100 0 0 0
@@obs:nic
rx_bytes 1501000
tx_bytes 2500
rx_dropped 3
@@obs:temp
60000
"""


def test_observation_deltas():
    observation = observe("pi", "eth0", parse_snapshot(BEFORE), parse_snapshot(AFTER))
    assert observation.interrupts_per_cpu == {"38": (0, 10000), "39": (0, 500)}
    assert observation.nic == {"rx_bytes": 1500000, "tx_bytes": 500, "rx_dropped": 3}
    assert observation.temperature_c == (51.234, 60.0)
    cores = {c.cpu: c for c in observation.cpu}
    assert cores["cpu0"].busy == pytest.approx(0.0)
    assert cores["cpu1"].busy == pytest.approx(100 * 250 / 300)
    assert cores["cpu1"].softirq == pytest.approx(100 * 100 / 300)
    assert observation.busiest_core is not None and observation.busiest_core.cpu == "cpu1"


def test_cpu_use_ignores_foreign_lines():
    assert cpu_use("intr 5\ncpu0 1 1 1 1", "intr 9\ncpu0 2 2 2 2") != ()
    assert cpu_use("", "cpu0 1 1 1 1") == ()


def test_snapshot_script_refuses_hostile_interface_names():
    assert "/sys/class/net/eth0/statistics" in snapshot_script("eth0")
    with pytest.raises(ValueError, match="not an interface name"):
        snapshot_script("eth0$(reboot)")


def test_the_time_a_hypervisor_took_is_kept_apart_and_shown_on_the_load_line():
    """/proc/stat's eighth column: a virtual machine's host wanted the core and got it later.
    It counts as busy (the host could not idle) and is kept as its own share; the summary's
    load line names it once it is worth a word."""
    from pytest_pinet.record.run_summary import STEAL_SHOWN

    before = "cpu  100 0 100 700 0 0 0 100 0 0\ncpu0 100 0 100 700 0 0 0 100 0 0\n"
    after = "cpu  200 0 200 1000 0 0 0 400 0 0\ncpu0 200 0 200 1000 0 0 0 400 0 0\n"
    (whole, core) = cpu_use(before, after)
    assert whole.steal == pytest.approx(100 * 300 / 800) and core.steal == whole.steal
    assert whole.busy == pytest.approx(100 * 500 / 800)  # user + system + steal of 800 ticks
    assert cpu_use("cpu0 1 1 1 1", "cpu0 2 2 2 2")[0].steal == 0.0  # a platform without the column
    assert whole.steal > STEAL_SHOWN


def test_the_load_line_names_the_steal_of_a_machine_that_lost_time():
    from pytest_pinet.record.run_summary import measurement_lines

    def row(steal: float) -> dict[str, object]:
        cores = [
            {"cpu": "cpu", "busy": 60.0, "softirq": 3.0, "steal": steal},
            {"cpu": "cpu0", "busy": 84.0, "softirq": 3.0, "steal": steal},
        ]
        return {
            "test_id": f"t.py::test_goodput[{steal}]", "context": {"board": "pi4"}, "goodput_mbps": 893.0,
            "limit_mbps": 941.5, "observations": [{"host": "pi4", "interface": "eth0", "cpu": cores, "nic": {}}],
        }  # fmt: skip

    lines = measurement_lines([row(28.4), row(0.4)])
    (starved,) = [line for line in lines if "test_goodput[28.4]" in line and "pi4:eth0" in line]
    assert "cpu0  84% (softirq  3%) steal 28% rx" in starved, starved
    (calm,) = [line for line in lines if "test_goodput[0.4]" in line and "pi4:eth0" in line]
    assert "steal" not in calm, calm
