"""``pinet run``: the main job. The network suite against the lab, then the report and a summary
of what passed and what regressed."""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from ..errors import PinetError
from ..exit_codes import Exit, meaning
from ..record.results_dir import ResultsDir, newest_run
from ..record.store import ResultsStore, store_exists
from ..redaction import mask
from ..redaction import register as register_secret
from ..suite import SUITE_DIR
from .lab.lab_args import db_url
from .report import report_line

# Reaches a lab through labgrid: without the lab extra it stops at once, naming the extra.
NEEDS_LAB = True


def register(sub: Any) -> None:
    """``pinet run [--suite DIR] [--results DIR] [pytest arguments]``."""
    run = sub.add_parser("run", help="the main job: the network suite, then the report and a summary")
    run.add_argument(
        "--suite",
        default=str(SUITE_DIR),
        help="suite directory (default: the suite shipped with pytest-pinet)",
    )
    run.add_argument("--results", default="results", help="results directory (default results)")
    run.add_argument(
        "--require-report",
        action="store_true",
        help=f"exit {int(Exit.NO_REPORT)} when the Allure report cannot be built (no Node.js or Allure CLI): "
        "what a CI job that publishes the report wants",
    )
    run.add_argument("pytest_args", nargs=argparse.REMAINDER, help="further pytest arguments")
    run.set_defaults(func=cmd_run)


def cmd_run(args: argparse.Namespace) -> int:
    """The main job: the network suite against the lab, then the report and a summary."""
    suite = Path(args.suite)
    if not suite.exists():
        raise PinetError(f"suite {suite} not found: pass --suite with a directory of tests")
    results = Path(args.results)
    # The store is named explicitly, so that nothing (a checkout's conftest that keeps its
    # own tests off the user's history) can point the main job elsewhere.
    db = db_url()
    register_secret(urlsplit(db).password)
    argv = [
        sys.executable,
        "-m",
        "pytest",
        str(suite),
        "-p",
        "no:cacheprovider",
        "--pinet-results",
        str(results),
        "--pinet-db",
        db,
        "--alluredir",
        str(results / "allure-results"),
        "--clean-alluredir",
        *args.pytest_args,
    ]
    print("+ " + mask(" ".join(argv)), flush=True)
    code = subprocess.call(argv)
    line, built = report_line(results, db)
    _main_job_summary(results, db, code, line)
    if not built and args.require_report:
        # A night whose report is missing is not a good night, even when every test passed;
        # a red night keeps the status that says why it is red, with this line beside it.
        print(f"pinet: the report was required (--require-report) and not built: exit {int(Exit.NO_REPORT)}")
        return code or int(Exit.NO_REPORT)
    return code


def _main_job_summary(results: Path, db: str, code: int, report: str) -> None:
    """What passed, what regressed, where the report is."""
    run_id = newest_run(results)
    print("\n=== pinet main job summary ===")
    if run_id is not None:
        verdicts: dict[str, int] = {}
        latency: dict[str, int] = {}
        if store_exists(db):
            store = ResultsStore(db)
            try:
                verdicts = store.verdict_counts(run_id)
                latency = store.latency_verdict_counts(run_id)
            finally:
                store.close()
        print(f"run {run_id}: " + ", ".join(f"{n} {v}" for v, n in sorted(verdicts.items())))
        regressed = sum(n for v, n in verdicts.items() if "regression" in v)
        below = sum(n for v, n in verdicts.items() if "below-threshold" in v)
        undecided = sum(n for v, n in verdicts.items() if "undecided" in v)
        print(
            f"regressions against baseline: {regressed}; below threshold: {below}; "
            f"undecided (interval holds the line): {undecided}"
        )
        again = remeasured_tests(results, run_id)
        if again:
            # Every attempt is counted above (none is ever dropped); a test's own verdict is
            # its last attempt's, so a night can count one "below threshold" and still pass.
            print(
                f"measured again: {len(again)} test(s) whose first attempt missed its line; each "
                f"attempt is counted above, the test's verdict is its last: {', '.join(again)}"
            )
        if latency:  # lower is better: above its ceiling or risen beyond its band
            print("latency under load: " + ", ".join(f"{n} {v}" for v, n in sorted(latency.items())))
    print(f"pytest exit status: {code} ({meaning(code)})")
    print(report)


def remeasured_tests(results: Path, run_id: str) -> list[str]:
    """The tests of a run that were measured again (their ``remeasured`` facts), in order."""
    found: list[str] = []
    for fact in ResultsDir(results, run_id).load_facts():
        name = str(fact.get("test_id", "")).rsplit("::", 1)[-1]
        if fact.get("kind") == "remeasured" and name and name not in found:
            found.append(name)
    return found
