"""Boards out of service: the rule over any history of nightly health checks, the store that
keeps them (SQLite here; the shared-store tests run PostgreSQL), and ``pinet lab return``."""

from __future__ import annotations

import subprocess
import sys

from hypothesis import given
from hypothesis import strategies as st

from pytest_pinet.exit_codes import Exit
from pytest_pinet.record.board_service import Check, nights, out_of_service
from pytest_pinet.record.run_summary import left_out
from pytest_pinet.record.store import ResultsStore

# A history: per night, one or two workers' checks (True healthy); and where a return falls.
HISTORY = st.lists(st.lists(st.booleans(), min_size=1, max_size=2), max_size=12)


def _checks(history: list[list[bool]]) -> list[Check]:
    return [
        # night n checked at n + 1 (and a tenth later by a second worker): never at 0, the time
        # a board that was never returned was returned "at"
        Check(
            f"r{night:02d}", night + 1 + worker / 10, healthy, "" if healthy else f"cable cut, night {night}"
        )
        for night, checks in enumerate(history)
        for worker, healthy in enumerate(checks)
    ]


@given(
    history=HISTORY,
    after=st.integers(min_value=0, max_value=5),
    returned=st.integers(min_value=-1, max_value=12),
)
def test_out_of_service_exactly_after_n_failed_nights_in_a_row_since_the_return(history, after, returned):
    """Out of service iff ``after`` > 0 and the newest ``after`` nights since the last return
    each had a failed check; since the first night of that streak, for the newest reason."""
    found = out_of_service(
        "pi5", "link pi5-builtin", _checks(history), returned + 1.5 if returned >= 0 else 0.0, after
    )
    counted = [all(night) for n, night in enumerate(history) if n > returned]
    streak = 0
    for healthy in reversed(counted):
        if healthy:
            break
        streak += 1
    if after == 0 or streak < after:
        assert found is None
        return
    assert found is not None and found.nights == streak
    first = len(history) - streak
    assert found.since_run == f"r{first:02d}"
    assert found.reason == f"cable cut, night {len(history) - 1}"
    assert found.line().startswith(f"pi5 link pi5-builtin out of service since run r{first:02d}: cable cut")
    assert "pinet lab return pi5" in found.line()


def test_a_night_fails_when_any_of_its_checks_failed():
    checks = [Check("r1", 1.0, True), Check("r1", 1.1, False, "eth0 carrier"), Check("r2", 2.0, True)]
    assert [(n.run_id, n.healthy, n.reason) for n in nights(checks)] == [
        ("r1", False, "eth0 carrier"),
        ("r2", True, ""),
    ]


def test_the_store_keeps_checks_and_returns(tmp_path):
    store = ResultsStore(f"sqlite:///{tmp_path / 'pinet.sqlite'}")
    for run in ("r1", "r2", "r3"):
        store.record_board_check("bench", "pi5", "board pi5", run, True)
        store.record_board_check("bench", "pi5", "link pi5-builtin", run, False, f"carrier lost ({run})")
        store.record_board_check("bench", "pi4", "board pi4", run, run != "r2", "no answer")
    (out,) = store.board_out_of_service("bench", "pi5", 3)
    assert (out.name, out.since_run, out.nights, out.reason) == (
        "pi5 link pi5-builtin",
        "r1",
        3,
        "carrier lost (r3)",
    )
    assert store.board_out_of_service("bench", "pi5", 3, before_run="r3") == []  # a run never decides itself
    assert store.board_out_of_service("bench", "pi4", 1) == []  # r3 passed: the streak ended
    assert store.boards_out_of_service("bench", 3) == [out]
    assert store.labs_with_board("pi5") == ["bench"]
    store.return_board("bench", "pi5", "lab engineer", "new cable")
    assert store.board_out_of_service("bench", "pi5", 1) == []
    store.close()


def test_pinet_lab_return_puts_the_board_back_and_says_since_when(tmp_path):
    url = f"sqlite:///{tmp_path / 'pinet.sqlite'}"
    store = ResultsStore(url)
    store.record_board_check(
        "bench", "pi5", "link pi5-builtin", "r1", False, "link pi5-builtin failed its health check"
    )
    store.record_board_check("other", "pi4", "board pi4", "r1", True)
    store.close()

    def pinet(*args: str) -> subprocess.CompletedProcess[str]:
        argv = [sys.executable, "-m", "pytest_pinet.cli", "lab", "return", *args, "--db", url]
        return subprocess.run(argv, capture_output=True, text=True, check=False)

    done = pinet("pi5", "--why", "new cable", "--who", "ana")
    assert done.returncode == 0, done.stderr
    said = "pi5 of bench: returned to service by ana\n  pi5 link pi5-builtin: had failed 1 night(s) in a row since run r1"
    assert said in done.stdout, done.stdout
    assert ResultsStore(url).board_out_of_service("bench", "pi5", 1) == []
    unknown = pinet("pi9")
    assert unknown.returncode == Exit.BAD_CONFIG and "pi9: no health check of this board" in unknown.stderr
    assert "Traceback" not in unknown.stderr


def test_the_morning_page_names_the_boards_left_out_once():
    cable = "pi5 link eth out of service since run r1: cable"
    facts = [
        {
            "kind": "out-of-service",
            "board": "pi5",
            "subject": "link eth",
            "name": "pi5 link eth",
            "line": cable,
        },
        {
            "kind": "out-of-service",
            "board": "pi5",
            "subject": "link eth",
            "name": "pi5 link eth",
            "line": cable,
        },
        {"kind": "out-of-service", "board": "pi4", "subject": "board pi4", "name": "pi4", "line": "pi4 ..."},
        {"kind": "back-in-service", "board": "pi4", "subject": "board pi4", "by": "a passing health check"},
    ]
    assert left_out(facts) == {"pi5 link eth": cable}
