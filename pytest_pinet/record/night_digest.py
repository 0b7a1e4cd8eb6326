"""What got worse last night, first: the report's opening lines for a lab engineer.

The regressions new tonight, those that persist (since which run, how many nights, the
change) and the changes accepted in the last week, of goodput and of latency under load (a
p90 that rose against its accepted level: the half of a qdisc's story goodput never shows);
counts of regressions, floors missed,
undecided verdicts and lab faults; and the largest drops against each context's *accepted*
baseline (judge/standing.py: a regressed night never becomes the baseline by itself), taken
from the store and the run's facts.  They
become the Allure report's "Variables" block (the first thing on its results page) and a
"morning" page among its global attachments, so the report reads as a checklist before
anyone opens a test.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..judge.detection import DetectionPower, detection_power
from ..judge.standing import EVERY_CONTEXT, Standing
from ..model.context_key import ContextKey
from .detection_page import detection_markdown
from .lab_nights import LabNight, lab_nights, labs_markdown
from .nightly import GOODPUT, LATENCY, Metric, nights_of
from .red_changes import RedChange, change_of
from .run_summary import left_out
from .standing_memo import standing_before
from .store import ResultsStore, StoredMeasurement

LABEL_KEYS = (
    "scenario",
    "direction",
    "duplex",
    "profile",
    "qdisc",
    "rate_target_mbps",
    "opposite_rate_mbps",
    "filesystem",
    "block_bytes",
)
WEEK_S = 7 * 86400.0
SHOWN = 3  # regressions of each kind in the Variables block (the morning page has them all)


@dataclass(frozen=True)
class Drop:
    """One context's figure against its own history."""

    context: str
    value: float
    baseline: float
    change_pct: float
    verdict: str


@dataclass(frozen=True)
class Regressed:
    """A context in regression tonight: new, or persisting since an earlier run."""

    context: str
    accepted: float  # the accepted level
    tonight: float
    change_pct: float
    since_run: str = ""  # a persisting one: the run it was first seen in
    first_seen: str = ""  # ... its date
    nights: int = 1
    unit: str = GOODPUT.unit  # latency: LATENCY.short_unit
    catches_pct: float | None = None  # the drop one night of the context catches (judge.detection)
    changed: RedChange | None = None  # what differs on its path since its last good night

    def line(self) -> str:
        """One line for the Variables block and the morning page."""
        figures = f"{self.accepted:.1f} -> {self.tonight:.1f} {self.unit} ({self.change_pct:+.1f} %)"
        if self.catches_pct is not None:
            figures += f"; one night catches a {self.catches_pct:.1f} % change"
        changed = f"; {self.changed.text()}" if self.changed is not None and self.changed.lines else ""
        if not self.since_run:
            return f"{self.context}: {figures}{changed}"
        since = f"since run {self.since_run} ({self.nights} nights, first seen {self.first_seen})"
        return f"{self.context}: {since}, {figures}{changed}"


