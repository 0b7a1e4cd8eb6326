"""Many runners, one store (issue 49): three labs' runners write one PostgreSQL store at once,
night after night, each judging its measurements against the standings the store keeps; at
the end every measurement is stored once and every verdict is the one a walk of that
context's nights from the first gives, as if each night had been judged alone."""

from __future__ import annotations

import dataclasses
import multiprocessing
from collections import Counter

import pytest

from pytest_pinet.bench.history_bench import one_night
from pytest_pinet.bench.history_store import HistoryPlan, first_day_of, lab_key, planted_keys, recorded_night
from pytest_pinet.judge.standing import Standing, judge_night
from pytest_pinet.record.nightly import GOODPUT, nights_of
from pytest_pinet.record.standing_memo import persisting_regressions
from pytest_pinet.record.store import ResultsStore

from .test_real_tools import postgres  # noqa: F401 - the throwaway server fixture

pytestmark = [pytest.mark.integration, pytest.mark.needs_root]
PLAN = HistoryPlan(nights=6, labs=3, noise_pct=0.3, drop_pct=5.0, drop_contexts=4, drop_nights=2)
SHARE = 90  # the recorded night's first measurements: every kind of test, fewer of each


def _runner(url: str, lab: str, first_day: float, start: multiprocessing.synchronize.Event) -> None:
    """One lab's nightly runs, one after the other, as its runner makes them."""
    night = recorded_night()[:SHARE]
    store = ResultsStore(url)
    start.wait(60)  # every runner starts its first night at the same moment
    for index in range(PLAN.nights):
        one_night(store, night, PLAN, index, first_day, lab=lab)
    store.close()


def test_three_runners_of_three_labs_write_one_store_at_once_and_lose_nothing(postgres):  # noqa: F811
    night = recorded_night()[:SHARE]
    first_day = first_day_of(PLAN)
    ResultsStore(postgres).close()  # the schema, made once before the runners
    context = multiprocessing.get_context("spawn")
    start = context.Event()
    runners = [
        context.Process(target=_runner, args=(postgres, lab, first_day, start)) for lab in PLAN.lab_names
    ]
    for runner in runners:
        runner.start()
    start.set()
    for runner in runners:
        runner.join(600)
    assert [r.exitcode for r in runners] == [0, 0, 0]

    store = ResultsStore(postgres)
    rows = [
        (row["run_id"], row["test_id"], row["context_key"])
        for run in store.runs()
        for row in store.rows_of_run(run["run_id"])
    ]
    assert len(rows) == PLAN.labs * PLAN.nights * len(night)
    assert not [row for row, n in Counter(rows).items() if n > 1]  # each measurement stored once
    assert Counter(run["lab"] for run in store.runs()) == dict.fromkeys(PLAN.lab_names, PLAN.nights)

    # Every measurement's goodput verdict is the one it gets against a walk of its context's
    # nights before it from the first (each judged alone, as its test was).
    acceptances = store.acceptances()
    judged = 0
    for key in store.context_keys():
        history = store.history(key, limit=None, probes=False)
        standing = Standing(key)
        for tonight in nights_of(history, GOODPUT):
            for row in (r for r in history if r.run_id == tonight.run_id):
                (alone,) = nights_of([dataclasses.replace(row, verdict="pass")], GOODPUT)
                expected = judge_night(standing, alone, acceptances).regression
                assert row.verdict == ("regression" if expected else "pass"), (key, row.run_id, row.test_id)
                judged += 1
            standing = judge_night(standing, tonight, acceptances).after
    assert judged == len(rows)

    # The drops planted in each lab's last nights are what is in regression, lab by lab.
    planted = {lab_key(key, lab) for lab in PLAN.lab_names for key in planted_keys(night, PLAN)}
    red = {p.key for p in persisting_regressions(store, metrics=(GOODPUT,))}
    assert planted <= red
    for lab in PLAN.lab_names:
        assert {p.key for p in persisting_regressions(store, metrics=(GOODPUT,), lab=lab)} == {
            key for key in red if f"lab={lab}|" in key
        }
    store.close()
