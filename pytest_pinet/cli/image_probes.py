"""Probes of images and the halving search over them: what ``pinet bisect`` runs to find the
first image of an ordered list whose figures fall below the good end's, and what ``pinet
accept`` reads of a probe's references.

Kernel test robots bisect a slowdown to the first bad commit; a board lab bisects to the
first bad image.  Given images ordered from known good to known bad and a selection of the
suite, each probe flashes one image and runs the selection ``--pinet-repeat`` times in one
pytest session (``--pinet-image NAME``), so every image's figure per context is a set of
repeated measurements, never one run.  A probe is bad when, in any context, the mean of its
repetitions falls below the good end's band: the one-sided 99.5 % prediction bound of a
nightly's baseline, for a mean of m runs instead of one (Student's t over the good end's
repetitions, ``t x s x sqrt(1/n + 1/m)``, at least 1 %).

``metric="latency"`` bisects latency under load instead (each run's p90 RTT under load, the
figure the latency baseline follows; lower is better): a probe is then bad when its mean
rises *above* the good end's band.

Both ends are measured first: when the bad end does not differ from the good end beyond
that band, bisect says so and stops.  Otherwise it halves the interval between the last good
and the first bad image until they are neighbours: about log2(N) provisionings beyond the
two ends.  Every probe's measurements are in the store (the runs bisect prints), and the
whole bisection is kept as ``bisect.json`` beside them.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ..judge.standing import Night
from ..judge.stats import prediction_band
from ..model.context_key import ContextKey, context_key
from ..record.image_table import IMAGE_FIELDS
from ..record.side_by_side import NOT_MEASUREMENTS, label_of
from ..record.store_rows import latency_followed_of
from ..suite import SUITE_DIR


@dataclass
class Probe:
    """One image as bisect measured it."""

    image: str
    run_id: str
    values: dict[str, list[float]]  # context (without image, kernel, OS) -> one figure per repetition
    kernel: str = ""
    os: str = ""
    verdict: str = ""  # "good", "bad" (below the good end's band), "reference"
    worst: str = ""  # the context and figures that decided a bad verdict
    seconds: float = 0.0
    metric: str = "goodput"  # or "latency": the p90 RTT under load, ms, lower is better

    def median(self, key: str) -> float | None:
        """The median of the repetitions of context ``key``."""
        found = self.values.get(key)
        return statistics.median(found) if found else None


@dataclass
class Bisection:
    """What bisect found: the probes in the order taken, and the first bad image."""

    images: list[str]
    probes: list[Probe] = field(default_factory=list)
    first_bad: str | None = None
    outcome: str = ""  # "found", "no-difference", "lab-error"
    message: str = ""


class ProbeFailed(Exception):
    """A probe measured nothing (a lab fault, a broken image): bisect cannot go on."""


UNITS = {"goodput": "Mbit/s", "latency": "ms p90"}
# One comparison of two images, not a night of many contexts: the one-sided 99.5 % bound.
BISECT_CONFIDENCE = 0.995


def figure_of(row: dict[str, Any], metric: str) -> float | None:
    """A results row's figure of ``metric`` (None: not measured; never 0)."""
    if metric == "latency":
        return latency_followed_of(row)
    value = row.get("goodput_mbps")
    return float(value) if isinstance(value, int | float) else None


def values_by_context(
    rows: Sequence[dict[str, Any]], metric: str = "goodput"
) -> tuple[dict[str, list[float]], str, str]:
    """Figures per context of one probe's measurements, and the kernel and OS they ran on."""
    values: dict[str, list[float]] = {}
    kernel = os_name = ""
    for row in rows:
        figure = figure_of(row, metric)
        if row.get("verdict") in NOT_MEASUREMENTS or figure is None or row.get("error"):
            continue
        context = row.get("context", {})
        kernel, os_name = context.get("kernel", kernel), context.get("os", os_name)
        key = context_key({**context, **{name: "" for name in IMAGE_FIELDS}})
        values.setdefault(key, []).append(figure)
    return values, kernel, os_name


