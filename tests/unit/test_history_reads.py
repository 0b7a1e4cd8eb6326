"""History read fast and read the same (issue 49): the change-point test over sorted sides,
the walk that skips a test whose answer its gate would drop, a context's last nights read as
the runs that hold them, and the figure columns a store gets (also one made before them)."""

from __future__ import annotations

import dataclasses
import json
import math
import random
import sqlite3
import statistics
from typing import Any

import pytest

from pytest_pinet.judge import standing as standing_module
from pytest_pinet.judge.baseline import BaselinePolicy
from pytest_pinet.judge.changepoints import ChangePolicy, RunSeries, detect_change_points
from pytest_pinet.judge.standing import Night
from pytest_pinet.judge.stats import MAD_TO_SD, median_standard_error
from pytest_pinet.record import nightly, standing_memo
from pytest_pinet.record.nightly import GOODPUT, LATENCY, nights_of
from pytest_pinet.record.standing_memo import keep_standings_of_run, persisting_regressions, standing_before
from pytest_pinet.record.store import ResultsStore
from pytest_pinet.record.store_schema import BASE_SCHEMA, IMPORTED_COLUMNS, SCHEMA_VERSION

from .test_latency_verdicts import KEY, _with_latency
from .test_store import _measurement

pytestmark = pytest.mark.unit
DAY = 86400.0


# The change-point test as it was written first: every side sorted afresh by statistics.median.
def _reference_z(a: list[float], b: list[float]) -> tuple[float, float]:
    ma, mb = statistics.median(a), statistics.median(b)
    scale = MAD_TO_SD * statistics.median([abs(x - ma) for x in a] + [abs(x - mb) for x in b])
    se = math.hypot(median_standard_error(scale, len(a)), median_standard_error(scale, len(b)))
    if se == 0:
        return (math.inf if ma != mb else 0.0), (0.0 if ma != mb else 1.0)
    z = (mb - ma) / se
    return z, math.erfc(abs(z) / math.sqrt(2))


def _reference_sides(left_runs, right_runs):
    left = [x for r in left_runs for x in r.samples]
    right = [x for r in right_runs for x in r.samples]
    return (
        left,
        right,
        100.0 * (statistics.median(right) - statistics.median(left)) / abs(statistics.median(left)),
    )


def _reference_segment(runs: list[RunSeries], policy: ChangePolicy, found: list[int], offset: int) -> None:
    best = None
    for split in range(policy.min_segment_runs, len(runs) - policy.min_segment_runs + 1):
        left, right, change = _reference_sides(runs[:split], runs[split:])
        if len(left) < policy.min_samples or len(right) < policy.min_samples:
            continue
        t, p = _reference_z(left, right)
        if (
            p < policy.alpha
            and abs(change) >= policy.min_change_percent
            and (best is None or abs(t) > best[0])
        ):
            best = (abs(t), split)
    if best is None:
        return
    found.append(offset + best[1])
    _reference_segment(runs[: best[1]], policy, found, offset)
    _reference_segment(runs[best[1] :], policy, found, offset + best[1])


def _reference_detect(runs: list[RunSeries], policy: ChangePolicy) -> list[tuple[str, float, float, float]]:
    """Split, re-test each split between its neighbours until all hold; (run, before, after, p)."""
    found: list[int] = []
    _reference_segment(runs, policy, found, 0)
    splits = sorted(found)
    while True:
        kept = []
        for n, s in enumerate(splits):
            lo, hi = (splits[n - 1] if n else 0), (splits[n + 1] if n + 1 < len(splits) else len(runs))
            left, right, change = _reference_sides(runs[lo:s], runs[s:hi])
            holds = len(left) >= policy.min_samples and len(right) >= policy.min_samples
            if (
                holds
                and _reference_z(left, right)[1] < policy.alpha
                and abs(change) >= policy.min_change_percent
            ):
                kept.append(s)
        if kept == splits:
            break
        splits = kept
    out = []
    for n, s in enumerate(splits):
        lo, hi = (splits[n - 1] if n else 0), (splits[n + 1] if n + 1 < len(splits) else len(runs))
        left, right, _ = _reference_sides(runs[lo:s], runs[s:hi])
        out.append(
            (runs[s].run_id, statistics.median(left), statistics.median(right), _reference_z(left, right)[1])
        )
    return out


