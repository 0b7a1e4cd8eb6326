"""Labs side by side in one store (issue 49): `pinet labs`, `pinet regressions` grouped by lab
(and `--lab`), and the morning page's table of every lab's newest night."""

from __future__ import annotations

import json

import pytest

from pytest_pinet.bench.history_store import (
    HistoryPlan,
    fill,
    first_day_of,
    lab_key,
    planted_keys,
    recorded_night,
)
from pytest_pinet.cli.main import main
from pytest_pinet.exit_codes import Exit
from pytest_pinet.record.lab_nights import lab_nights
from pytest_pinet.record.night_digest import night_digest_of
from pytest_pinet.record.store import ResultsStore

pytestmark = pytest.mark.unit
PLAN = HistoryPlan(nights=6, labs=2, drop_pct=5.0, drop_contexts=3, drop_nights=2)
NIGHT = recorded_night()[:40]


@pytest.fixture
def shared(tmp_path):
    url = str(tmp_path / "shared.sqlite")
    store = ResultsStore(url)
    fill(store, NIGHT, PLAN, 0, PLAN.nights, first_day_of(PLAN))
    store.close()
    return url


def _planted(lab: str) -> set[str]:
    return {lab_key(key, lab) for key in planted_keys(NIGHT, PLAN)}


def test_every_lab_has_its_newest_night_and_what_is_pending(shared, capsys):
    store = ResultsStore(shared)
    nights = lab_nights(store)
    store.close()
    assert [n.lab for n in nights] == ["lab01", "lab02"]
    for night in nights:
        assert night.measured == len(NIGHT)
        assert night.run_id.endswith(night.lab) and night.pending >= len(_planted(night.lab))
    assert main(["labs", "--db", shared]) == Exit.REGRESSION  # a regression is pending
    shown = capsys.readouterr().out
    assert "lab01" in shown and "lab02" in shown and "2 lab(s)" in shown
    assert main(["labs", "--db", shared, "--json"]) == Exit.REGRESSION
    assert {n["lab"] for n in json.loads(capsys.readouterr().out)} == {"lab01", "lab02"}


def test_regressions_of_a_shared_store_are_grouped_by_lab_and_one_lab_is_asked_by_name(shared, capsys):
    assert main(["regressions", "--db", shared]) == Exit.REGRESSION
    shown = capsys.readouterr().out
    assert shown.index("lab lab01:") < shown.index("lab lab02:")
    assert main(["regressions", "--db", shared, "--json"]) == Exit.REGRESSION
    listed = json.loads(capsys.readouterr().out)["regressions"]
    for lab in PLAN.lab_names:
        assert _planted(lab) <= {r["context"] for r in listed if r["lab"] == lab}
    assert main(["regressions", "--db", shared, "--lab", "lab02", "--json"]) == Exit.REGRESSION
    assert {r["lab"] for r in json.loads(capsys.readouterr().out)["regressions"]} == {"lab02"}


def test_the_morning_page_of_a_shared_store_lists_every_labs_night(shared):
    store = ResultsStore(shared)
    newest = [r["run_id"] for r in store.runs() if r["lab"] == "lab01"][-1]
    page = night_digest_of(store, newest, []).markdown()
    store.close()
    assert "## Every lab of this store: 2" in page
    assert "| lab01 |" in page and "| lab02 |" in page