def band(reference: Sequence[float], repetitions: int, min_band_percent: float) -> float:
    """How far below the good end's mean the mean of ``repetitions`` more runs may fall by noise
    alone: the one-sided 99.5 % prediction bound ``t(n-1) x s x sqrt(1/n + 1/m)``, at least
    ``min_band_percent`` of the good end's mean."""
    n = len(reference)
    centre = statistics.fmean(reference)
    spread = statistics.stdev(reference) if n > 1 else 0.0
    noise = prediction_band(spread, n, BISECT_CONFIDENCE, future=repetitions)
    return max(noise, min_band_percent / 100.0 * centre)


def judge_probe(good: Probe, probe: Probe, min_band_percent: float = 1.0) -> tuple[str, str]:
    """("bad", why) when a context of ``probe`` is worse than ``good``'s band (below it; above
    it for latency, where lower is better), else ("good", "")."""
    worst: tuple[float, str] | None = None
    sign = -1.0 if good.metric == "latency" else 1.0
    for key, reference in good.values.items():
        mine = probe.values.get(key)
        if not mine or len(reference) < 2:
            continue
        centre, value = statistics.fmean(reference), statistics.fmean(mine)
        allowed = band(reference, len(mine), min_band_percent)
        if sign * (value - centre) < -allowed:
            change = 100.0 * (value - centre) / centre
            if worst is None or sign * change < sign * worst[0]:
                why = (
                    f"{label_of(key)}: mean {value:.1f} {UNITS[good.metric]} of {len(mine)} runs vs "
                    f"{centre:.1f} +- {allowed:.1f} of {len(reference)} ({change:+.1f} %"
                    f"{', lower is better' if sign < 0 else ''})"
                )
                worst = (change, why)
    if worst is None:
        return "good", ""
    return "bad", worst[1]


def bisect_key(stored_key: str) -> str:
    """A store's context key as bisect keys its probes: without image, kernel and OS."""
    return str(ContextKey.parse(stored_key).without(IMAGE_FIELDS))


def references_of(
    stored_key: str, accepted: Sequence[Night], regressed: Sequence[Night], sign: float = 1.0
) -> tuple[Probe, Probe]:
    """The good and bad ends of ``pinet bisect --since-change``, from the store: the context's
    accepted nights and the nights of its persisting regression (one figure per night), so the
    ends are not measured again.  ``sign`` -1: the nights are latency's, mirrored
    (``record.nightly.LATENCY``), and the ends get their figures in ms."""
    key = bisect_key(stored_key)
    metric = "latency" if sign < 0 else "goodput"
    good = Probe(
        "accepted level",
        accepted[-1].run_id,
        {key: [sign * n.value for n in accepted]},
        verdict="reference",
        metric=metric,
    )
    bad = Probe(
        "regressed level", regressed[0].run_id, {key: [sign * n.value for n in regressed]}, metric=metric
    )
    return good, bad


def bisect(
    images: Sequence[str],
    measure: Callable[[str], Probe],
    say: Callable[[str], None] = print,
    min_band_percent: float = 1.0,
    references: tuple[Probe, Probe] | None = None,
) -> Bisection:
    """Find the first bad image of ``images`` (good first, bad last) with ``measure``.

    ``references``: the good and bad ends' figures already known (``references_of``): the
    ends are then not measured, and each probe is judged against the good reference."""
    result = Bisection(list(images))
    if len(images) < 2:
        raise ValueError("bisect needs at least two images: a known good one first, a known bad one last")

    def probe(index: int) -> Probe:
        say(f"bisect: flashing and measuring {images[index]} ({len(result.probes) + 1}. provisioning)")
        taken = measure(images[index])
        result.probes.append(taken)
        if not taken.values:
            raise ProbeFailed(f"{images[index]}: the selection measured nothing (run {taken.run_id})")
        return taken

    try:
        good = references[0] if references else probe(0)
        good.verdict = "reference"
        if len(good.values[next(iter(good.values))]) < 2:
            raise ProbeFailed("the good end has fewer than 2 repetitions per context: use --repeat 2 or more")
        say(_line(good, good))
        bad = references[1] if references else probe(len(images) - 1)
        result.probes.extend(references or ())
        bad.verdict, bad.worst = judge_probe(good, bad, min_band_percent)
        say(_line(good, bad))
        if bad.verdict != "bad":
            result.outcome = "no-difference"
            result.message = (
                f"{images[0]} and {images[-1]} do not differ beyond noise in any context: nothing to bisect"
            )
            return result
        low, high = 0, len(images) - 1
        while high - low > 1:
            middle = (low + high) // 2
            taken = probe(middle)
            taken.verdict, taken.worst = judge_probe(good, taken, min_band_percent)
            say(_line(good, taken))
            if taken.verdict == "bad":
                high = middle
            else:
                low = middle
        result.first_bad = images[high]
        result.outcome = "found"
        worst = next((p.worst for p in result.probes if p.image == images[high]), bad.worst)
        result.message = f"first bad image: {images[high]} (last good: {images[low]}); {worst}"
    except ProbeFailed as exc:
        result.outcome = "lab-error"
        result.message = f"bisect stopped: {exc}"
    return result


