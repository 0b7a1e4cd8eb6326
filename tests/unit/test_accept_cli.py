"""`pinet regressions` and `pinet accept` on a real SQLite store; one figure per night."""

from __future__ import annotations

import dataclasses

import pytest

from pytest_pinet.cli.main import main
from pytest_pinet.exit_codes import Exit
from pytest_pinet.model.context_key import context_key
from pytest_pinet.record.nightly import nights_of
from pytest_pinet.record.standing_memo import standing_before
from pytest_pinet.record.store import ResultsStore

from .test_store import _measurement

DAY = 86400.0


def _night(store: ResultsStore, run: str, day: int, *figures: float, test: str = "t::x") -> None:
    """Run ``run`` on ``day``: each figure one attempt of ``test``, the last one final."""
    store.add_run(run, "pinet", "0.1.0")
    for n, figure in enumerate(figures):
        measured = dataclasses.replace(
            _measurement(figure, started=1_700_000_000 + day * DAY + n), test_id=test
        )
        row = store.add(run, measured, "0.1.0")
        store.set_verdict(row, "regression" if figure < 930 else "pass", "")


@pytest.fixture
def store_url(tmp_path):
    url = f"sqlite:///{tmp_path / 's.sqlite'}"
    store = ResultsStore(url)
    _night(store, "n1", 1, 941.4)
    _night(store, "n2", 2, 941.5)
    # Night 3 degraded and measured again: its figure is the final attempt's, counted once.
    _night(store, "n3", 3, 912.8, 913.2)
    # Night 4: a second test measured the same context: the night's figure is the median.
    _night(store, "n4", 4, 913.0)
    _night(store, "n4", 4, 913.6, test="t::y")
    store.close()
    return url


def test_one_figure_per_context_per_night(store_url):
    store = ResultsStore(store_url)
    key = context_key(_measurement(1.0).context.as_match())
    nights = nights_of(store.history(key))
    store.close()
    assert [(n.run_id, round(n.value, 1)) for n in nights] == [
        ("n1", 941.4),
        ("n2", 941.5),
        ("n3", 913.2),
        ("n4", 913.3),
    ]


def test_a_regression_is_listed_until_accepted_and_again_after_the_undo(store_url, capsys):
    assert main(["regressions", "--db", store_url]) == Exit.REGRESSION
    listed = capsys.readouterr().out
    assert (
        "regression since run n3 (2 nights, first seen 2023-11-17): 941.5 -> 913.2 Mbit/s (-3.0 %)" in listed
    )
    assert main(["accept", "--context", "board->peer", "--db", store_url]) == Exit.BAD_CONFIG  # no --why
    assert "say why" in capsys.readouterr().err
    assert (
        main(["accept", "--context", "board->peer", "--why", "new driver", "--who", "al", "--db", store_url])
        == 0
    )
    said = capsys.readouterr().out
    assert "accepted: accept #1: run n3 (one context) by al at " in said and "pinet accept --undo 1" in said
    assert main(["regressions", "--db", store_url]) == 0
    assert "accepted this week: accept #1: run n3" in capsys.readouterr().out
    store = ResultsStore(store_url)
    key = context_key(_measurement(1.0).context.as_match())
    standing = standing_before(store, key, None)
    assert [n.run_id for n in standing.accepted] == ["n3", "n4"] and standing.accepted_by is not None
    store.close()
    assert main(["accept", "--undo", "1", "--who", "al", "--db", store_url]) == 0
    assert main(["regressions", "--db", store_url]) == Exit.REGRESSION
    assert "regression since run n3 (2 nights" in capsys.readouterr().out


def test_accepting_a_run_covers_its_contexts_and_unknown_names_are_clear_errors(store_url, capsys):
    assert main(["accept", "n3", "--why", "kernel 6.12 is slower here", "--db", store_url]) == 0
    assert "(every context)" in capsys.readouterr().out
    assert main(["regressions", "--db", store_url]) == 0
    assert main(["accept", "n9", "--why", "x", "--db", store_url]) == Exit.BAD_CONFIG
    assert "n9: no such run" in capsys.readouterr().err
    assert main(["accept", "--context", "nowhere", "--why", "x", "--db", store_url]) == Exit.BAD_CONFIG
    assert "names no context" in capsys.readouterr().err


def test_bisect_since_change_takes_the_accepted_and_the_regressed_level(store_url, capsys):
    from pytest_pinet.cli.accept import since_change_references
    from pytest_pinet.errors import PinetError

    good, bad = since_change_references("board->peer", store_url)
    assert [round(v, 1) for v in next(iter(good.values.values()))] == [941.4, 941.5]
    assert [round(v, 1) for v in next(iter(bad.values.values()))] == [913.2, 913.3]
    assert bad.run_id == "n3" and "since run n3" in capsys.readouterr().out
    assert main(["accept", "n3", "--why", "known", "--db", store_url]) == 0
    with pytest.raises(PinetError, match="in no regression"):
        since_change_references("board->peer", store_url)


def test_a_store_shared_by_labs_answers_for_one_lab_with_lab(store_url, capsys):
    """Several labs' runners write one store; --lab scopes regressions, trends and runs."""
    own_lab = _measurement(1.0).context.lab
    assert main(["regressions", "--db", store_url, "--lab", own_lab]) == Exit.REGRESSION
    assert "regression since run n3" in capsys.readouterr().out
    assert main(["regressions", "--db", store_url, "--lab", "another-lab"]) == 0
    assert "no context in regression" in capsys.readouterr().out
    assert main(["runs", "--db", store_url, "--lab", "another-lab"]) == 0
    assert capsys.readouterr().out.strip() == ""
    assert main(["runs", "--db", store_url, "--lab", "pinet"]) == 0
    assert capsys.readouterr().out.count(" measurements") == 4
    assert main(["trends", "--db", store_url, "--lab", "another-lab"]) == 0
    assert "no change points" in capsys.readouterr().out
