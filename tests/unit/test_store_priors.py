"""The prior each run judged a group with, kept in a real store (record/store_priors.py): fitted
once from the standings before the run, read back by every later walk."""

from __future__ import annotations

import random

from pytest_pinet.judge.spread_prior import SpreadPrior
from pytest_pinet.record.standing_memo import StandingBook
from pytest_pinet.record.store import StoredMeasurement
from pytest_pinet.record.store_priors import group_of

from ..fake_store import store_of_rows

BOARDS = {"pi": 0.01, "qpi": 0.05}  # run-to-run spread of each board's contexts


def _key(board: str, n: int) -> str:
    return f"lab=lab1|board={board}|peer=p|link=l{n}|adapter=|scenario=tcp|direction=up|duplex=half"


def _rows(nights: int, rng: random.Random) -> list[StoredMeasurement]:
    rows = []
    for night in range(nights):
        for board, spread in BOARDS.items():
            for n in range(6):
                value = 900.0 * (1 + rng.gauss(0, spread))
                rows.append(
                    StoredMeasurement(
                        0, f"r{night:02d}", f"t{n}", _key(board, n), 1000.0 * night + n, value, "6.1", "os", "",
                        board, "pass", (value,),
                    )
                )  # fmt: skip
    return rows


def test_a_run_fits_its_groups_prior_once_and_every_later_walk_reads_it(tmp_path):
    store = store_of_rows(_rows(8, random.Random(3)), tmp_path / "store.sqlite")
    assert group_of(_key("pi", 0)) == "lab=lab1|board=pi|scenario=tcp"
    book = StandingBook(store)
    tonight = book.tonight(_key("pi", 0), "r08")
    prior = tonight.tonight_prior
    # Each board's contexts are fitted apart: the Pi's 1 %, not the QEMU board's 5 %.
    assert prior is not None and prior.contexts == 6 and prior.family == 12
    assert 0.5 < prior.spread_pct < 2.0
    qemu = book.tonight(_key("qpi", 0), "r08").tonight_prior
    assert qemu is not None and qemu.spread_pct > 2.5
    # Kept: another worker's book reads the same prior, and does not fit another.
    other = StandingBook(store).tonight(_key("pi", 3), "r08").tonight_prior
    assert other == prior and store.spread_priors(group_of(_key("pi", 0)), "goodput") == {"r08": prior}


def test_a_kept_prior_goes_with_its_run_into_every_walk(tmp_path):
    store = store_of_rows(_rows(8, random.Random(4)), tmp_path / "store.sqlite")
    group = group_of(_key("pi", 1))
    kept = store.keep_spread_prior("r07", group, "goodput", SpreadPrior(1e-4, 120.0, 6, 12))
    assert kept == SpreadPrior(1e-4, 120.0, 6, 12)
    # A second keep of the same run and group keeps the first (two workers fitting at once).
    assert store.keep_spread_prior("r07", group, "goodput", SpreadPrior(9e-4, 5.0, 6, 12)) == kept
    standing = StandingBook(store).now(_key("pi", 1))
    nights = {night.run_id: night.prior for night in (*standing.accepted, *standing.regressed)}
    assert nights["r07"] == kept and nights["r06"] is None
