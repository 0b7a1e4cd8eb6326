"""How history commands and a night's verdicts grow with a store: ``pinet bench --history-only``.

A store of many labs' nightlies is built from one real night (bench/history_store.py) in
steps (a quarter of the nights, half, all); at each step the commands a lab engineer runs in
the morning are timed as they are run (``pinet regressions`` over every lab and one lab,
``pinet trends`` of one lab, each in its own process) with the morning page of the newest
night, and the first look after the nights were written (which walks every context from its
first night and keeps the standings, as the nights themselves would have). Then one more
night of one lab is stored and judged the way a run does it (each measurement stored, its
verdict from the kept standing, the standings kept at the night's end), and the verdicts on
the whole store are checked against the planted drops and against a walk of every night from
nothing (what the kept standings must equal; a walk of the last 60 nights no longer does: the
step test's spread reads up to 60 accepted nights, which such a walk starts without).
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from ..exit_codes import ANSWERS
from ..judge.baseline import BaselinePolicy
from ..judge.standing import judge_night, standing_of
from ..model.context_key import ContextKey
from ..record.night_digest import night_digest_of
from ..record.nightly import GOODPUT, LATENCY, nights_of
from ..record.standing_memo import StandingBook, keep_standings_of_run, persisting_regressions
from ..record.store import ResultsStore, StoredMeasurement
from ..record.store_rows import STORED_NAMES, stored_row
from .history_store import HistoryPlan, fill, first_day_of, lab_key, nights, planted_keys

COMMANDS = ("regressions", "regressions --lab", "trends --lab", "morning page")


def _timed(action: Callable[[], object], repeats: int) -> float:
    """The median seconds of ``repeats`` runs of ``action``."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        action()
        times.append(time.perf_counter() - start)
    return float(statistics.median(times))


def _pinet(*args: str) -> Callable[[], object]:
    """``pinet ARGS`` in a process of its own, as a person runs it (0, 1 or 9: an answer)."""

    def run() -> None:
        done = subprocess.run(
            [sys.executable, "-m", "pytest_pinet.cli", *args], capture_output=True, text=True, check=False
        )
        if done.returncode not in ANSWERS:
            raise RuntimeError(
                f"pinet {' '.join(args)} failed ({done.returncode}): {done.stderr.strip()[-400:]}"
            )

    return run


def _newest_run(store: ResultsStore, lab: str) -> str:
    return str([r["run_id"] for r in store.runs() if r["lab"] == lab][-1])


def _step(url: str, store: ResultsStore, plan: HistoryPlan, repeats: int) -> dict[str, float]:
    """The commands' times on the store as it is now."""
    lab = plan.lab(0)
    figures = {"regressions": _timed(_pinet("regressions", "--db", url, "--json"), repeats)}
    figures["regressions --lab"] = _timed(_pinet("regressions", "--db", url, "--lab", lab, "--json"), repeats)
    figures["trends --lab"] = _timed(_pinet("trends", "--db", url, "--lab", lab, "--json"), repeats)
    newest = _newest_run(store, lab)
    figures["morning page"] = _timed(lambda: night_digest_of(store, newest, []).markdown(), repeats)
    return figures


def _last_night(
    store: ResultsStore, night: Sequence[dict[str, Any]], plan: HistoryPlan, index: int, first_day: float
) -> dict[str, float]:
    """Night ``index`` of every lab as their runs write it: the first lab's measured and judged
    one by one (:func:`one_night`, its seconds returned), the others' stored whole, and every
    lab's standings kept at its night's end."""
    figures = one_night(store, night, plan, index, first_day)
    for lab, run_id, at, rows in nights(night, plan, index, index + 1, first_day):
        if lab == plan.lab(0):
            continue
        store.add_run(run_id, lab, "bench-history", started=at)
        store.add_rows(rows)
        keep_standings_of_run(store, run_id, BaselinePolicy())
    return figures


def one_night(
    store: ResultsStore,
    night: Sequence[dict[str, Any]],
    plan: HistoryPlan,
    index: int,
    first_day: float,
    lab: str | None = None,
) -> dict[str, float]:
    """Store and judge night ``index`` of ``lab`` (the first) as a run does: each measurement
    stored, judged against its context's standing before the night and its verdicts set, the
    standings kept at the end; its seconds by part."""
    policy = BaselinePolicy()
    wanted = lab or plan.lab(0)
    lab, run_id, at, rows = next(
        n for n in nights(night, plan, index, index + 1, first_day) if n[0] == wanted
    )
    stored = judged = 0.0
    store.add_run(run_id, lab, "bench-history", started=at)
    book = StandingBook(store, policy)  # one for the night, as a run has (PinetRun.standings)
    for row in rows:
        start = time.perf_counter()
        row_id = store.add_row({**row, "verdict": "", "latency_verdict": ""})
        measured = _as_stored(row_id, row)  # the run judges what it measured, not a read back
        stored += time.perf_counter() - start
        start = time.perf_counter()
        for metric, set_verdict in ((GOODPUT, store.set_verdict), (LATENCY, store.set_latency_verdict)):
            tonight = nights_of([_judged(measured)], metric)
            if not tonight:
                continue
            standing = book.before(measured.context_key, run_id, metric)
            verdict = judge_night(standing, tonight[0], book.acceptances(), policy)
            set_verdict(measured.id, "regression" if verdict.regression else "pass", verdict.status)
        judged += time.perf_counter() - start
    start = time.perf_counter()
    keep_standings_of_run(store, run_id, policy)
    kept = time.perf_counter() - start
    return {
        "measurements": len(rows),
        "stored": stored,
        "verdicts": judged,
        "standings kept": kept,
        "night": stored + judged + kept,
    }


