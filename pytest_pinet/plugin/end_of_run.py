"""What the plugin writes when a run that measured ends: the terminal summary (lab health first,
then every measurement, the tables per suite, what was not measured and why, the run's
coverage) and Allure's run files (environment, executor, categories), once, by the controller."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from .. import __version__
from ..errors import doc
from ..redaction import mask
from .outcomes import NIGHT_STATUS, planned_tests
from .run_state import PINET_RUN, UNDECIDED_PREFIX

if TYPE_CHECKING:
    from ..record.planned import PlannedTest
    from ..session.pinet_run import PinetRun


def write_health(terminalreporter: Any, run: PinetRun) -> None:
    """The boards and links the health check found unfit, first: they explain what follows."""
    from ..record.run_summary import health_lines, left_out

    facts = run.results.load_facts()
    health = [f"OUT OF SERVICE {line}" for line in left_out(facts).values()] + health_lines(facts)
    if health:
        terminalreporter.section("pinet lab health")
        for line in health:
            terminalreporter.write_line(line, red=line.startswith(("UNHEALTHY", "OUT OF SERVICE")))


def write_summary(
    terminalreporter: Any, config: pytest.Config, run: PinetRun, planned: dict[str, PlannedTest]
) -> None:
    """The measurements, what could not be measured and why, and the run's coverage."""
    from ..record.data_home import store_url
    from ..record.image_table import image_table
    from ..record.planned import coverage_lines, measured_nothing
    from ..record.run_summary import (
        cannot_detect_lines,
        lab_fault_lines,
        measurement_lines,
        no_baseline_lines,
    )
    from ..record.seed_tables import (
        link_latency_table,
        routing_latency_table,
        routing_tables,
        storage_table,
        udp_table,
    )

    rows = run.results.load()
    write_health(terminalreporter, run)
    if rows:
        terminalreporter.section("pinet measurements")
        for line in (
            measurement_lines(rows)
            + routing_tables(rows)
            + routing_latency_table(rows)
            + link_latency_table(rows)
            + udp_table(rows)
            + storage_table(rows)
        ):
            terminalreporter.write_line(line)
        for line in image_table(rows):
            terminalreporter.write_line(line)
        terminalreporter.write_line(f"results: {run.results.measurements_file}")
    for line in unsupported_lines(run.results.load_facts()):
        terminalreporter.write_line(line)
    for line in lab_fault_lines(run.results.load_facts()):
        terminalreporter.write_line(line)
    undecided = terminalreporter.stats.get("undecided", [])
    if undecided:
        terminalreporter.write_line(
            f"pinet: {len(undecided)} undecided (the measured interval held the line; neither pass "
            f"nor regression, see {doc('adaptive-duration.md')}):",
            yellow=True,
        )
        for report in undecided:
            reason = str(report.longrepr[2]).split(UNDECIDED_PREFIX, 1)[-1]
            terminalreporter.write_line(f"  {report.nodeid}: {reason}", yellow=True)
    facts = run.results.load_facts()
    store = mask(store_url(run.settings.db))
    for line in no_baseline_lines(facts, store, run.settings.baseline_min) + cannot_detect_lines(facts):
        terminalreporter.write_line(line, yellow=True)
    for line in coverage_lines(planned, rows):
        terminalreporter.write_line(line)
    for line in absent_lines(run.results.load_facts()):
        terminalreporter.write_line(line, yellow=True)
    if measured_nothing(planned, rows):
        if run.settings.allow_skips:
            terminalreporter.write_line(
                "pinet: nothing was measured (allowed by --pinet-allow-skips)", yellow=True
            )
        else:
            terminalreporter.write_line(
                "pinet: FAILED: nothing was measured, so this run proves nothing about the boards "
                "(see the reasons above; --pinet-allow-skips accepts such a run)",
                red=True,
            )
    night = config.stash.get(NIGHT_STATUS, None)
    if night is not None:
        red = not night.startswith("exit 0:")
        terminalreporter.write_line(
            f"pinet: night status {night} (docs/nightly.md, exit statuses)", red=red, yellow=not red
        )
    if run.lab_error:
        terminalreporter.write_line(f"pinet: virtual lab teardown failed: {run.lab_error}", red=True)


def unsupported_lines(facts: list[dict[str, Any]]) -> list[str]:
    """Each tunable a host could not set, once: what the profile asked and why not."""
    return sorted(
        {
            f"unsupported: {fact['host']} {fact['tunable']} "
            f"({fact.get('what', 'profile')} {fact['profile']}): {fact['reason']}"
            for fact in facts
            if fact.get("kind") == "unsupported-tunable"
        }
    )


