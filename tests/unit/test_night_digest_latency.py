"""The morning's digest names latency regressions beside goodput's (issue 34): a p99 under
load that rose against its accepted level, new tonight or persisting, in ms."""

from __future__ import annotations

from pytest_pinet.record.night_digest import night_digest_of
from pytest_pinet.record.store import StoredMeasurement

from ..fake_store import store_of_rows

ROUTED = "board=qpi|link=lan|scenario=routing|direction=download|qdisc=pfifo_fast"


def _row(run: str, at: float, p99: float, latency_verdict: str) -> StoredMeasurement:
    # The two slowest probes agree: the p90 the latency baseline follows is ``p99`` too.
    rtts = tuple(p99 * f for f in (0.8, 0.85, 0.9, 1.0, 1.0))
    return StoredMeasurement(
        0, run, "t", ROUTED, at, 9.4, "6.1", "os", "usb", "qpi", "pass", (9.4,), p99, rtts, latency_verdict
    )


def _clean_nights() -> list[StoredMeasurement]:
    return [_row(f"n{n}", float(n), p99, "pass") for n, p99 in enumerate((20.0, 20.4, 20.2, 20.1, 20.3), 1)]


def test_a_rise_in_p90_is_a_latency_regression_new_then_persisting(tmp_path):
    rows = [*_clean_nights(), _row("n6", 6.0, 60.0, "regression")]
    morning = night_digest_of(store_of_rows(rows, tmp_path / "n6.sqlite"), "n6", [])
    (regressed,) = morning.latency_new
    assert not morning.latency_persisting and not morning.new  # goodput held: no goodput regression
    assert (round(regressed.accepted, 1), regressed.tonight) == (20.2, 60.0)
    shown = morning.variables()
    assert shown["Latency regressions"] == "1 (1 new tonight, 0 persisting)"
    assert shown["Latency regression 1"] == (
        "qpi / lan / routing / download / pfifo_fast: 20.2 -> 60.0 ms RTT p90 under load (+197.0 %); "
        "one night catches a 16.2 % change"  # its accepted p90s wander by 0.8 %, a p90 of 5 probes by more
    )
    assert "- new: qpi / lan / routing / download / pfifo_fast: 20.2 -> 60.0 ms" in morning.markdown()

    rows.append(_row("n7", 7.0, 61.0, "regression"))
    night7 = night_digest_of(store_of_rows(rows, tmp_path / "n7.sqlite"), "n7", [])
    (still,) = night7.latency_persisting
    assert (still.since_run, still.nights) == ("n6", 2) and not night7.latency_new
    assert night7.variables()["Latency regressions"] == "1 (0 new tonight, 1 persisting)"


def test_a_fall_in_p90_is_no_regression(tmp_path):
    rows = [*_clean_nights(), _row("n6", 6.0, 5.0, "pass")]
    morning = night_digest_of(store_of_rows(rows, tmp_path / "n6.sqlite"), "n6", [])
    assert morning.latency_new == morning.latency_persisting == []
    assert morning.variables()["Latency regressions"] == "0 (0 new tonight, 0 persisting)"
