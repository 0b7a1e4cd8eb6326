"""Never green on nothing: a run whose measuring tests took no measurement fails, says what
was not measured and why; a lab that cannot be had is an error, not a skip, unless the user
opts out with --pinet-allow-skips."""

from __future__ import annotations

import socket

from pytest_pinet.exit_codes import Exit
from pytest_pinet.record.planned import PlannedTest, coverage_lines, measured_nothing

pytest_plugins = ["pytester"]

RECORDS = """
import pytest
from pytest_pinet.model import Measurement, TcpDetail, TrafficContext

CONTEXT = TrafficContext(lab="t", scenario="ethernet", board="pi", peer="pc", link="eth", adapter="builtin",
                         direction="board->peer", duplex="half", streams=10, duration_s=20, omit_s=2,
                         link_speed_mbps=1000, mtu=1500)

def test_measures(pinet_record_measurement):
    pinet_record_measurement(Measurement(test_id="x", context=CONTEXT, goodput_mbps=941.0, limit_mbps=941.5,
                                   started=0, finished=1, detail=TcpDetail(None, 0, (), None, None, None)))

def test_board_off(pinet_record_measurement):
    pytest.skip("board pi5 is switched off")
"""


def run(pytester, *args):
    return pytester.runpytest("-p", "no:labgrid", "-p", "no:cacheprovider", "--pinet-results", "r", *args)


def test_a_run_that_measured_nothing_fails_and_says_why(pytester):
    pytester.makepyfile(test_m=RECORDS)
    result = run(pytester, "-k", "board_off")
    assert result.ret == Exit.NOTHING_MEASURED, result.stdout.str()  # its own status: not a regression
    result.stdout.fnmatch_lines(
        [
            "*1 skipped*",
        ]
    )
    text = result.stdout.str()
    assert "pinet: measured 0 of 1 planned tests (0 measurements)" in text
    assert "not measured: test_m.py::test_board_off: skipped: board pi5 is switched off" in text
    assert "pinet: FAILED: nothing was measured" in text


def test_the_opt_out_lets_such_a_run_pass(pytester):
    pytester.makepyfile(test_m=RECORDS)
    result = run(pytester, "-k", "board_off", "--pinet-allow-skips")
    assert result.ret == 0, result.stdout.str()
    assert "nothing was measured (allowed by --pinet-allow-skips)" in result.stdout.str()


def one_measurement_is_enough(pytester, *workers: str) -> None:
    """A run of one measured and one skipped test passes and lists the skipped one (also under
    xdist: tests/integration/test_plugin_processes.py)."""
    pytester.makepyfile(test_m=RECORDS)
    result = run(pytester, *workers)
    assert result.ret == 0, result.stdout.str()
    text = result.stdout.str()
    assert "pinet: measured 1 of 2 planned tests (1 measurement)" in text
    assert "not measured: test_m.py::test_board_off: skipped" in text


def test_one_measurement_is_enough_and_the_rest_are_listed(pytester):
    one_measurement_is_enough(pytester)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


PLACE_ENV = """\
options:
  coordinator_address: 127.0.0.1:{port}
targets:
  pi:
    resources:
      RemotePlace: {{name: bench-1}}
  pc:
    resources:
      RemotePlace: {{name: bench-1}}
pinet:
  lab: bench-1
  ssh: {{known_hosts: known_hosts}}
  hosts:
    pi: {{role: board}}
    pc: {{role: peer}}
  links:
    - {{name: eth, board: pi, board_interface: eth0, board_address: 10.1.0.1,
       peer: pc, peer_interface: eth0, peer_address: 10.1.0.2, speed_mbps: 1000}}
"""


