"""The README is a front door, not a lab notebook: its first screen carries no date and no run
time, every page it links exists, and measured figures live in the generated performance page."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
FIRST_SCREEN = 60
DATE = re.compile(r"\b20\d\d-\d\d-\d\d\b")
RUN_TIME = re.compile(r"\b\d+(?:\.\d+)?\s*(?:minutes?|min|seconds?|s)\b(?![-\w])")


def test_the_readme_first_screen_has_no_date_and_no_run_time():
    first = (REPO / "README.md").read_text(encoding="utf-8").splitlines()[:FIRST_SCREEN]
    found = [line for line in first if DATE.search(line) or RUN_TIME.search(line)]
    assert not found, f"figures and dates belong in docs/performance.md: {found}"


def test_every_page_and_image_the_readme_links_exists():
    text = (REPO / "README.md").read_text(encoding="utf-8")
    links = re.findall(r"\]\(([^)#]+)\)", text)
    assert links, "the README links no page"
    missing = [link for link in links if not (REPO / link).exists()]
    assert not missing, missing
    assert "docs/glossary.md" in links and "docs/performance.md" in links


def test_the_performance_page_is_what_its_data_renders():
    done = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "performance.py"), "check"], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr


def test_a_figure_keeps_the_machine_it_ran_on():
    """Issue 64: a figure of the test command, the unit tier or the main job says which machine
    it was taken on (two figures of different machines are not one trend)."""
    here = _performance_script().machine()
    assert f"x{os.cpu_count()}" in here and f"Linux {os.uname().release}" in here
    entry = {"what": "test-command", "seconds": 1200.0, "status": 0, "machine": "EPYC x2, 8 GiB, Linux 6.1"}
    page = _performance_script().render([entry])
    assert "| machine |" in page and "| EPYC x2, 8 GiB, Linux 6.1 |" in page


def _performance_script():
    spec = importlib.util.spec_from_file_location("performance", REPO / "scripts" / "performance.py")
    assert spec is not None and spec.loader is not None
    performance = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(performance)
    return performance


def test_the_slowest_tests_a_run_prints_are_what_the_page_keeps(tmp_path):
    """Issue 64: the test command prints its slowest ten tests whole and their totals
    (tests/slowest_tests.py), and performance.py keeps them with the figure."""
    from tests.slowest_tests import summary

    seconds = {f"tests/integration/test_{n}.py::test_it[ini option a]": float(n) for n in range(1, 13)}
    cpu = {name: took / 2 for name, took in seconds.items() if took > 5}
    log = tmp_path / "ci.log"
    inner = "\n".join(f"E   {line}" for line in summary({"tests/unit/test_x.py::test_y": 1.0}))
    log.write_text(
        f"{inner}\n...\n=== " + "\n".join(summary(seconds, cpu)) + "\n=== 12 passed in 80.0s ===\n"
    )
    performance = _performance_script()
    kept = performance.slowest_from(log.read_text(), str(log))
    assert kept["tests"] == 12 and kept["tests_seconds"] == 78.0
    assert kept["slowest"][0] == [12.0, "tests/integration/test_12.py::test_it[ini option a]", 6.0]
    assert [row[0] for row in kept["slowest"]] == [12.0, 11.0, 10.0, 9.0, 8.0, 7.0, 6.0, 5.0, 4.0, 3.0]
    assert kept["slowest"][-1] == [3.0, "tests/integration/test_3.py::test_it[ini option a]"]  # no CPU figure
    page = performance.render([{"what": "test-command", "seconds": 80.0, "status": 0, **kept}])
    assert "| `tests/integration/test_12.py::test_it[ini option a]` | 12.00 s | 6.00 s |" in page
    with pytest.raises(SystemExit, match=r"ci\.log: no 'slowest tests' summary"):
        performance.slowest_from("=== 3 failed in 9.0s ===\n", "ci.log")


def test_the_checker_catches_a_run_time_and_a_date():
    assert RUN_TIME.search("the main job took 11.6 minutes") and RUN_TIME.search("(698 s)")
    assert DATE.search("measured 2026-11-28") and not RUN_TIME.search("docs/results-and-reports.md")


# The layout the project was asked for, and what may stand beside it: scripts, CI and packaging.
LAYOUT = {"pyproject.toml", "README.md", "pytest_pinet", "tests", "lab", "fixtures", "conftest.py", "docs"}
BESIDE = {"scripts", ".ci", "LICENSE", "MANIFEST.in", ".gitignore", ".git"}
# What tools make at the top level of a clone or an sdist, never committed (.gitignore's).
MADE = re.compile(
    r"^(\..*_cache|__pycache__|\.hypothesis|\.venv|\.allure|build|dist|results|.*\.egg-info|PKG-INFO|setup\.cfg)$"
)


def test_the_top_level_is_the_layout_asked_for():
    entries = {p.name for p in REPO.iterdir() if not MADE.match(p.name)}
    assert entries >= LAYOUT, f"missing from the top level: {sorted(LAYOUT - entries)}"
    assert entries <= LAYOUT | BESIDE, f"not of the layout: {sorted(entries - LAYOUT - BESIDE)}"


def test_every_relative_link_of_the_docs_resolves():
    missing = []
    for page in [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]:
        text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)
        for link in re.findall(r"\]\(([^)\s#]+)(?:#[^)]*)?\)", text):
            if not re.match(r"[a-z]+:", link) and not (page.parent / link).exists():
                missing.append(f"{page.relative_to(REPO)}: {link}")
    assert not missing, missing
