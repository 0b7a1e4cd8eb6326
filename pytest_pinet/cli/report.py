"""``pinet report``: the Allure 3 report with history, and the morning digest of the newest run
(also built by the main job)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ..errors import PinetError
from .lab.lab_args import db_url


def register(sub: Any) -> None:
    """``pinet report``."""
    report = sub.add_parser("report", help="build the Allure 3 report with history and goodput trends")
    report.add_argument("--results", default="results", help="results directory (default results)")
    report.add_argument("--root", default=".", help="checkout holding .allure (default .)")
    report.set_defaults(func=cmd_report)


def cmd_report(args: argparse.Namespace) -> int:
    """Build the Allure 3 report (history across runs, goodput metrics, trend charts)."""
    index = build_with_history(Path(args.root).resolve(), Path(args.results), db_url())
    print(f"report: {index} (serve it: python3 -m http.server -d {index.parent} 8080 --bind 127.0.0.1)")
    return 0


def last_night(results: Path, db: str) -> Any:
    """The morning summary (``record.night_digest.NightDigest``) of the newest run under ``results``;
    None when there is no run or no store to read it from."""
    from ..record.night_digest import night_digest_of
    from ..record.results_dir import ResultsDir, newest_run
    from ..record.store import ResultsStore, store_exists

    run_id = newest_run(results)
    if run_id is None or not store_exists(db):
        return None
    store = ResultsStore(db)
    try:
        return night_digest_of(store, run_id, ResultsDir(results, run_id).load_facts())
    finally:
        store.close()


def build_with_history(root: Path, results: Path, db: str) -> Path:
    """The Allure report of the newest run under ``results``, with the history of its lab,
    which lives in the store ``db`` (record/allure_history.py); return its index.html."""
    from ..record.allure_history import lab_history, lab_of_newest_run
    from ..record.allure_report import build_report
    from ..record.store import ResultsStore

    morning = last_night(results, db)
    store = ResultsStore(db)
    try:
        lab = lab_of_newest_run(store, results)
        with lab_history(store, lab, results / "allure-history.jsonl") as history:
            return build_report(
                root,
                results / "allure-results",
                results / "report",
                history,
                name=f"pinet {lab}",
                morning=morning,
            )
    finally:
        store.close()


def report_line(results: Path, db: str) -> tuple[str, bool]:
    """Build the report after the main job: the line that says where it is, or why it is not,
    and whether it was built."""
    try:
        index = build_with_history(Path(".").resolve(), results, db)
    except PinetError as exc:
        return f"REPORT NOT BUILT: {exc}", False
    return f"report: {index}  (python3 -m http.server -d {index.parent} 8080 --bind 127.0.0.1)", True
