"""The slowest ten tests of a run of this repository's tests, each whole (setup, call and
teardown together, where pytest's ``--durations`` lists the phases apart), and what they and
the whole run add up to: printed at the end of every run, so a fresh clone's test command
says where its minutes went, and ``scripts/performance.py add ... --slowest-from LOG`` keeps
them on the performance page with the run's figure."""

from __future__ import annotations

from collections import defaultdict

import pytest

SHOWN = 10
# The heading scripts/performance.py finds in a log; the totals follow on the same line.
HEADING = "slowest tests (setup + call + teardown)"


def summary(seconds: dict[str, float], shown: int = SHOWN) -> list[str]:
    """The lines printed: a heading with the totals, then the slowest ``shown`` tests."""
    slowest = sorted(seconds.items(), key=lambda item: item[1], reverse=True)[:shown]
    lines = [
        f"{HEADING}: the {len(slowest)} slowest {sum(s for _, s in slowest):.1f} s "
        f"of {sum(seconds.values()):.1f} s for {len(seconds)} tests"
    ]
    return lines + [f"{s:8.1f} s  {nodeid}" for nodeid, s in slowest]


class SlowestTests:
    """Adds up each test's phases as their reports arrive (an xdist controller gets its
    workers' reports too) and prints the summary last."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.seconds[report.nodeid] += report.duration

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        if not self.seconds:
            return
        heading, *rows = summary(self.seconds)
        terminalreporter.write_sep("=", heading)
        for row in rows:
            terminalreporter.write_line(row)


def pytest_configure(config: pytest.Config) -> None:
    if not hasattr(config, "workerinput"):  # the controller prints, once
        config.pluginmanager.register(SlowestTests(), "pinet-repository-slowest-tests")