def _series(rng: random.Random) -> list[RunSeries]:
    runs, level = [], 100.0
    for n in range(rng.randint(1, 14)):
        if rng.random() < 0.15:
            level *= rng.choice([0.95, 0.97, 0.99, 1.03])
        spread, digits = rng.choice([0.001, 0.01, 0.03]), rng.choice([1, 3, 9])
        samples = tuple(
            round(level * (1 + rng.gauss(0, spread)), digits) for _ in range(rng.choice([1, 3, 30]))
        )
        runs.append(RunSeries(f"r{n}", float(n), samples, {"kernel": str(n // 4)}))
    return runs


def test_change_points_over_sorted_sides_are_the_ones_the_plain_test_finds():
    rng = random.Random(7)
    found = 0
    for _ in range(400):
        runs = _series(rng)
        for policy in (ChangePolicy(), ChangePolicy(min_change_percent=0.5)):
            fast = detect_change_points(runs, policy)
            assert [
                (c.run_id, c.before_median, c.after_median, c.p_value) for c in fast
            ] == _reference_detect(runs, policy)
            found += len(fast)
    assert found > 50  # the draw holds steps, not only flat series


def _walk(nights: list[Night]) -> list[tuple[str, tuple[str, ...], tuple[str, ...]]]:
    standing, seen = standing_module.Standing("k"), []
    for night in nights:
        verdict = standing_module.judge_night(standing, night)
        standing = verdict.after
        seen.append(
            (
                verdict.status,
                tuple(n.run_id for n in standing.accepted),
                tuple(n.run_id for n in standing.regressed),
            )
        )
    return seen


def _row(store: ResultsStore, run: str, day: float, goodput: float, verdict: str, test: str = "t::x") -> None:
    store.add_run(run, "pinet", "0.1.0")
    measured = _with_latency(_measurement(goodput, started=1_700_000_000 + day * DAY), goodput / 80)
    row = store.add(run, dataclasses.replace(measured, test_id=test), "0.1.0")
    if verdict:
        store.set_verdict(row, verdict, "")
        store.set_latency_verdict(row, "pass" if verdict != "lab-fault" else verdict, "")


def _cold(store: ResultsStore, run_id: str | None, metric: nightly.Metric) -> standing_module.Standing:
    """The standing a walk from the first night gives, with nothing kept."""
    rows = store.history(KEY, limit=None)
    if run_id is not None:
        tonight = [r.started for r in rows if r.run_id == run_id]
        rows = [r for r in rows if r.run_id != run_id and (not tonight or r.started < min(tonight))]
    return standing_module.standing_of(KEY, nights_of(rows, metric), store.acceptances())


def test_a_kept_standing_is_the_one_a_walk_from_the_first_night_gives_whatever_changed(tmp_path, monkeypatch):
    monkeypatch.setattr(standing_module, "HORIZON_NIGHTS", 6)  # long histories outgrow the horizon
    store = ResultsStore(str(tmp_path / "s.sqlite"))
    rng = random.Random(5)
    level, rows, accepted = 940.0, [], []
    for n in range(40):
        run = f"r{n:02d}"
        if rng.random() < 0.15:
            level *= rng.choice([0.95, 0.97, 1.02])
        verdict = rng.choice(["pass"] * 6 + ["lab-fault", "", "regression"])
        _row(store, run, n, level * (1 + rng.gauss(0, 0.002)), verdict)
        if rng.random() < 0.2:  # measured again after a failing attempt
            _row(store, run, n + 0.01, level * (1 + rng.gauss(0, 0.002)), "pass")
        rows.append(run)
        if rng.random() < 0.7:  # the run's end keeps the night's standings (not every run ends)
            keep_standings_of_run(store, run, BaselinePolicy())
        event = rng.random()
        if event < 0.1:
            store.exclude_run(rng.choice(rows), "a known-bad night")
        elif event < 0.15:
            store.include_run(rng.choice(rows))
        elif event < 0.25:
            accepted.append(store.accept(rng.choice(rows), rng.choice([KEY, "*"]), "new level", "lab"))
        elif event < 0.3 and accepted:
            store.undo_acceptance(accepted.pop(rng.randrange(len(accepted))).id, "lab")
        elif event < 0.35:  # a verdict set again on an old row
            old = rng.choice(store.history(KEY, limit=None))
            store.set_verdict(old.id, rng.choice(["pass", "lab-fault"]), "")
        for metric in (GOODPUT, LATENCY):
            assert standing_before(store, KEY, None, metric=metric) == _cold(store, None, metric)
            assert standing_before(store, KEY, run, metric=metric) == _cold(store, run, metric)
    assert len(_cold(store, None, GOODPUT).accepted) <= 6
    store.close()


def test_a_night_walks_on_from_the_kept_standing_and_a_change_walks_again(tmp_path, monkeypatch):
    store = ResultsStore(str(tmp_path / "s.sqlite"))
    for n in range(8):
        _row(store, f"r{n}", n, 940.0 + n % 3 * 0.1, "pass")
        standing_before(store, KEY, None)  # as the night's end keeps it
    walks: list[int] = []
    walked = standing_module.standing_of

    def counted(key: str, nights: list[Night], *args: object) -> standing_module.Standing:
        walks.append(len(nights))
        return walked(key, nights, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(standing_memo, "standing_of", counted)
    _row(store, "r8", 8, 941.0, "")  # tonight, measured, not yet judged
    standing_before(store, KEY, "r8")  # tonight's verdict: last night's standing, kept
    store.set_verdict(store.history(KEY)[-1].id, "pass", "")
    standing_before(store, KEY, None)  # after tonight: walked on by one night
    standing_before(store, KEY, None)
    assert walks == []
    store.set_verdict(store.history(KEY)[0].id, "lab-fault", "")  # an old night changed
    standing_before(store, KEY, None)
    assert walks == [8]  # walked again from the first night (the changed one left out)
    store.close()


def test_a_regression_older_than_the_horizon_stays_red_until_accepted(tmp_path, monkeypatch):
    monkeypatch.setattr(standing_module, "HORIZON_NIGHTS", 5)
    store = ResultsStore(str(tmp_path / "s.sqlite"))
    for n in range(12):
        _row(store, f"r{n:02d}", n, 940.0 + n % 2 * 0.2 if n < 5 else 900.0, "pass")
    (pending,) = [p for p in persisting_regressions(store) if p.metric is GOODPUT]
    assert pending.first.run_id == "r05" and len(pending.standing.regressed) == 7
    store.accept("r05", KEY, "the new driver is slower, on purpose", "lab")
    assert not [p for p in persisting_regressions(store) if p.metric is GOODPUT]
    store.close()


def test_an_older_store_gets_its_figure_columns_and_a_row_without_them_is_read_from_its_data(tmp_path):
    path = tmp_path / "v2.sqlite"
    reference = ResultsStore(str(tmp_path / "ref.sqlite"))
    _row(reference, "r1", 1, 941.0, "pass")
    (expected,) = reference.history(KEY)
    (whole,) = reference.rows_of_run("r1")
    reference.close()
    with sqlite3.connect(path) as old:  # a version 2 store holding that row, without the columns
        for statement in BASE_SCHEMA:
            old.execute(statement.format(serial="INTEGER PRIMARY KEY AUTOINCREMENT"))
        old.execute("ALTER TABLE measurements ADD COLUMN latency_verdict TEXT NOT NULL DEFAULT ''")
        old.execute("ALTER TABLE measurements ADD COLUMN latency_reason TEXT NOT NULL DEFAULT ''")
        old.execute("INSERT INTO pinet_schema VALUES (2)")
        old.execute("INSERT INTO runs VALUES ('r1', 1.0, 'pinet', '0.1.0', '')")
        columns = ", ".join(IMPORTED_COLUMNS)
        old.execute(
            f"INSERT INTO measurements ({columns}) VALUES ({', '.join('?' for _ in IMPORTED_COLUMNS)})",
            tuple(whole[c] for c in IMPORTED_COLUMNS),
        )
    store = ResultsStore(str(path))
    (filled,) = store.history(KEY)
    assert dataclasses.replace(filled, id=expected.id) == expected
    assert filled.intervals and filled.latency_rtt_ms and filled.latency_p99_ms is not None
    with sqlite3.connect(path) as opened:
        assert opened.execute("SELECT version FROM pinet_schema").fetchone() == (SCHEMA_VERSION,)
        assert opened.execute("SELECT COUNT(*) FROM measurements WHERE load_rtt_ms IS NULL").fetchone() == (
            0,
        )
        # An older pinet writing into this store leaves the columns empty: the data is read.
        opened.execute("UPDATE measurements SET interval_mbps = NULL, load_rtt_ms = NULL, load_p99_ms = NULL")
    (again,) = store.history(KEY)
    assert again == filled
    store.close()


def test_whole_rows_go_in_and_come_out_with_their_verdicts_and_figures(tmp_path):
    source = ResultsStore(str(tmp_path / "a.sqlite"))
    _row(source, "r1", 1, 941.0, "regression")
    rows = source.rows_of_run("r1")
    source.close()
    assert rows[0]["verdict"] == "regression" and json.loads(rows[0]["data"])["goodput_mbps"] == 941.0
    target = ResultsStore(str(tmp_path / "b.sqlite"))
    target.add_run("r1", "pinet", "0.1.0", started=5.0)
    target.add_rows(rows)
    assert target.rows_of_run("r1") == rows
    (read,) = target.history(KEY)
    assert read.verdict == "regression" and read.intervals == (941.0, 941.0) and read.latency_rtt_ms
    assert target.runs()[0]["started"] == 5.0
    target.close()


def test_an_acceptance_undone_before_its_run_measured_the_context_is_not_kept_alive(tmp_path):
    store = ResultsStore(str(tmp_path / "s.sqlite"))
    for n in range(8):
        _row(store, f"r{n}", n, 940.0 + n % 3 * 0.1, "pass")
    store.add_run("rX", "pinet", "0.1.0")  # tonight's run, registered before it measured anything
    accepted = store.accept("rX", "*", "a planned new driver", "lab")
    standing_before(store, KEY, None)  # kept, with that acceptance among the context's
    store.undo_acceptance(accepted.id, "lab")  # touches no pair of the context: rX has none yet
    _row(store, "rX", 8, 800.0, "regression")  # then rX measures it, 15 % lower
    standing = standing_before(store, KEY, None)
    assert standing == _cold(store, None, GOODPUT) and [n.run_id for n in standing.regressed] == ["rX"]
    store.close()


def test_a_standing_walked_while_another_runner_wrote_is_not_kept_for_the_pairs_before_it(tmp_path):
    path = str(tmp_path / "s.sqlite")
    store, runner = ResultsStore(path), ResultsStore(path)
    for n in range(8):
        _row(store, f"r{n}", n, 940.0 + n % 3 * 0.1, "pass")
    store.set_verdict(store.history(KEY)[0].id, "pass", "again")  # the next look walks from the first night
    read = store.history

    def history_while_the_runner_writes(*args: Any, **kwargs: Any) -> Any:
        store.history = read  # type: ignore[method-assign]
        _row(runner, "T", 8, 800.0, "regression")  # tonight's runner, between the reads
        return read(*args, **kwargs)

    store.history = history_while_the_runner_writes  # type: ignore[method-assign]
    standing_before(store, KEY, None)  # walked with T's row in it: not kept for the pairs before T
    assert standing_before(runner, KEY, "T") == _cold(runner, "T", GOODPUT)
    store.close()
    runner.close()
