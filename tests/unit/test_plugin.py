"""The pytest plugin through pytester: options, markers, header, settings errors."""

from __future__ import annotations

import pytest

from pytest_pinet.exit_codes import Exit

pytest_plugins = ["pytester"]


def run(pytester, *args):
    # labgrid's own plugin keeps process-global state that refuses a second in-process run.
    return pytester.runpytest("-p", "no:labgrid", *args)


SUITE_MARKERS = (
    "ethernet",
    "half_duplex",
    "full_duplex",
    "routing",
    "usb_adapter",
    "udp",
    "storage",
    "qemu_board",
)


def test_markers_are_registered_where_pinet_is_active(pytester):
    result = run(pytester, "--markers", "--pinet-duration", "3")
    for marker in SUITE_MARKERS:
        result.stdout.fnmatch_lines([f"@pytest.mark.{marker}:*"])


def test_the_shipped_suite_registers_its_markers_itself(pytester):
    # pytest --pyargs pytest_pinet.suite -m routing, with --strict-markers and no pinet option
    result = run(
        pytester,
        "--strict-markers",
        "--collect-only",
        "-q",
        "-m",
        "routing",
        "--pyargs",
        "pytest_pinet.suite",
    )
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines(["*test_routing.py::test_download_through_the_board*"])
    assert "test_ethernet.py" not in result.stdout.str()


def test_header_names_lab_thresholds_and_results(pytester):
    pytester.makepyfile("def test_nothing():\n    assert 1 + 1 == 2\n")
    result = run(pytester, "--pinet-results", "out", "--pinet-duration", "3")
    result.stdout.fnmatch_lines(
        [
            "pinet: lab virtual*",
            "pinet: thresholds */pytest_pinet/data/thresholds.yaml: the shipped rules",
            "pinet: results *out*; iperf3 -P 10 -t 3 -O 1",
        ]
    )
    assert result.ret == 0


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--pinet-duration", "ten"], "--pinet-duration: expected a whole number, got 'ten'"),
        (["--pinet-streams", "0"], "--pinet-streams: must be at least 1"),
        (["--pinet-omit", "-1"], "--pinet-omit: must not be negative"),
        (
            ["--pinet-lab", "/nonexistent/env.yaml"],
            "--pinet-lab: lab env file '/nonexistent/env.yaml' does not exist",
        ),
        (["--pinet-adaptive", "maybe"], "--pinet-adaptive: expected on or off, got 'maybe'"),
        (["--pinet-adaptive-min", "1"], "--pinet-adaptive-min: an adaptive run needs at least 2"),
        (["--pinet-adaptive-precision", "0"], "--pinet-adaptive-precision: must be more than 0"),
    ],
)
def test_bad_options_are_usage_errors_naming_the_option(pytester, args, message):
    pytester.makepyfile("def test_nothing():\n    pass\n")
    result = run(pytester, *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*{message}*"])
    assert "Traceback" not in result.stderr.str()


def test_header_tells_whether_runs_adapt(pytester, monkeypatch):
    pytester.makepyfile("def test_nothing():\n    pass\n")
    result = run(pytester, "--pinet-duration", "65", "--pinet-omit", "5")
    # the virtual lab's minimum (3 s); a lab's hardware keeps 5
    result.stdout.fnmatch_lines(["*-t 65 -O 5 (adaptive: stops once settled within 0.5 %, after 3 s)"])
    monkeypatch.setenv("PINET_ADAPTIVE", "off")
    result = run(pytester, "--pinet-duration", "65")
    result.stdout.no_fnmatch_line("*adaptive*")


def test_environment_variable_and_ini_layers(pytester, monkeypatch):
    pytester.makeini("[pytest]\npinet_streams = 4\npinet_duration = 7\n")
    pytester.makepyfile("def test_nothing():\n    pass\n")
    monkeypatch.setenv("PINET_DURATION", "5")
    result = run(pytester)
    result.stdout.fnmatch_lines(["pinet: results *; iperf3 -P 4 -t 5 -O 1 (adaptive*"])
    monkeypatch.setenv("PINET_STREAMS", "x")
    result = run(pytester)
    result.stderr.fnmatch_lines(["*PINET_STREAMS: expected a whole number, got 'x'*"])


def test_bad_lab_env_file_is_a_clear_error(pytester):
    env = pytester.makefile(".yaml", env="targets: [\n")
    pytester.makepyfile("def test_needs_lab(pinet_inventory):\n    pass\n")
    result = run(pytester, "--pinet-lab", str(env))
    result.stderr.fnmatch_lines([f"*{env}: malformed YAML at line*"])
    assert result.ret == pytest.ExitCode.USAGE_ERROR


JUDGE_TEST = """
from pytest_pinet.model import Measurement, TcpDetail, TrafficContext

CONTEXT = TrafficContext(lab="t", scenario="ethernet", board="pi", peer="pc", link="eth", adapter="builtin",
                         direction="board->peer", duplex="half", streams=10, duration_s=20, omit_s=2,
                         link_speed_mbps=1000, mtu=1500)

def fake(goodput):
    return Measurement(test_id="t", context=CONTEXT, goodput_mbps=goodput, limit_mbps=941.5, started=0,
                       finished=1, detail=TcpDetail(None, 7, (), None, None, None))

def test_low_then_good(pinet_judge_goodput):
    results = iter([900.0, 941.0])
    (kept,) = pinet_judge_goodput(lambda: [fake(next(results))])
    assert kept.goodput_mbps == 941.0
"""
THRESHOLDS = "rules:\n  - {id: gbe, match: {scenario: ethernet}, min_mbps: 940}\n"


def test_remeasure_once_then_pass_and_record(pytester):
    pytester.makefile(".yaml", thresholds=THRESHOLDS)
    pytester.makepyfile(test_judge=JUDGE_TEST)
    result = run(
        pytester, "--pinet-thresholds", "thresholds.yaml", "--pinet-remeasure", "1", "--pinet-results", "r"
    )
    assert result.ret == 0
    facts = list((pytester.path / "r").glob("*/facts.jsonl"))
    assert len(facts) == 1 and "remeasured" in facts[0].read_text()


def test_without_remeasure_the_low_result_fails_with_all_figures(pytester):
    pytester.makefile(".yaml", thresholds=THRESHOLDS)
    pytester.makepyfile(test_judge=JUDGE_TEST)
    result = run(pytester, "--pinet-thresholds", "thresholds.yaml", "--pinet-remeasure", "0")
    assert result.ret == Exit.BELOW_THRESHOLD
    result.stdout.fnmatch_lines(
        ["*board->peer goodput measured 900.0 Mbit/s below expected >= 940.0 Mbit/s*941.5*retransmits 7*"]
    )
