"""The results store on SQLite and on a real PostgreSQL server the test starts."""

from __future__ import annotations

import socket
import tempfile
from pathlib import Path

import pytest

from pytest_pinet.errors import ConfigError
from pytest_pinet.judge.fairness import jain_fairness
from pytest_pinet.model import HostFacts, InterfaceFacts, Measurement, TcpDetail, TrafficContext
from pytest_pinet.model.context_key import context_key
from pytest_pinet.record.allure_history import lab_history
from pytest_pinet.record.store import ResultsStore

BOARD = HostFacts(
    "pi",
    "6.1.0",
    "Debian 12",
    "debian",
    "12",
    "",
    4,
    None,
    None,
    None,
    None,
    None,
    {"eth0": InterfaceFacts("eth0", "r8152", None, "fw1", None, 1000, "full", 1500)},
)


def _measurement(goodput: float, direction: str = "board->peer", started: float = 1.0) -> Measurement:
    context = TrafficContext(
        lab="pinet",
        scenario="ethernet",
        board="pi",
        peer="pc",
        link="eth",
        adapter="builtin",
        direction=direction,
        duplex="half",
        streams=2,
        duration_s=20,
        omit_s=2,
        link_speed_mbps=1000,
        mtu=1500,
        kernel="6.1.0",
        os="Debian 12",
    )
    return Measurement(
        test_id="t::x",
        context=context,
        goodput_mbps=goodput,
        limit_mbps=941.5,
        started=started,
        finished=started + 22,
        detail=TcpDetail(goodput + 1, 3, (goodput / 2, goodput / 2), 10.0, 20.0, "iperf 3.12"),
        interval_mbps=(goodput, goodput),
        facts={"board": BOARD},
    )


def exercise_store(store: ResultsStore) -> None:
    store.add_run("r1", "pinet", "0.1.0")
    store.add_run("r1", "pinet", "0.1.0")  # idempotent (xdist workers)
    first = store.add("r1", _measurement(942.0, started=1.0), "0.1.0")
    store.add_run("r2", "pinet", "0.1.0")
    store.add("r2", _measurement(914.0, started=100.0), "0.1.0")
    store.add("r2", _measurement(930.0, direction="peer->board", started=101.0), "0.1.0")
    key = context_key(_measurement(1).context.as_match())
    # A verdict decides whether a row is evidence: it gives its (context, run) pair a new
    # revision, the highest of the context, and counts no new run (PostgreSQL does it in the
    # update's own statement, SQLite in three).
    all_pairs, (before_r2, cut) = store.standing_pairs(key, None)[0], store.standing_pairs(key, "r2")
    assert all_pairs is not None and all_pairs.runs == 2 and before_r2 is not None and before_r2.runs == 1
    assert cut == 100.0
    store.set_verdict(first, "pass", "measured 942.0")
    moved, (r1_moved, _) = store.standing_pairs(key, None)[0], store.standing_pairs(key, "r2")
    assert moved is not None and moved.runs == 2 and moved.revision > all_pairs.revision
    assert r1_moved is not None and r1_moved.runs == 1 and r1_moved.revision == moved.revision
    store.set_latency_verdict(first, "pass", "p99 2.0 ms")
    assert store.standing_pairs(key, None)[0] == type(moved)(2, moved.revision + 1)
    assert store.count() == 3 and store.count("r2") == 2
    history = store.history(key)
    assert [h.goodput_mbps for h in history] == [942.0, 914.0]  # oldest first, same context only
    assert history[0].verdict == "pass" and history[0].kernel == "6.1.0"
    assert history[0].intervals == (942.0, 942.0)
    assert [h.run_id for h in store.history(key, before_run="r2")] == ["r1"]
    assert len(store.context_keys()) == 2
    # Acceptances: who, when, why; undone ones stay in the table but no longer stand.
    accepted = store.accept("r2", key, "new driver, slower by design", "alice")
    every = store.accept("r2", "*", "lab moved", "bob")
    assert [(a.id, a.run_id, a.context_key, a.who) for a in store.acceptances()] == [
        (accepted.id, "r2", key, "alice"),
        (every.id, "r2", "*", "bob"),
    ]
    assert store.undo_acceptance(accepted.id, "carol").why == "new driver, slower by design"
    assert [a.id for a in store.acceptances()] == [every.id]
    assert store.acceptances(since=every.at + 1) == []
    with pytest.raises(ConfigError, match="say why"):
        store.accept("r2", key, " ", "alice")
    with pytest.raises(ConfigError, match="no such run"):
        store.accept("r9", key, "why", "alice")
    with pytest.raises(ConfigError, match="no such context"):
        store.accept("r2", "board=nope", "why", "alice")
    with pytest.raises(ConfigError, match="no such standing acceptance"):
        store.undo_acceptance(accepted.id, "carol")
    _exercise_allure_history(store)


def _half_built(store: ResultsStore, path: Path) -> None:
    with lab_history(store, "pinet", path) as history:
        history.write_text('{"uuid": "half-built"}\n')
        raise RuntimeError("allure generate failed")


def _exercise_allure_history(store: ResultsStore) -> None:
    """Each lab's Allure history lives in the store: what Allure added while building a report
    is kept, another lab's is apart, and a report that failed adds nothing."""
    assert store.lab_of_run("r1") == "pinet" and store.lab_of_run("nope") is None
    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / "history.jsonl"
        for night in ("n1", "n2"):
            with lab_history(store, "pinet", path) as history:
                written = history.read_text().splitlines()
                # Allure appends a line, and may drop its oldest (its history limit)
                history.write_text("\n".join([*written[1:], f'{{"uuid": "{night}"}}']) + "\n")
        with lab_history(store, "other-lab", path) as history:
            assert history.read_text() == ""  # a lab of its own starts empty
            history.write_text('{"uuid": "o1"}\n')
        with pytest.raises(RuntimeError, match="allure generate failed"):
            _half_built(store, path)
    assert store.allure_history("pinet") == ['{"uuid": "n1"}', '{"uuid": "n2"}']
    assert store.allure_history("other-lab") == ['{"uuid": "o1"}']


def test_sqlite_store_in_wal_mode(tmp_path):
    store = ResultsStore(f"sqlite:///{tmp_path}/results.sqlite")
    try:
        exercise_store(store)
        mode = store._conn.execute("PRAGMA journal_mode").fetchone()[0]
        assert mode == "wal"
    finally:
        store.close()
    # Committed: a new connection (another process after a crash) sees every row.
    again = ResultsStore(f"sqlite:///{tmp_path}/results.sqlite")
    assert again.count() == 3
    again.close()


def test_jain_fairness():
    assert jain_fairness([100.0] * 10) == pytest.approx(1.0)
    assert jain_fairness([1000.0] + [0.0] * 9) == pytest.approx(0.1)
    assert jain_fairness([]) is None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_unreachable_postgresql_is_a_clear_error_with_the_password_masked():
    with pytest.raises(ConfigError) as info:
        ResultsStore(f"postgresql://lab:hunter2@127.0.0.1:{_free_port()}/results")
    assert "hunter2" not in str(info.value)
    assert "lab:***@127.0.0.1" in str(info.value)
