"""Every lab of a shared store side by side: each one's newest night in a line.

Several labs' runners write one PostgreSQL store; the morning question of a lab group is not
one lab's report but "which lab had a bad night?". Each lab's newest run is read with its
verdict counts and the regressions still pending in that lab (from the kept standings, so a
store of years answers at once), for ``pinet labs`` and for the morning page of each lab.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from typing import Any

from ..judge.baseline import BaselinePolicy
from ..model.context_key import ContextKey
from .nightly import GOODPUT, LATENCY
from .standing_memo import StandingBook
from .store import ResultsStore


@dataclass(frozen=True)
class LabNight:
    """A lab's newest night: what it measured and how it was judged, and what is pending."""

    lab: str
    run_id: str
    started: float
    measured: int
    regressions: int  # measurements judged a regression tonight
    below_threshold: int
    undecided: int
    lab_faults: int
    pending: int  # contexts (and metrics) of the lab in an unaccepted regression

    def line(self) -> str:
        """One line for people."""
        when = time.strftime("%Y-%m-%d %H:%M", time.gmtime(self.started))
        return (
            f"{self.lab:16} {self.run_id:28} {when} UTC  measured {self.measured:4}  "
            f"regressions {self.regressions:3}  below threshold {self.below_threshold:3}  "
            f"undecided {self.undecided:3}  lab faults {self.lab_faults:3}  pending {self.pending:3}"
        )

    def as_dict(self) -> dict[str, Any]:
        """The night as JSON-ready data."""
        return asdict(self)


def lab_nights(store: ResultsStore, policy: BaselinePolicy | None = None) -> list[LabNight]:
    """Each lab's newest night that measured something, by lab name."""
    newest = {night["lab"]: night for night in store.newest_nights()}
    book = StandingBook(store, policy or BaselinePolicy())
    pending: dict[str, int] = {}
    for key, _, _ in book.regressed((GOODPUT, LATENCY)):
        lab = ContextKey.parse(key).get("lab")
        pending[lab] = pending.get(lab, 0) + 1
    nights = []
    for lab, run in sorted(newest.items()):
        counts = store.verdict_counts(run["run_id"])

        def having(word: str, counted: dict[str, int] = counts) -> int:
            return sum(n for verdict, n in counted.items() if word in verdict)

        nights.append(
            LabNight(
                lab,
                run["run_id"],
                float(run["started"]),
                int(run["measurements"]),
                having("regression"),
                having("below-threshold"),
                having("undecided"),
                having("lab-fault"),
                pending.get(lab, 0),
            )
        )
    return nights


def labs_markdown(nights: list[LabNight]) -> list[str]:
    """The labs of the store as a table of the morning page (empty for a store of one lab)."""
    if len(nights) < 2:
        return []
    lines = [
        f"## Every lab of this store: {len(nights)}",
        "",
        "| lab | newest night | measured | regressions | below threshold | undecided | lab faults "
        "| pending |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    lines += [
        f"| {n.lab} | {n.run_id} | {n.measured} | {n.regressions} | {n.below_threshold} | {n.undecided} "
        f"| {n.lab_faults} | {n.pending} |"
        for n in nights
    ]
    return [*lines, ""]
