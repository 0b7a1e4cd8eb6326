"""pinet bisect's search and verdict, and the images-side-by-side table, on recorded figures."""

from __future__ import annotations

import math
import random

import pytest

from pytest_pinet.cli.image_probes import Probe, band, bisect, judge_probe, values_by_context
from pytest_pinet.record.image_table import image_table, side_by_side


def _row(image: str, goodput: float, samples=(), **context):
    base = {"lab": "l", "scenario": "ethernet", "board": "qpi", "link": "eth", "direction": "board->peer"}
    base.update(context)
    return {
        "context": {**base, "image": image, "kernel": f"k-{image}", "os": "Debian"},
        "goodput_mbps": goodput,
        "interval_mbps": list(samples),
    }


def _measure_with(first_bad: int, images, noise=0.02, seed=1):
    """A fake lab: images before ``first_bad`` measure ~500 Mbit/s, the rest 30 % less."""
    rng = random.Random(seed)
    calls = []

    def measure(image: str) -> Probe:
        calls.append(image)
        centre = 500.0 if images.index(image) < first_bad else 350.0
        rows = [_row(image, rng.gauss(centre, centre * noise)) for _ in range(4)]
        values, kernel, os_name = values_by_context(rows)
        return Probe(image, f"run-{image}", values, kernel, os_name)

    return measure, calls


@pytest.mark.parametrize("count", [2, 3, 5, 8, 16])
def test_bisect_names_the_first_bad_image_in_about_log2_provisionings(count):
    images = [f"img{n}" for n in range(count)]
    for first_bad in range(1, count):
        measure, calls = _measure_with(first_bad, images)
        result = bisect(images, measure, say=lambda _: None)
        assert result.outcome == "found" and result.first_bad == images[first_bad], result.message
        assert len(calls) <= 2 + math.ceil(math.log2(max(1, count - 1)))
        assert calls[:2] == [images[0], images[-1]]  # the two ends first
        assert f"first bad image: {images[first_bad]}" in result.message


def test_ends_that_do_not_differ_stop_the_bisection():
    images = ["a", "b", "c", "d"]
    measure, calls = _measure_with(99, images)  # nothing is slower
    result = bisect(images, measure, say=lambda _: None)
    assert result.outcome == "no-difference" and result.first_bad is None
    assert calls == ["a", "d"] and "do not differ beyond noise" in result.message


def test_a_probe_that_measured_nothing_stops_it_as_the_labs():
    def measure(image: str) -> Probe:
        return Probe(image, "run", {} if image == "b" else {"ctx": [1.0, 1.0]})

    result = bisect(["a", "b"], measure, say=lambda _: None)
    assert result.outcome == "lab-error" and "b: the selection measured nothing" in result.message


def test_the_band_is_the_prediction_bound_for_a_mean_of_m_runs():
    reference = [500.0, 510.0, 490.0, 505.0]
    # t(3) = 5.841, s = 8.54, sqrt(1/4 + 1/4) = 0.707
    assert band(reference, 4, 1.0) == pytest.approx(5.841 * 8.539 * 0.7071, rel=1e-3)
    assert band([500.0, 500.0], 4, 1.0) == pytest.approx(5.0)  # no spread: the 1 % floor
    good = Probe("a", "r", {"ctx": reference})
    assert judge_probe(good, Probe("b", "r", {"ctx": [480.0, 482.0, 478.0, 481.0]}))[0] == "good"
    verdict, why = judge_probe(good, Probe("b", "r", {"ctx": [440.0, 445.0, 442.0, 441.0]}))
    assert verdict == "bad" and "mean 442.0 Mbit/s of 4 runs vs 501.2 +- 35.3 of 4 (-11.8 %)" in why


def test_images_side_by_side_with_change_and_noise():
    rows = [
        _row("deb12", 500.0, [499, 501, 500, 502, 498]),
        _row("deb13", 450.0, [449, 451, 450, 452, 448]),
        _row("deb12", 90.0, [], scenario="storage"),
        _row("deb13", 95.0, [], scenario="storage"),
    ]
    images, table = side_by_side(rows)
    assert images == ["deb12", "deb13"]
    ethernet = next(cells for key, cells in table.items() if "scenario=ethernet" in key)
    assert ethernet["deb13"].delta_pct == pytest.approx(-10.0) and ethernet["deb13"].beyond_noise
    storage = next(cells for key, cells in table.items() if "scenario=storage" in key)
    assert storage["deb13"].beyond_noise is None  # no per-second samples: unknown, never a change
    lines = image_table(rows)
    assert "change against deb12" in lines[0]
    assert any("-10.0%!" in line for line in lines) and any("+5.6%?" in line for line in lines)
    assert image_table(rows[:1]) == []  # one image: nothing to put side by side


def test_since_change_takes_its_ends_from_the_store_and_measures_only_the_middle():
    from pytest_pinet.cli.image_probes import bisect_key, references_of
    from pytest_pinet.judge.standing import Night

    stored = "lab=l|board=qpi|peer=|link=eth|adapter=|scenario=ethernet|direction=board->peer|image=img7"
    accepted = [Night(f"n{n}", float(n), v) for n, v in enumerate((501.0, 499.0, 500.5), 1)]
    regressed = [Night(f"n{n}", float(n), v) for n, v in enumerate((350.5, 349.0), 4)]
    good, bad = references_of(stored, accepted, regressed)
    assert list(good.values) == [bisect_key(stored)] and "image=" not in bisect_key(stored).split("|")[-1]
    images = [f"img{n}" for n in range(8)]
    measure, calls = _measure_with(5, images)

    def same_context(image: str) -> Probe:
        probe = measure(image)
        return Probe(image, probe.run_id, {bisect_key(stored): next(iter(probe.values.values()))})

    result = bisect(images, same_context, say=lambda _: None, references=(good, bad))
    assert result.outcome == "found" and result.first_bad == "img5", result.message
    assert images[0] not in calls and images[-1] not in calls  # the ends were not measured again
    assert len(calls) <= math.ceil(math.log2(len(images) - 1))
    steady = [Night("n9", 9.0, 500.2), Night("n10", 10.0, 499.8)]
    nothing = bisect(
        images, same_context, say=lambda _: None, references=references_of(stored, accepted, steady)
    )
    assert nothing.outcome == "no-difference"