@dataclass(frozen=True)
class NightDigest:
    """The night in a few numbers."""

    run_id: str
    measured: int
    regressions: int
    below_threshold: int
    undecided: int
    lab_faults: int
    drops: list[Drop] = field(default_factory=list)
    new: list[Regressed] = field(default_factory=list)
    persisting: list[Regressed] = field(default_factory=list)
    accepted: list[str] = field(default_factory=list)  # acceptances of the last week, one line each
    latency_new: list[Regressed] = field(default_factory=list)  # p90 under load rose: new tonight
    latency_persisting: list[Regressed] = field(default_factory=list)  # ... and since an earlier run
    labs: list[LabNight] = field(default_factory=list)  # every lab of a shared store, side by side
    powers: list[tuple[str, DetectionPower]] = field(default_factory=list)  # each context's, goodput
    # Boards the night left out (record/board_service.py): "pi5 out of service since run R: ..."
    out_of_service: list[str] = field(default_factory=list)

    def variables(self) -> dict[str, str]:
        """The Allure "Variables" block, in reading order (latency regressions after the drops).

        Allure shows the first eight entries of a long block before "Show more": the
        regressions (new, then persisting, then the week's acceptances) come first, a few of
        each; the morning page lists them all."""
        split = f"{len(self.new)} new tonight, {len(self.persisting)} persisting"
        found: dict[str, str] = {"Regressions": f"{self.regressions} ({split})"}
        for n, regressed in enumerate(self.new[:SHOWN], 1):
            found[f"New regression {n}"] = regressed.line()
        for n, regressed in enumerate(self.persisting[:SHOWN], 1):
            found[f"Persisting regression {n}"] = regressed.line()
        found["Accepted this week"] = str(len(self.accepted))
        for n, line in enumerate(self.accepted[:SHOWN], 1):
            found[f"Accepted {n}"] = line
        found |= {
            "Below threshold": str(self.below_threshold),
            "Undecided": str(self.undecided),
            "Lab faults": str(self.lab_faults),
            "Measured": str(self.measured),
        }
        if self.out_of_service:
            found["Out of service"] = "; ".join(self.out_of_service)
        for n, drop in enumerate(self.drops, 1):
            found[f"Largest drop {n}"] = (
                f"{drop.change_pct:+.1f} %  {drop.context}  ({drop.baseline:.1f} -> {drop.value:.1f} Mbit/s"
                f"{', ' + drop.verdict if drop.verdict else ''})"
            )
        # After the counts and drops: the first eight entries (what Allure shows before "Show
        # more") stay goodput's checklist; the morning page lists latency regressions too.
        found |= self._latency_variables()
        found["Run"] = self.run_id
        return found

    def _latency_variables(self) -> dict[str, str]:
        """The latency regressions' lines: their count, then up to SHOWN of them."""
        split = f"{len(self.latency_new)} new tonight, {len(self.latency_persisting)} persisting"
        found = {"Latency regressions": f"{len(self.latency_new) + len(self.latency_persisting)} ({split})"}
        for n, regressed in enumerate((self.latency_new + self.latency_persisting)[:SHOWN], 1):
            found[f"Latency regression {n}"] = regressed.line()
        return found

    def markdown(self) -> str:
        """The morning page: the checklist and the drops as a table."""
        lines = [
            f"# Night {self.run_id}: what got worse",
            "",
            f"- **{self.regressions}** regressions against baseline",
            f"- **{self.below_threshold}** below their threshold",
            f"- **{self.undecided}** undecided (the measured interval holds the line)",
            f"- **{self.lab_faults}** lab faults (the lab's, never counted as the boards')",
            f"- {self.measured} measurements in all",
            *(f"- **out of service**: {line}" for line in self.out_of_service),
            "",
            f"## New regressions tonight: {len(self.new)}",
            "",
            *(f"- {r.line()}" for r in self.new),
            "",
            f"## Persisting regressions: {len(self.persisting)} (red until accepted: `pinet accept`)",
            "",
            *(f"- {r.line()}" for r in self.persisting),
            "",
            f"## Latency regressions (RTT under load, p90): {len(self.latency_new)} new tonight, "
            f"{len(self.latency_persisting)} persisting",
            "",
            *(f"- new: {r.line()}" for r in self.latency_new),
            *(f"- persisting: {r.line()}" for r in self.latency_persisting),
            "",
            f"## Accepted in the last week: {len(self.accepted)}",
            "",
            *(f"- {line}" for line in self.accepted),
            "",
            "## Largest drops against the accepted baseline",
            "",
        ]
        if self.drops:
            lines += [
                "| change | context | accepted baseline Mbit/s | tonight Mbit/s | verdict |",
                "|---:|---|---:|---:|---|",
            ]
            lines += [
                f"| {d.change_pct:+.1f} % | {d.context} | {d.baseline:.1f} | {d.value:.1f} "
                f"| {d.verdict or '-'} |"
                for d in self.drops
            ]
        else:
            lines.append("No context fell below its own history.")
        lines += ["", *detection_markdown(self.powers)]
        if self.labs:
            lines += ["", *labs_markdown(self.labs)]
        return "\n".join(lines).rstrip("\n") + "\n"


def context_text(key: str) -> str:
    """A stored context key as the words a lab engineer reads."""
    parts = ContextKey.parse(key)
    # As the metric sets name a context: board, image, adapter (else link), then the rest.
    head = [parts.get("board"), parts.get("image"), parts.get("adapter") or parts.get("link")]
    return " / ".join(v for v in [*head, *(parts.get(k) for k in LABEL_KEYS)] if v)


def scope_text(key: str) -> str:
    """What an acceptance covers, in words: one context, or every context of its run."""
    return "every context of the run" if key == EVERY_CONTEXT else context_text(key)


def _verdict(row: StoredMeasurement, metric: Metric) -> str:
    return row.verdict if metric is GOODPUT else row.latency_verdict


