"""What got worse last night, first: the report's opening lines for a lab engineer.

Counts of regressions, floors missed, undecided verdicts and lab faults, and the largest
drops against each context's own history, taken from the store and the run's facts.  They
become the Allure report's "Variables" block (the first thing on its results page) and a
"morning" page among its global attachments, so the report reads as a checklist before
anyone opens a test.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from typing import Any

from .store import ResultsStore

LABEL_KEYS = (
    "scenario",
    "direction",
    "duplex",
    "profile",
    "qdisc",
    "rate_target_mbps",
    "filesystem",
    "block_bytes",
)
BASELINE_RUNS = 10  # the baseline of a drop: the median of the context's last results before the run


@dataclass(frozen=True)
class Drop:
    """One context's figure against its own history."""

    context: str
    value: float
    baseline: float
    change_pct: float
    verdict: str


@dataclass(frozen=True)
class Morning:
    """The night in a few numbers."""

    run_id: str
    measured: int
    regressions: int
    below_threshold: int
    undecided: int
    lab_faults: int
    drops: list[Drop] = field(default_factory=list)

    def variables(self) -> dict[str, str]:
        """The Allure "Variables" block, in reading order."""
        found: dict[str, str] = {
            "Regressions": str(self.regressions),
            "Below threshold": str(self.below_threshold),
            "Undecided": str(self.undecided),
            "Lab faults": str(self.lab_faults),
            "Measured": str(self.measured),
        }
        for n, drop in enumerate(self.drops, 1):
            found[f"Largest drop {n}"] = (
                f"{drop.change_pct:+.1f} %  {drop.context}  ({drop.baseline:.1f} -> {drop.value:.1f} Mbit/s"
                f"{', ' + drop.verdict if drop.verdict else ''})"
            )
        found["Run"] = self.run_id
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
            "",
        ]
        if self.drops:
            lines += [
                "| change | context | baseline Mbit/s | tonight Mbit/s | verdict |",
                "|---:|---|---:|---:|---|",
            ]
            lines += [
                f"| {d.change_pct:+.1f} % | {d.context} | {d.baseline:.1f} | {d.value:.1f} "
                f"| {d.verdict or '-'} |"
                for d in self.drops
            ]
        else:
            lines.append("No context fell below its own history.")
        return "\n".join(lines) + "\n"


def context_text(key: str) -> str:
    """A stored context key as the words a lab engineer reads."""
    parts = dict(p.split("=", 1) for p in key.split("|") if "=" in p)
    # As the metric sets name a context: board, image, adapter (else link), then the rest.
    head = [parts.get("board", ""), parts.get("image", ""), parts.get("adapter") or parts.get("link", "")]
    return " / ".join(v for v in [*head, *(parts.get(k, "") for k in LABEL_KEYS)] if v)


def morning_of(store: ResultsStore, run_id: str, facts: list[dict[str, Any]], top: int = 5) -> Morning:
    """The night of ``run_id``: its verdict counts, its lab faults and its ``top`` largest drops."""
    rows = store.of_run(run_id)
    latest = {row.context_key: row for row in rows}  # a re-measured context: its last attempt
    drops = []
    for key, row in latest.items():
        earlier = [r.goodput_mbps for r in store.history(key, before_run=run_id) if r.started < row.started]
        earlier = earlier[-BASELINE_RUNS:]
        if not earlier:
            continue
        baseline = statistics.median(earlier)
        if baseline <= 0:
            continue
        change = 100.0 * (row.goodput_mbps - baseline) / baseline
        if change < 0:
            drops.append(Drop(context_text(key), row.goodput_mbps, baseline, change, row.verdict))
    # What failed first (a regression, a floor missed), then the rest, each by its drop: a
    # noisy context that moved a lot but passed must not hide a GbE link that regressed.
    drops.sort(
        key=lambda d: ("regression" not in d.verdict and "below-threshold" not in d.verdict, d.change_pct)
    )
    verdicts = [row.verdict for row in latest.values()]
    return Morning(
        run_id=run_id,
        measured=len(rows),
        regressions=sum("regression" in v for v in verdicts),
        below_threshold=sum("below-threshold" in v for v in verdicts),
        undecided=sum("undecided" in v for v in verdicts),
        lab_faults=sum(1 for fact in facts if fact.get("kind") == "lab-fault"),
        drops=drops[:top],
    )
