"""What changed on a red context's path: its last good night's fingerprint against its first
red night's (model.fingerprint), for ``pinet regressions``, the morning page and the report.

A known issue (``pinet known add``) names one such difference; a red context whose
differences include it shows as known, with the issue's words, not as new.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..judge.standing import Standing
from ..model.fingerprint import fingerprint, what_changed
from .known_issues import KnownIssue, matching
from .nightly import Persisting
from .store import ResultsStore


@dataclass(frozen=True)
class RedChange:
    """What differs on one red context's path, and the known issues that name it."""

    lines: tuple[str, ...]
    known: tuple[str, ...] = ()

    def text(self) -> str:
        """One line: "what changed: since run R: a; b" and the known issues after it ("" when
        neither night kept its hosts' facts)."""
        if not self.lines:
            return ""
        known = "".join(f"\n  known: {k}" for k in self.known)
        return "what changed: " + "; ".join(self.lines) + known


def change_of(
    store: ResultsStore,
    key: str,
    good_run: str | None,
    red_run: str,
    issues: Sequence[KnownIssue],
    tonight: Mapping[str, str] | None = None,
) -> RedChange:
    """What differs on ``key``'s path between the last good night (``good_run``, None when it
    has none) and the first red one (``red_run``'s stored facts, or ``tonight``'s fingerprint
    while that night is still being measured), and the known ``issues`` that name it."""
    wanted = [run for run in (good_run, None if tonight is not None else red_run) if run]
    prints = store.fingerprints(key, wanted) if wanted else {}
    before = prints.get(good_run) if good_run else None
    after = tonight if tonight is not None else prints.get(red_run)
    if not before and not after:
        return RedChange(())  # neither night kept its hosts' facts: nothing to say either way
    lines = what_changed(before, after)
    if good_run is not None and before and after:
        lines = [f"since run {good_run}: {lines[0]}", *lines[1:]]
    return RedChange(tuple(lines), tuple(matching(issues, key, lines)))


def tonight_change(
    store: ResultsStore, key: str, run_id: str, standing: Standing, facts: Mapping[str, Mapping[str, Any]]
) -> RedChange:
    """A context judged a regression tonight (``standing``: before tonight): against its first
    red night when the regression persists, else tonight's ``facts``."""
    first = standing.since
    good = [n for n in standing.accepted if first is None or n.started < first.started]
    good_run = good[-1].run_id if good else None
    issues = store.known_issues()
    if first is not None:
        return change_of(store, key, good_run, first.run_id, issues)
    return change_of(store, key, good_run, run_id, issues, tonight=fingerprint(facts))


def red_changes(store: ResultsStore, pending: Sequence[Persisting]) -> dict[tuple[str, str], RedChange]:
    """Each pending regression's :class:`RedChange`, by (context, metric)."""
    issues = store.known_issues()
    return {
        (p.key, p.metric.name): change_of(
            store, p.key, p.last_good.run_id if p.last_good else None, p.first.run_id, issues
        )
        for p in pending
    }