def absent_lines(facts: list[dict[str, Any]]) -> list[str]:
    """One line per reason the lab gave for what it plans but could not bring up here (the
    two-board lab's QEMU board on a machine without QEMU), naming the boards and links."""
    absent: dict[str, str] = {}
    for fact in facts:
        if fact.get("kind") == "absent":
            absent.update(fact.get("absent", {}))
    by_reason: dict[str, list[str]] = {}
    for name, why in absent.items():
        by_reason.setdefault(why, []).append(name)
    return [
        f"pinet: not in this lab, not measured: {', '.join(names)}: {why}" for why, names in by_reason.items()
    ]


def coverage_variables(planned: dict[str, PlannedTest]) -> dict[str, str]:
    """The run's coverage as Allure Variables: measured K of N planned tests, and the planned
    combinations no board measured, each with its reason."""
    from ..record.planned import combination_reason, measured_counts, unmeasured_combinations

    if not planned:
        return {}
    measured, total = measured_counts(planned)
    missing, combinations = unmeasured_combinations(planned)
    variables = {
        "measured": f"{measured} of {total} planned tests",
        "measured on no board": f"{len(missing)} of {combinations} planned combinations",
    }
    for number, (name, tests) in enumerate(missing.items(), start=1):
        # numbered keys: a combination's "=" and ":" would end a properties key
        variables[f"on no board {number}"] = f"{name}: {combination_reason(tests)}"
    return variables


def write_allure_run_files(alluredir: Path, run: PinetRun, planned: dict[str, PlannedTest]) -> None:
    """environment.properties, executor.json, categories.json: once, by the controller."""
    from ..record.allure_out import write_run_files
    from ..record.data_home import store_url
    from ..record.run_summary import failed_checks, latest_health, left_out

    rows = run.results.load()
    environment = {
        "pinet.version": __version__,
        "lab": "virtual" if run.settings.virtual else run.settings.lab,
        "thresholds": str(run.settings.thresholds),
        "run": run.run_id,
        "store": mask(store_url(run.settings.db)),
    }
    boards: list[str] = []
    for row in rows:
        board = (row.get("facts") or {}).get("board") or {}
        if board:
            host = board.get("host", "board")
            if host not in boards:
                boards.append(host)
            environment[f"{host}.kernel"] = board.get("kernel", "")
            environment[f"{host}.os"] = board.get("os_name", "")
            environment[f"{host}.image"] = board.get("image", "") or "(not flashed by pinet)"
            environment[f"{host}.iperf3"] = board.get("iperf3_version", "")
    environment["boards"] = ", ".join(boards) or "(none measured)"
    environment.update(coverage_variables(planned))
    for name, line in left_out(run.results.load_facts()).items():
        environment[f"out-of-service.{name.replace(' ', '.')}"] = line
    for subject, fact in latest_health(run.results.load_facts()).items():
        if fact.get("healthy"):
            environment["healthy"] = ", ".join(filter(None, [environment.get("healthy", ""), subject]))
        else:
            environment[f"unhealthy.{subject}"] = "; ".join(failed_checks(fact))
    executor = {
        "name": "pytest-pinet",
        "type": "pytest",
        "buildName": run.run_id,
        "reportName": "pytest-pinet",
    }
    write_run_files(alluredir, environment, executor)
    if rows:
        # One chart per context across every run the store holds (kernel by colour, OS by
        # shape), so a shift that came with a kernel or OS change shows at a glance.
        from ..record.plots import trend_charts, write_trends_result

        write_trends_result(alluredir, trend_charts(run.store), run.run_id)


def header_lines(run: PinetRun) -> list[str]:
    """Which lab, thresholds and results directory this run uses."""
    from ..judge.threshold_rules import describe_mode
    from ..record.data_home import store_url

    s = run.settings
    how = "no lab named" if s.lab_source.startswith("default of") else f"from {s.lab_source}"
    kind = {
        "both": "two-board lab {}: namespace board pi and QEMU board qpi",
        "qemu": "QEMU board lab {}",
        "netns": "namespace lab {}",
    }[s.board].format(s.virtual_lab)
    lab = f"virtual ({kind}, built on demand; {how})" if s.virtual else f"{s.lab} ({how})"
    return [
        f"pinet: lab {lab}",
        f"pinet: store {mask(store_url(s.db))} (history and baselines)",
        f"pinet: thresholds {s.thresholds}"
        + (f": {describe_mode(s.thresholds)}" if s.thresholds.is_file() else " (missing!)"),
        f"pinet: results {run.results.path}; iperf3 -P {s.streams} -t {s.duration} -O {s.omit}"
        + (
            f" (adaptive: stops once settled within {s.adaptive_precision} %, after {s.adaptive_min} s)"
            if s.settle_rule()
            else ""
        ),
    ]


def pytest_report_header(config: pytest.Config) -> list[str]:
    """With a pinet option given, say up front which lab and thresholds this run uses."""
    run = config.stash.get(PINET_RUN, None)
    return header_lines(run) if run is not None else []


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    """Print every measurement of the run: direction, goodput, expectation, limit."""
    run = config.stash.get(PINET_RUN, None)
    if run is None or run.is_worker:
        return
    write_summary(terminalreporter, config, run, planned_tests(config))
