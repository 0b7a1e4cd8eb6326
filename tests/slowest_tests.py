"""The slowest ten tests of a run of this repository's tests, each whole (setup, call and
teardown together, where pytest's ``--durations`` lists the phases apart), and what they and
the whole run add up to: printed at the end of every run, so a fresh clone's test command
says where its minutes went, and ``scripts/performance.py add ... --slowest-from LOG`` keeps
them on the performance page with the run's figure.

Beside each test's seconds, the CPU seconds it used: those of the process it ran in (an
xdist worker's, under the test command) and of the processes it started and waited for (a
night's pytest, the QEMU board it booted).  A test that waits (a timeout, a boot) shows
few; one that computes shows about as many as it took; what could share the machine's cores with which is read off these, not guessed.  A lab's
daemons (sshd, the iperf3 servers) are nobody's child here and are not counted."""

from __future__ import annotations

import resource
from collections import defaultdict
from collections.abc import Generator

import pytest

SHOWN = 10
# The heading scripts/performance.py finds in a log; the totals follow on the same line.
HEADING = "slowest tests (setup + call + teardown)"


def cpu_seconds() -> float:
    """CPU seconds (user and system) of this process and its waited-for children so far."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def summary(seconds: dict[str, float], cpu: dict[str, float] | None = None, shown: int = SHOWN) -> list[str]:
    """The lines printed: a heading with the totals, then the slowest ``shown`` tests."""
    cpu = cpu or {}
    slowest = sorted(seconds.items(), key=lambda item: item[1], reverse=True)[:shown]
    lines = [
        f"{HEADING}: the {len(slowest)} slowest {sum(s for _, s in slowest):.1f} s "
        f"of {sum(seconds.values()):.1f} s for {len(seconds)} tests"
    ]
    for nodeid, took in slowest:
        used = f"  (cpu {cpu[nodeid]:.1f} s)" if nodeid in cpu else ""
        lines.append(f"{took:8.1f} s  {nodeid}{used}")
    return lines


CPU_PROPERTY = "cpu_seconds"


def without_group(nodeid: str) -> str:
    """A test's id as the page keeps it, without the ``@group`` an xdist worker gave it."""
    at = nodeid.rfind("@")
    return nodeid[:at] if at > nodeid.rfind("]") else nodeid


class SlowestTests:
    """Adds up each test's phases as their reports arrive (an xdist controller gets its
    workers' reports too) and prints the summary last."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)
        self.cpu: dict[str, float] = defaultdict(float)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        nodeid = without_group(report.nodeid)
        self.seconds[nodeid] += report.duration
        for name, value in report.user_properties:
            if name == CPU_PROPERTY and isinstance(value, float):
                self.cpu[nodeid] += value

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        if not self.seconds:
            return
        heading, *rows = summary(self.seconds, self.cpu)
        terminalreporter.write_sep("=", heading)
        for row in rows:
            terminalreporter.write_line(row)


class CpuMeter:
    """Where a test runs (this process, or an xdist worker): the CPU seconds it used, carried
    to the summary on its teardown report (a worker's reports reach the controller)."""

    def __init__(self) -> None:
        self.started: dict[str, float] = {}

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logstart(self, nodeid: str) -> None:
        self.started[nodeid] = cpu_seconds()

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        report = yield
        if call.when == "teardown" and item.nodeid in self.started:
            used = cpu_seconds() - self.started.pop(item.nodeid)
            report.user_properties = [*report.user_properties, (CPU_PROPERTY, used)]  # not the item's list
        return report


def pytest_configure(config: pytest.Config) -> None:
    config.pluginmanager.register(CpuMeter(), "pinet-repository-cpu-meter")
    if not hasattr(config, "workerinput"):  # the controller prints, once
        config.pluginmanager.register(SlowestTests(), "pinet-repository-slowest-tests")