def _regressed(
    store: ResultsStore,
    run_id: str,
    rows: list[StoredMeasurement],
    key: str,
    metric: Metric,
    floor: float | None,
) -> tuple[Regressed | None, Drop | None, DetectionPower | None]:
    """Context ``key`` tonight in ``metric``: a regression (new or persisting), for goodput its
    drop against the accepted baseline, and what its accepted nights let one night catch."""
    own = [r for r in rows if r.context_key == key]
    tonight = nights_of(own, metric)
    standing = standing_before(store, key, run_id, metric=metric)
    power = detection_power(standing.accepted, floor=floor if metric is GOODPUT else None)
    if not tonight or not standing.accepted:
        return None, None, power
    baseline = metric.shown(statistics.median(standing.history))
    value = metric.shown(tonight[0].value)
    if baseline <= 0:
        return None, None, power
    change = 100.0 * (value - baseline) / baseline
    verdict = _verdict(own[-1], metric)  # a re-measured context: its last attempt
    drop = (
        Drop(context_text(key), value, baseline, change, verdict)
        if metric is GOODPUT and change < 0
        else None
    )
    if "regression" not in verdict:
        return None, drop, power
    issues = store.known_issues()

    def changed(good: str | None, red: str) -> RedChange:
        return change_of(store, key, good, red, issues)

    return _regression(key, standing, baseline, value, change, metric, power, changed, run_id), drop, power


def _regression(
    key: str,
    standing: Standing,
    baseline: float,
    value: float,
    change: float,
    metric: Metric,
    power: DetectionPower | None,
    changed: Callable[[str | None, str], RedChange],
    run_id: str,
) -> Regressed:
    unit = metric.short_unit or metric.unit
    catches = power.one_night_pct if power is not None else None
    good = standing.accepted[-1].run_id if standing.accepted else None
    # Tonight's verdict says whether it regressed; the standing says since when.
    if standing.since is None:
        return Regressed(
            context_text(key),
            baseline,
            value,
            change,
            unit=unit,
            catches_pct=catches,
            changed=changed(good, run_id),
        )
    first = standing.since
    before = [n for n in standing.accepted if n.started < first.started]
    good = before[-1].run_id if before else None
    day = time.strftime("%Y-%m-%d", time.gmtime(first.started))
    nights = len(standing.regressed) + 1
    return Regressed(
        context_text(key),
        baseline,
        value,
        change,
        first.run_id,
        day,
        nights,
        unit,
        catches,
        changed(good, first.run_id),
    )


def night_digest_of(
    store: ResultsStore, run_id: str, facts: list[dict[str, Any]], top: int = 5
) -> NightDigest:
    """The night of ``run_id``: its verdict counts, its new and persisting regressions of
    goodput and of latency under load, the last week's acceptances, its lab faults and its
    ``top`` largest drops against the accepted baselines."""
    rows = store.of_run(run_id)
    latest = {row.context_key: row for row in rows}  # a re-measured context: its last attempt
    drops: list[Drop] = []
    found: dict[str, tuple[list[Regressed], list[Regressed]]] = {
        GOODPUT.name: ([], []),
        LATENCY.name: ([], []),
    }
    floors = store.floors(list(latest))
    powers: list[tuple[str, DetectionPower]] = []
    for key in latest:
        for metric in (GOODPUT, LATENCY):
            regressed, drop, power = _regressed(store, run_id, rows, key, metric, floors.get(key))
            if power is not None and metric is GOODPUT:
                powers.append((context_text(key), power))
            if drop is not None:
                drops.append(drop)
            if regressed is not None:
                new_or_persisting = found[metric.name][1 if regressed.since_run else 0]
                new_or_persisting.append(regressed)
    # What failed first (a regression, a floor missed), then the rest, each by its drop: a
    # noisy context that moved a lot but passed must not hide a GbE link that regressed.
    drops.sort(
        key=lambda d: ("regression" not in d.verdict and "below-threshold" not in d.verdict, d.change_pct)
    )
    verdicts = [row.verdict for row in latest.values()]
    week = store.acceptances(since=time.time() - WEEK_S)
    new, persisting = found[GOODPUT.name]
    latency_new, latency_persisting = found[LATENCY.name]
    return NightDigest(
        run_id=run_id,
        measured=len(rows),
        regressions=sum("regression" in v for v in verdicts),
        below_threshold=sum("below-threshold" in v for v in verdicts),
        undecided=sum("undecided" in v for v in verdicts),
        lab_faults=sum(1 for fact in facts if fact.get("kind") == "lab-fault"),
        drops=drops[:top],
        new=sorted(new, key=lambda r: r.change_pct),
        persisting=sorted(persisting, key=lambda r: r.change_pct),
        accepted=[f"{a.explain()} [{scope_text(a.context_key)}]" for a in week],
        latency_new=sorted(latency_new, key=lambda r: -r.change_pct),
        latency_persisting=sorted(latency_persisting, key=lambda r: -r.change_pct),
        labs=lab_nights(store) if len(store.labs()) > 1 else [],
        powers=powers,
        out_of_service=list(left_out(facts).values()),
    )