def _line(good: Probe, probe: Probe) -> str:
    """One probe for people: its figures per context against the good end's, and its verdict."""
    parts = []
    for key in sorted(good.values):
        mine, theirs = probe.median(key), good.median(key)
        if mine is None or theirs is None:
            continue
        change = "" if probe is good else f" ({100.0 * (mine - theirs) / theirs:+.1f} %)"
        # Whole Mbit/s on a GbE link; a slow cable's figures keep their decimals.
        reps = ", ".join(f"{v:.0f}" if v >= 100 else f"{v:.2f}" for v in probe.values.get(key, []))
        parts.append(f"    {label_of(key)}: median {mine:.1f} {UNITS[probe.metric]}{change} [{reps}]")
    head = f"  {probe.image}: kernel {probe.kernel or '?'}, {probe.os or '?'}, run {probe.run_id}"
    head += f": {probe.verdict}"
    return "\n".join([head, *parts])


def names_tests(selection: Sequence[str]) -> bool:
    """True when ``selection`` names test files or node ids itself (else: the shipped suite)."""
    return any(
        not arg.startswith("-") and ("::" in arg or arg.endswith(".py") or Path(arg).is_dir())
        for arg in selection
    )


def pytest_probe(
    selection: Sequence[str],
    repeat: int,
    results: Path,
    db: str,
    *,
    timeout: float = 3600,
    metric: str = "goodput",
) -> Callable[[str], Probe]:
    """A ``measure`` that runs the suite's ``selection`` on one image in a pytest session."""

    def measure(image: str) -> Probe:
        out = results / image
        started = time.monotonic()
        argv = [
            sys.executable,
            "-m",
            "pytest",
            *([] if names_tests(selection) else [str(SUITE_DIR)]),
            *selection,
            f"--pinet-image={image}",
            f"--pinet-repeat={repeat}",
            "--pinet-remeasure=0",  # exactly the repetitions asked for, none added by thresholds
            f"--pinet-results={out}",
            "-p",
            "no:randomly",
            "-p",
            "no:cacheprovider",
            "-q",
        ]
        if db:
            argv.append(f"--pinet-db={db}")
        done = subprocess.run(
            argv, capture_output=True, text=True, timeout=timeout, env=dict(os.environ), check=False
        )
        (out).mkdir(parents=True, exist_ok=True)
        (out / "pytest.log").write_text(done.stdout + done.stderr, encoding="utf-8")
        runs = sorted(out.glob("*/measurements.jsonl"), key=lambda p: p.stat().st_mtime)
        rows = (
            [json.loads(line) for line in runs[-1].read_text().splitlines() if line.strip()] if runs else []
        )
        values, kernel, os_name = values_by_context(rows, metric)
        run_id = (
            runs[-1].parent.name
            if runs
            else f"(none: pytest exit {done.returncode}, see {out / 'pytest.log'})"
        )
        return Probe(
            image, run_id, values, kernel, os_name, seconds=time.monotonic() - started, metric=metric
        )

    return measure


def save(result: Bisection, path: Path) -> Path:
    """The whole bisection as JSON, beside the probes' results."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(asdict(result), indent=1), encoding="utf-8")
    return path
