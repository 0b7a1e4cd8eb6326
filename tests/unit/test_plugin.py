"""The pytest plugin through pytester: options, markers, header, settings errors."""

from __future__ import annotations

import pytest

pytest_plugins = ["pytester"]


def run(pytester, *args):
    # labgrid's own plugin keeps process-global state that refuses a second in-process run.
    return pytester.runpytest("-p", "no:labgrid", *args)


def test_markers_are_registered(pytester):
    result = run(pytester, "--markers")
    for marker in ("ethernet", "half_duplex", "full_duplex", "routing", "usb_adapter", "udp", "storage"):
        result.stdout.fnmatch_lines([f"@pytest.mark.{marker}:*"])


def test_header_names_lab_thresholds_and_results(pytester):
    pytester.makepyfile("def test_nothing():\n    assert 1 + 1 == 2\n")
    result = run(pytester, "--pinet-results", "out", "--pinet-duration", "3")
    result.stdout.fnmatch_lines(
        [
            "pinet: lab virtual*",
            "pinet: thresholds *thresholds.yaml (missing!)",
            "pinet: results *out*; iperf3 -P 10 -t 3 -O 2",
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
    ],
)
def test_bad_options_are_usage_errors_naming_the_option(pytester, args, message):
    pytester.makepyfile("def test_nothing():\n    pass\n")
    result = run(pytester, *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*{message}*"])
    assert "Traceback" not in result.stderr.str()


def test_environment_variable_and_ini_layers(pytester, monkeypatch):
    pytester.makeini("[pytest]\npinet_streams = 4\npinet_duration = 7\n")
    pytester.makepyfile("def test_nothing():\n    pass\n")
    monkeypatch.setenv("PINET_DURATION", "5")
    result = run(pytester)
    result.stdout.fnmatch_lines(["pinet: results *; iperf3 -P 4 -t 5 -O 2"])
    monkeypatch.setenv("PINET_STREAMS", "x")
    result = run(pytester)
    result.stderr.fnmatch_lines(["*PINET_STREAMS: expected a whole number, got 'x'*"])


def test_bad_lab_env_file_is_a_clear_error(pytester):
    env = pytester.makefile(".yaml", env="targets: [\n")
    pytester.makepyfile("def test_needs_lab(pinet_inventory):\n    pass\n")
    result = run(pytester, "--pinet-lab", str(env))
    result.stderr.fnmatch_lines([f"*{env}: malformed YAML at line*"])
    assert result.ret == pytest.ExitCode.USAGE_ERROR
