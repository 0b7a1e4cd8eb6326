"""The pytest layer stays quiet where pinet is not used, and its hooks let a conftest change
pinet's policy: the verdict, the place, where results also go."""

from __future__ import annotations

import pytest

from pytest_pinet.exit_codes import Exit
from tests.fixture_paths import LAB

pytest_plugins = ["pytester"]


def run(pytester, *args):
    # labgrid's own plugin keeps process-global state that refuses a second in-process run.
    return pytester.runpytest("-p", "no:labgrid", *args)


def test_an_unrelated_run_sees_nothing_of_pinet(pytester, monkeypatch):
    monkeypatch.setenv("PINET_DURATION", "ten")  # malformed, but nothing here uses pinet
    pytester.makepyfile("def test_plain(tmp_path):\n    assert tmp_path.exists()\n")
    result = run(pytester)
    assert result.ret == 0
    assert not [line for line in result.outlines if line.startswith("pinet")]
    assert not (pytester.path / "results").exists()


def test_a_run_that_uses_pinet_fails_on_a_malformed_variable(pytester, monkeypatch):
    monkeypatch.setenv("PINET_DURATION", "ten")
    pytester.makepyfile("def test_uses(pinet_settings):\n    assert pinet_settings.duration > 0\n")
    result = run(pytester)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*PINET_DURATION: expected a whole number, got 'ten'*"])


def test_a_run_that_uses_pinet_shows_its_header(pytester):
    pytester.makepyfile("def test_uses(pinet_settings):\n    assert pinet_settings.streams == 10\n")
    result = run(pytester, "-p", "no:cacheprovider")
    assert result.ret == 0
    result.stdout.fnmatch_lines(["pinet: lab virtual*", "pinet: thresholds *thresholds.yaml: *"])


def test_a_missing_thresholds_file_is_named_in_the_header(pytester):
    pytester.makepyfile("def test_nothing():\n    assert True\n")
    result = run(pytester, "--pinet-thresholds", "nope.yaml")
    result.stdout.fnmatch_lines(["pinet: thresholds *nope.yaml (missing!)"])


MEASURE = """
from pytest_pinet.model import Measurement, TcpDetail, TrafficContext

CONTEXT = TrafficContext(lab="t", scenario="ethernet", board="pi", peer="pc", link="eth", adapter="builtin",
                         direction="board->peer", duplex="half", streams=10, duration_s=20, omit_s=2,
                         link_speed_mbps=1000, mtu=1500)

def test_low(pinet_record_measurement, pinet_judge_goodput):
    m = Measurement(test_id="t", context=CONTEXT, goodput_mbps=900.0, limit_mbps=941.5, started=0,
                    finished=1, detail=TcpDetail(None, 0, (), None, None, None))
    pinet_judge_goodput(pinet_record_measurement(m))
"""
THRESHOLDS = "rules:\n  - {id: gbe, match: {scenario: ethernet}, min_mbps: 940}\n"


def test_a_conftest_replaces_the_verdict_and_sees_every_recorded_measurement(pytester):
    pytester.makefile(".yaml", thresholds=THRESHOLDS)
    pytester.makepyfile(test_judge=MEASURE)
    pytester.makeconftest(
        """
from pytest_pinet.judge.verdict import Verdict, VerdictKind

SEEN = []

def pytest_pinet_judge_measurement(measurement, thresholds, history, policy):
    # this lab accepts 900 Mbit/s: its own policy, not pinet's 940 floor
    return Verdict(measurement.id, (VerdictKind.PASS,), f"lab policy: {measurement.goodput_mbps} >= 900")

def pytest_pinet_measurement_recorded(measurement, raw_dir):
    SEEN.append((measurement.goodput_mbps, raw_dir.is_dir()))

def pytest_sessionfinish(session):
    print(f"recorded: {SEEN}")
"""
    )
    db = f"sqlite:///{pytester.path}/r/pinet.sqlite"
    result = run(
        pytester, "-s", "--pinet-thresholds", "thresholds.yaml", "--pinet-results", "r", "--pinet-db", db
    )
    assert result.ret == 0
    result.stdout.fnmatch_lines(["*recorded: [[](900.0, True)[]]*"])
    import sqlite3

    (store,) = (pytester.path / "r").glob("pinet.sqlite")
    verdicts = sqlite3.connect(store).execute("SELECT verdict, verdict_reason FROM measurements").fetchall()
    assert verdicts == [("pass", "lab policy: 900.0 >= 900")]


def test_without_the_hook_the_default_verdict_fails_it(pytester):
    pytester.makefile(".yaml", thresholds=THRESHOLDS)
    pytester.makepyfile(test_judge=MEASURE)
    result = run(pytester, "--pinet-thresholds", "thresholds.yaml", "--pinet-results", "r")
    assert result.ret == Exit.BELOW_THRESHOLD  # the boards' owner's, not a broken test's 1
    result.stdout.fnmatch_lines(["*below threshold: board->peer goodput measured 900.0*"])


def test_a_conftest_chooses_the_place(pytester):
    for name in ("known_hosts.example", "id_ed25519.example"):
        (pytester.path / name).write_bytes((LAB / name).read_bytes())
    env = (LAB / "rpi-lab.yaml").read_text()
    (pytester.path / "first.yaml").write_text(env)
    (pytester.path / "second.yaml").write_text(env)
    pytester.makeconftest(
        """
def pytest_pinet_choose_place(candidates, preferred):
    # this lab wants its second bench first, whatever the worker
    return sorted(candidates, key=lambda place: place.name.endswith("first.yaml"))
"""
    )
    pytester.makepyfile(
        "def test_place(pinet_inventory):\n    assert pinet_inventory.source.name == 'second.yaml'\n"
    )
    result = run(pytester, "--pinet-lab", "first.yaml,second.yaml", "--pinet-results", "r")
    assert result.ret == 0, result.stdout.str()


def test_every_fixture_module_is_a_plugin_in_its_written_order():
    import pkgutil

    from pytest_pinet.plugin import fixtures, hooks

    folder = {info.name for info in pkgutil.iter_modules(fixtures.__path__)}
    assert set(hooks.FIXTURE_ORDER) == folder and len(hooks.FIXTURE_ORDER) == len(folder)
