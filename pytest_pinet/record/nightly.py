"""A context's stored rows as nights: one figure per context per run, and its standing.

A run may hold several rows of one context: a test measured again after a failing attempt,
or two tests that both measure the context (a throttled full-duplex test's free direction).
Counting each as a sample lets one night outvote the others (a re-measured degraded night
entered the baseline twice and made the degraded level the baseline at once).  So each test
gives its final attempt, and the night's figure is the median of its tests' final figures;
lab faults, hot boards, unjudged rows and excluded runs never count.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass

from ..judge.baseline import BaselinePolicy
from ..judge.standing import Night, Standing, standing_of
from ..judge.verdict import NOT_A_BASELINE_SAMPLE
from .store import ResultsStore, StoredMeasurement

MAX_NIGHTS = 60  # how far back the walk starts: enough for any window, cheap to replay


def nights_of(rows: Sequence[StoredMeasurement]) -> list[Night]:
    """One :class:`Night` per run of one context's ``rows``, oldest first."""
    finals: dict[str, dict[str, StoredMeasurement]] = {}
    for row in sorted(rows, key=lambda r: (r.started, r.id)):
        if row.verdict in NOT_A_BASELINE_SAMPLE:
            continue
        finals.setdefault(row.run_id, {})[row.test_id] = row  # a later attempt replaces an earlier
    nights = []
    for run_id, by_test in finals.items():
        final = list(by_test.values())
        samples = tuple(x for row in final for x in (row.intervals or (row.goodput_mbps,)))
        meta = {"kernel": final[-1].kernel, "os": final[-1].os, "adapter": final[-1].adapter}
        value = float(statistics.median(row.goodput_mbps for row in final))
        nights.append(Night(run_id, min(row.started for row in final), value, samples, meta))
    return sorted(nights, key=lambda n: n.started)[-MAX_NIGHTS:]


def standing_before(
    store: ResultsStore, key: str, run_id: str | None, policy: BaselinePolicy | None = None
) -> Standing:
    """Context ``key``'s standing from its stored nights before run ``run_id`` (None: all of
    them) and the store's acceptances."""
    rows = store.history(key)
    if run_id is not None:
        tonight = [r.started for r in rows if r.run_id == run_id]
        rows = [r for r in rows if r.run_id != run_id and (not tonight or r.started < min(tonight))]
    return standing_of(key, nights_of(rows), store.acceptances(), policy)


@dataclass(frozen=True)
class Persisting:
    """A context whose latest night is in an unaccepted regression."""

    key: str
    standing: Standing

    @property
    def first(self) -> Night:
        """The first regressed night."""
        return self.standing.regressed[0]

    @property
    def before(self) -> float:
        """The accepted level: the median of the accepted nights."""
        return float(statistics.median(self.standing.history)) if self.standing.accepted else 0.0

    @property
    def now(self) -> float:
        """The regressed level: the median of the regressed nights."""
        return float(statistics.median(n.value for n in self.standing.regressed))

    @property
    def change_pct(self) -> float:
        """The regressed level against the accepted one, percent."""
        return 100.0 * (self.now - self.before) / self.before if self.before else 0.0

    def explain(self) -> str:
        """One line: since when, how many nights, the change."""
        day = time.strftime("%Y-%m-%d", time.gmtime(self.first.started))
        return (
            f"regression since run {self.first.run_id} ({len(self.standing.regressed)} nights, first seen "
            f"{day}): {self.before:.1f} -> {self.now:.1f} Mbit/s ({self.change_pct:+.1f} %)"
        )


def persisting_regressions(store: ResultsStore, policy: BaselinePolicy | None = None) -> list[Persisting]:
    """Every context of the store whose latest night is in an unaccepted regression."""
    found = []
    for key in store.context_keys():
        standing = standing_before(store, key, None, policy)
        if standing.regressed:
            found.append(Persisting(key, standing))
    return sorted(found, key=lambda p: p.change_pct)
