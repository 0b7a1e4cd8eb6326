"""Comparing two runs: the noise band comes from the context's other runs, and a run taken
out of the baselines stays in the store but out of every history."""

from __future__ import annotations

import pytest

from pytest_pinet.errors import ConfigError
from pytest_pinet.record.side_by_side import compare_runs, noise_of, table
from pytest_pinet.record.store import ResultsStore, StoredMeasurement

KEY = "lab=l|board=pi|peer=pc|link=eth|adapter=builtin|scenario=ethernet|direction=board->peer|duplex=half"


def _row(
    run: str, mbps: float, key: str = KEY, verdict: str = "pass", seconds: tuple[float, ...] = ()
) -> StoredMeasurement:
    return StoredMeasurement(0, run, "t", key, 0.0, mbps, "6.1", "os", "builtin", "pi", verdict, seconds)


def test_noise_is_learned_from_history_and_never_below_the_band():
    # too few runs to learn from, and no per-second samples: nobody can tell
    assert noise_of([940.0, 941.0]) == (None, "unknown (2 other runs, no per-second samples)")
    # the runs' own seconds: three standard errors of the difference, at least the 1 % floor
    steady, source = noise_of([], [944.0, 946.0, 945.0, 945.5], [915.0, 917.0, 916.0, 916.5])
    assert (steady, source) == (1.0, "per-second samples")
    shaky, _ = noise_of([], [900.0, 990.0, 930.0], [910.0, 980.0, 940.0])
    assert shaky is not None and shaky > 5.0
    quiet, source = noise_of([940.0, 940.5, 941.0, 940.2])
    assert quiet == 1.0 and source == "history (4 runs)"
    noisy, _ = noise_of([900.0, 940.0, 980.0, 920.0, 960.0])
    assert noisy == pytest.approx(3 * 1.4826 * 20 / 940 * 100)


def test_a_drop_beyond_noise_is_marked_and_missing_contexts_are_not_numbers():
    other = KEY.replace("board->peer", "peer->board")
    deltas = compare_runs(
        [_row("a", 940.0), _row("a", 941.0, other), _row("a", 10.0, verdict="lab-fault")],
        [_row("b", 910.0)],
        {KEY: [939.0, 940.0, 941.0]},
    )
    by_direction = {d.label.split(", ")[-2]: d for d in deltas}
    drop = by_direction["board->peer"]
    assert drop.a_mbps == 940.0 and drop.delta_pct == pytest.approx(-3.19, abs=0.01) and drop.beyond_noise
    gone = by_direction["peer->board"]
    assert gone.b_mbps is None and gone.delta_pct is None and not gone.beyond_noise
    assert table(deltas, "a", "b")[-1] == "1 of 2 contexts changed beyond noise"


def test_a_disk_context_with_one_other_run_is_not_called_a_change():
    disk = KEY.replace("ethernet", "storage")
    (delta,) = compare_runs([_row("a", 340.1, disk)], [_row("b", 281.7, disk)], {disk: [330.0]})
    assert delta.delta_pct == pytest.approx(-17.17, abs=0.01)
    assert delta.noise_pct is None and delta.beyond_noise is None
    assert "1 with unknown noise" in table([delta], "a", "b")[-1]


def test_an_excluded_run_leaves_the_history_but_not_the_store(tmp_path):
    store = ResultsStore(f"sqlite:///{tmp_path / 's.sqlite'}")
    try:
        store.add_run("r1", "lab", "0")
        with pytest.raises(ConfigError, match="say why"):
            store.exclude_run("r1", " ")
        with pytest.raises(ConfigError, match="no such run"):
            store.exclude_run("r9", "typo")
        store.exclude_run("r1", "cable swapped")
        assert store.runs()[0]["excluded"] == "cable swapped"
        assert store.include_run("r1") and not store.include_run("r1")
        assert store.runs()[0]["excluded"] is None
    finally:
        store.close()