def test_a_lab_that_cannot_be_had_is_an_error_not_a_skip(pytester):
    # a place behind a coordinator that does not answer: nothing listens on the port
    (pytester.path / "lab.yaml").write_text(PLACE_ENV.format(port=_free_port()))
    (pytester.path / "known_hosts").write_text("")
    pytester.makepyfile("def test_uses(pinet_inventory):\n    assert pinet_inventory\n")
    result = run(pytester, "--pinet-lab", "lab.yaml")
    assert result.ret == Exit.LAB_FAULT, result.stdout.str()  # the lab failed, not the board
    result.stdout.fnmatch_lines(["*lab fault (coordinator): lab not available*", "*1 error*"])
    skipped = run(pytester, "--pinet-lab", "lab.yaml", "--pinet-allow-skips")
    assert skipped.ret == 0, skipped.stdout.str()
    skipped.stdout.fnmatch_lines(["*1 skipped*"])


def test_coverage_lines_rank_the_worst_phase():
    test = PlannedTest("t::a")
    test.update("skipped", "no disk")
    test.update("passed", "")
    assert (test.outcome, test.why) == ("skipped", "no disk")
    test.update("failed", "ssh")
    planned = {"t::a": test, "t::b": PlannedTest("t::b", measured=True)}
    rows = [{"test_id": "t::b#board->peer"}]
    assert coverage_lines(planned, rows) == [
        "pinet: measured 1 of 2 planned tests (1 measurement)",
        "  not measured: t::a: lab fault: ssh",
        "pinet: 1 of 2 planned combinations measured on no board:",
        "  on no board: t::a: lab fault: ssh",
    ]
    assert not measured_nothing(planned, rows) and measured_nothing(planned, [])
    assert not measured_nothing({}, [])


def test_a_combination_one_board_cannot_carry_counts_as_measured_when_another_did():
    from pytest_pinet.plugin.end_of_run import coverage_variables

    def planned(nodeid: str, combination: str, measured: bool, why: str = "") -> PlannedTest:
        test = PlannedTest(nodeid, combination=combination, measured=measured)
        if why:
            test.update("skipped", why)
        return test

    tests = [
        planned("r[board-pi-sfq]", "r[qdisc=sfq]", False, "kernel lacks sfq"),
        planned("r[board-qpi-sfq]", "r[qdisc=sfq]", True),
        planned("c[board-pi-clock]", "c[profile=clock-1500]", False, "no cpufreq"),
        planned("c[board-qpi-clock]", "c[profile=clock-1500]", False, "no cpufreq"),
        planned("d[board-pi-vfat]", "d[fs=vfat]", False, "no mkfs.vfat"),
        planned("d[board-qpi-vfat]", "d[fs=vfat]", False, "lab fault"),
    ]
    tests[-1].update("failed", "ssh")
    by_id = {test.nodeid: test for test in tests}
    lines = coverage_lines(by_id, [{}])
    assert "pinet: measured 1 of 6 planned tests (1 measurement)" in lines
    assert lines[-3:] == [
        "pinet: 2 of 3 planned combinations measured on no board:",
        "  on no board: c[profile=clock-1500]: skipped: no cpufreq",
        "  on no board: d[fs=vfat]: skipped: no mkfs.vfat; lab fault: ssh",
    ]
    variables = coverage_variables(by_id)
    assert variables["measured"] == "1 of 6 planned tests"
    assert variables["measured on no board"] == "2 of 3 planned combinations"
    assert variables["on no board 1"] == "c[profile=clock-1500]: skipped: no cpufreq"


def test_a_combination_is_the_test_and_its_parameters_without_board_link_or_repetition():
    from types import SimpleNamespace

    from pytest_pinet.plugin.outcomes import combination_of

    params = {"pinet_board": "qpi", "qdisc": "sfq", "upload": "up-100", "pinet_repetition": 2}
    item = SimpleNamespace(
        callspec=SimpleNamespace(params=params), originalname="test_download_while_uploading"
    )
    assert combination_of(item) == "test_download_while_uploading[qdisc=sfq, upload=up-100]"  # type: ignore[arg-type]
    on_link = SimpleNamespace(
        callspec=SimpleNamespace(params={"pinet_link": "qusb"}), originalname="test_adapter"
    )
    assert combination_of(on_link) == "test_adapter"  # type: ignore[arg-type]