def _as_stored(row_id: int, row: dict[str, Any]) -> StoredMeasurement:
    """A night's row as the store reads it back, made from the row itself."""
    return stored_row({**{name: row.get(name) for name in STORED_NAMES}, "id": row_id}, str(row["data"]))


def _judged(row: StoredMeasurement) -> StoredMeasurement:
    """A stored row as tonight's verdict reads it: judged (its figure is tonight's sample)."""
    return replace(row, verdict="pass", latency_verdict="pass")


def check_verdicts(store: ResultsStore, night: Sequence[dict[str, Any]], plan: HistoryPlan) -> dict[str, Any]:
    """The goodput regressions on the store against the planted drops, and the first lab's
    against a walk of all its nights from nothing."""
    found = {(p.key, p.first.run_id) for p in persisting_regressions(store, metrics=(GOODPUT,))}
    planted = {lab_key(key, lab) for lab in plan.lab_names for key in planted_keys(night, plan)}
    red = {key for key, _ in found}
    lab = plan.lab(0)
    windowed = set()
    acceptances = store.acceptances()
    for key in store.context_keys(lab):
        history = nights_of(store.history(key, limit=None, probes=False), GOODPUT)
        standing = standing_of(key, history, acceptances)
        if standing.regressed:
            windowed.add((key, standing.regressed[0].run_id))
    ours = {(key, first) for key, first in found if ContextKey.parse(key).get("lab") == lab}
    return {
        "planted": len(planted),
        "planted_red": len(planted & red),
        "other_regressions": len(red - planted),
        "same_as_walk_from_first_night": ours == windowed,
        "differences": sorted(str(d) for d in ours ^ windowed),
    }


def history_bench(
    url: str, backend: str, plan: HistoryPlan, steps: int, repeats: int, say: Callable[[str], None]
) -> dict[str, Any]:
    """The whole benchmark on one store: growth steps, one night, the verdicts."""
    from .history_store import recorded_night

    night = recorded_night()
    store = ResultsStore(url)
    first_day = first_day_of(plan)
    sizes = sorted({max(2, plan.nights * (n + 1) // steps) for n in range(steps)})
    built, growth = 0, []
    try:
        for size in sizes:
            start = time.perf_counter()
            fill(store, night, plan, built, size - 1, first_day)
            written = time.perf_counter() - start
            say(f"{backend}: {size - 1} nights x {plan.labs} labs written in {written:.0f} s; the first look")
            # What the nights would have kept, had each been judged: one walk per context.
            start = time.perf_counter()
            persisting_regressions(store)
            first_look = time.perf_counter() - start
            tonight = _last_night(store, night, plan, size - 1, first_day)
            built = size
            say(f"{backend}: night {size} stored and judged ({tonight['night']:.2f} s for lab01); timing")
            step = _step(url, store, plan, repeats)
            growth.append(
                {
                    "nights": size,
                    "measurements": store.count(),
                    "written_s": written,
                    "first look": first_look,
                    **step,
                    "one_night": tonight,
                }
            )
        say(f"{backend}: checking the verdicts")
        verdicts = check_verdicts(store, night, plan)
    finally:
        store.close()
    return {"backend": backend, "plan": vars(plan), "growth": growth, "verdicts": verdicts}


def format_history(result: dict[str, Any]) -> list[str]:
    """The benchmark as a table: each command at each size, how it grew, the night, the verdicts."""
    plan = result["plan"]
    lines = [
        f"history on {result['backend']}: {plan['labs']} labs, up to {plan['nights']} nights "
        f"({result['growth'][-1]['measurements']:,} measurements), median of runs, seconds",
        "  nights  " + "  ".join(f"{name:>17}" for name in (*COMMANDS, "first look")),
    ]
    for step in result["growth"]:
        lines.append(
            f"  {step['nights']:>6}  "
            + "  ".join(f"{step[name]:>17.2f}" for name in (*COMMANDS, "first look"))
        )
    first, last = result["growth"][0], result["growth"][-1]
    if len(result["growth"]) > 1:
        nights = last["nights"] / first["nights"]
        grew = ", ".join(f"{name} x{last[name] / first[name]:.1f}" for name in COMMANDS if first[name] > 0)
        lines.append(f"  growth over x{nights:.1f} nights: {grew}")
    for step in result["growth"]:
        night = step["one_night"]
        lines.append(
            f"  night {step['nights']} of lab01 ({night['measurements']} measurements): stored "
            f"{night['stored']:.2f}, verdicts {night['verdicts']:.2f}, standings kept "
            f"{night['standings kept']:.2f}: {night['night']:.2f} s"
        )
    v = result["verdicts"]
    # Recordings before 2026-11-29 compared with a walk of the last 60 nights.
    walk, same = (
        ("from its first night", v["same_as_walk_from_first_night"])
        if "same_as_walk_from_first_night" in v
        else ("of the last 60 nights", v["same_as_60_night_walk"])
    )
    lines.append(
        f"  verdicts: {v['planted_red']} of {v['planted']} planted drops red, {v['other_regressions']} other "
        f"regression(s); lab01 the same as a walk {walk}: {'yes' if same else 'no'}"
    )
    return lines


def to_json(results: list[dict[str, Any]]) -> str:
    """Every backend's figures as JSON."""
    return json.dumps({"history": results}, indent=2)
