"""A context's standing kept in the store and walked on night by night, never walked twice.

The standing (judge/standing.py) is a fold over a context's nights. Walking a year of them for
every context each time someone asks "what is in regression?" costs seconds per lab; so the
store keeps each context's standing under the pairs it was walked from (record/
store_revisions.py) and:

- tonight's verdict takes the standing kept after last night, when nothing it was walked from
  has changed since (the pairs before tonight's run are the pairs it was kept for);
- the standing after tonight is the kept one walked on by tonight's night alone;
- anything else (a verdict changed, a run excluded, an acceptance made or undone, other
  rules, a store kept by an older pinet) walks the context from its first night, as a walk
  without any kept standing would, and keeps the result.

So a kept standing is always the one a full walk gives: keeping it changes how fast an answer
comes, never the answer.
"""

from __future__ import annotations

import base64
import hashlib
import json
from array import array
from collections.abc import Sequence
from dataclasses import astuple, dataclass, field, replace
from functools import cache
from pathlib import Path
from typing import Any

from ..judge.baseline import BaselinePolicy
from ..judge.changepoints import ChangePoint
from ..judge.spread_prior import SpreadPrior, fit, relative_spread
from ..judge.standing import (
    EVERY_CONTEXT,
    HORIZON_NIGHTS,
    Acceptance,
    Night,
    Standing,
    judge_night,
    standing_of,
)
from ..model.context_key import ContextKey
from .nightly import GOODPUT, LATENCY, Metric, Persisting, nights_of
from .store import ResultsStore, StoredMeasurement
from .store_priors import group_of
from .store_revisions import PairSet

# What a kept standing depends on besides its nights: the code that walks and the night figure.
_WALKING_CODE = (
    "record/standing_memo.py",
    "record/store_rows.py",
    "judge/verdict.py",
    "judge/standing.py",
    "judge/baseline.py",
    "judge/changepoints.py",
    "judge/pooled_step.py",
    "judge/spread_prior.py",
    "judge/stats.py",
    "judge/tail.py",
    "record/nightly.py",
    "record/store_priors.py",
    "model/latency.py",
)


@cache
def _code_digest() -> str:
    """A digest of the code a walk runs: a standing kept by other code is walked again."""
    root = Path(__file__).resolve().parents[1]
    digest = hashlib.sha256()
    for name in _WALKING_CODE:
        digest.update((root / name).read_bytes())
    return digest.hexdigest()[:16]


def rules_of(policy: BaselinePolicy) -> str:
    """The rules a standing was walked by, as the key it is kept under."""
    return f"{astuple(policy)}|{HORIZON_NIGHTS}|{_code_digest()}"


@dataclass
class StandingBook:
    """The standings of one store, for one set of rules: read, walked on and kept."""

    store: ResultsStore
    policy: BaselinePolicy = field(default_factory=BaselinePolicy)
    _acceptances: list[Acceptance] | None = None
    _priors: dict[tuple[str, str], dict[str, SpreadPrior | None]] = field(default_factory=dict)

    @property
    def rules(self) -> str:
        """The key the standings are kept under."""
        return rules_of(self.policy)

    def acceptances(self) -> list[Acceptance]:
        """The store's standing acceptances, read once per book."""
        if self._acceptances is None:
            self._acceptances = self.store.acceptances()
        return self._acceptances

    def priors(self, key: str, metric: Metric) -> dict[str, SpreadPrior | None]:
        """The spread prior each run judged ``key``'s group with, by run (read once per book)."""
        group = (group_of(key), metric.name)
        if group not in self._priors:
            self._priors[group] = self.store.spread_priors(*group)
        return self._priors[group]

    def nights(self, key: str, rows: Sequence[StoredMeasurement], metric: Metric) -> list[Night]:
        """``rows`` of context ``key`` as nights, each with the prior its run judged it with."""
        return nights_of(rows, metric, self.priors(key, metric))

    def tonight(self, key: str, run_id: str, metric: Metric = GOODPUT) -> Standing:
        """:meth:`before`, with the prior run ``run_id`` judges ``key``'s group with: the kept
        one, or fitted now from the group's standings before the run and kept (the run's
        first verdict of the group)."""
        standing = self.before(key, run_id, metric)
        group = group_of(key)
        kept = self.store.spread_priors(group, metric.name)
        if run_id in kept:
            prior = kept[run_id]
        else:
            prior = self.store.keep_spread_prior(run_id, group, metric.name, self._fit(group, run_id, metric))
            self._priors.pop((group, metric.name), None)
        return replace(standing, tonight_prior=prior)

    def _fit(self, group: str, run_id: str, metric: Metric) -> SpreadPrior | None:
        """The prior of ``group``'s contexts from their accepted nights before run ``run_id``;
        the night's family (whose false alarms share one budget) is every context of the lab
        the store knows at that moment: from a lab's second night on, the contexts it measures
        (on its first, those measured so far; a lab of up to 200 is not held tighter anyway)."""
        lab = ContextKey.parse(group).get("lab")
        keys = self.store.context_keys(lab)
        spreads = []
        for other in keys:
            if group_of(other) != group:
                continue
            accepted = self.before(other, run_id, metric).accepted[-self.policy.window :]
            found = relative_spread([night.value for night in accepted])
            if found is not None:
                spreads.append(found)
        return fit(spreads, family=len(keys))

    def before(self, key: str, run_id: str | None, metric: Metric = GOODPUT) -> Standing:
        """Context ``key``'s standing of ``metric`` from its nights before run ``run_id`` (None:
        all of them): the kept one when it is still the one its nights give, else walked."""
        if run_id is None:
            return self.now(key, metric)
        pairs, cut, kept = self.store.standing_pairs_kept(key, run_id, metric.name, self.rules)
        if cut is None:
            return self.now(key, metric)
        if pairs is None:
            return self._walk(key, [], metric)
        whole = pairs.last_started < cut  # every row of the pairs is before tonight's first
        if whole and kept is not None:
            return self._loaded(key, kept)
        rows = [
            r
            for r in self.store.history(key, limit=None, probes=metric is not GOODPUT)
            if r.run_id != run_id and r.started < cut
        ]
        standing = self._walk(key, self.nights(key, rows, metric), metric)
        if whole:
            self._keep(key, metric, pairs, standing, run_id)
        return standing

    def now(self, key: str, metric: Metric = GOODPUT, newest: str | None = None) -> Standing:
        """Context ``key``'s standing of ``metric`` after all its nights; ``newest``: the run
        that measured it last, named by its own night's end (which walks it on at once)."""
        every = self.store.standing_pairs(key, None)[0]
        if every is None:
            return self._walk(key, [], metric)
        if newest is None:
            kept = self.store.kept_standing(key, metric.name, self.rules, every)
            if kept is not None:
                return self._loaded(key, kept)
            newest = self.store.newest_run_of(key)
        before, cut = self.store.standing_pairs(key, newest) if newest else (None, None)
        if (
            before is not None
            and cut is not None
            and before.last_started < cut
            and every.runs == before.runs + 1
        ):
            kept = self.store.kept_standing(key, metric.name, self.rules, before)
            if kept is not None and newest is not None:
                # Last night's standing, walked on by tonight's night alone.
                standing = self._loaded(key, kept)
                tonight = self.store.history(key, limit=None, probes=metric is not GOODPUT, of_run=newest)
                for night in self.nights(key, tonight, metric):
                    standing = judge_night(standing, night, self.acceptances(), self.policy).after
                self._keep(key, metric, every, standing)
                return standing
        rows = self.store.history(key, limit=None, probes=metric is not GOODPUT)
        standing = self._walk(key, self.nights(key, rows, metric), metric)
        self._keep(key, metric, every, standing)
        return standing

    def walk_on(self, run_id: str, metrics: Sequence[Metric]) -> int:
        """Walk every context run ``run_id`` measured on by the run's night and keep the
        standings (the run's own end): each context's pairs, last night's standings and the
        run's rows read in a few questions for the whole night, not a few per context. A
        context without last night's standing kept is walked on its own (:meth:`now`)."""
        pairs = self.store.pairs_of_run(run_id)
        rows: dict[str, list[StoredMeasurement]] = {}
        excluded = self.store.is_excluded(run_id)
        for row in [] if excluded else self.store.of_run(run_id):
            rows.setdefault(row.context_key, []).append(row)
        for metric in metrics:
            onward = {
                key: before
                for key, (every, before, cut) in pairs.items()
                if before is not None and before.last_started < cut and every.runs == before.runs + 1
            }
            kept = self.store.kept_standings(metric.name, self.rules, onward) if not excluded else {}
            walked: list[tuple[str, PairSet, Standing]] = []
            for key, (every, _, _) in pairs.items():
                if key not in kept:
                    self.now(key, metric, newest=run_id)
                    continue
                standing = self._loaded(key, kept[key])
                for night in self.nights(key, rows.get(key, []), metric):
                    standing = judge_night(standing, night, self.acceptances(), self.policy).after
                walked.append((key, every, standing))
            again = self.store.every_pairs_of_run(run_id)  # another runner wrote meanwhile: not kept
            self.store.keep_standings(
                metric.name,
                self.rules,
                [
                    (key, every, bool(standing.regressed), dumps(standing))
                    for key, every, standing in walked
                    if again.get(key) == every
                ],
            )
        return len(pairs)

    def regressed(
        self, metrics: Sequence[Metric], lab: str | None = None
    ) -> list[tuple[str, Metric, Standing]]:
        """Every context (of ``lab``) and metric whose standing holds an unaccepted regression:
        the kept standings are read in one question, the others walked and kept."""
        found = []
        for metric in metrics:
            for key, flag, state in self.store.standings_listing(metric.name, self.rules, lab):
                if flag is None:
                    standing = self.now(key, metric)
                    if standing.regressed:
                        found.append((key, metric, standing))
                elif flag and state is not None:
                    found.append((key, metric, self._loaded(key, state)))
        return found

    def _walk(self, key: str, nights: list[Night], metric: Metric) -> Standing:
        return standing_of(key, nights, self.acceptances(), self.policy)

    def _loaded(self, key: str, kept: str) -> Standing:
        """A kept standing with the context's acceptances as they stand now (as a walk would
        start with them): one made or undone since, of a run the context had not measured
        yet, touched none of its pairs."""
        accepts = tuple(a for a in self.acceptances() if a.context_key in (EVERY_CONTEXT, key))
        return replace(loads(kept), accepts=accepts)

    def _keep(
        self, key: str, metric: Metric, pairs: PairSet, standing: Standing, run_id: str | None = None
    ) -> None:
        """Keep ``standing`` for ``pairs`` (those before ``run_id``; None: all), unless they
        changed while it was walked: another runner stored something of the context, and the
        rows read may hold it."""
        if self.store.standing_pairs(key, run_id)[0] != pairs:
            return
        self.store.keep_standing(
            key, metric.name, self.rules, pairs, bool(standing.regressed), dumps(standing)
        )


def _night(night: Night) -> list[Any]:
    # A night's samples (up to hundreds of probes) as the bytes of their doubles: exact, and
    # read back without parsing a number at a time.
    samples = base64.b64encode(array("d", night.samples).tobytes()).decode("ascii")
    prior = night.prior.text() if night.prior is not None else ""
    return [night.run_id, night.started, night.value, samples, dict(night.meta), night.margin, prior]


def _read_night(data: list[Any]) -> Night:
    run_id, started, value, samples, meta, margin, prior = data
    values = array("d")
    values.frombytes(base64.b64decode(samples))
    return Night(
        run_id, float(started), float(value), tuple(values), meta, float(margin), SpreadPrior.parse(prior)
    )


def _acceptance(accept: Acceptance | None) -> list[Any] | None:
    return None if accept is None else list(astuple(accept))


def _read_acceptance(data: list[Any] | None) -> Acceptance | None:
    if data is None:
        return None
    id_, run_id, context, why, who, at = data
    return Acceptance(int(id_), run_id, context, why, who, float(at))


def dumps(standing: Standing) -> str:
    """A standing as JSON (floats as Python writes them, so they come back the same)."""
    change = standing.change
    return json.dumps(
        {
            "key": standing.key,
            "accepted": [_night(n) for n in standing.accepted],
            "regressed": [_night(n) for n in standing.regressed],
            "change": None
            if change is None
            else [
                change.run_id,
                change.before_median,
                change.after_median,
                change.change_percent,
                change.p_value,
                {k: list(v) for k, v in change.came_with.items()},
            ],
            "accepted_by": _acceptance(standing.accepted_by),
            "accepts": [_acceptance(a) for a in standing.accepts],
        }
    )


def loads(text: str) -> Standing:
    """A standing :func:`dumps` wrote."""
    data = json.loads(text)
    change = data["change"]
    return Standing(
        data["key"],
        tuple(_read_night(n) for n in data["accepted"]),
        tuple(_read_night(n) for n in data["regressed"]),
        None
        if change is None
        else ChangePoint(
            change[0],
            float(change[1]),
            float(change[2]),
            float(change[3]),
            float(change[4]),
            {k: (v[0], v[1]) for k, v in change[5].items()},
        ),
        _read_acceptance(data["accepted_by"]),
        tuple(a for a in (_read_acceptance(x) for x in data["accepts"]) if a is not None),
    )


def standing_before(
    store: ResultsStore,
    key: str,
    run_id: str | None,
    policy: BaselinePolicy | None = None,
    metric: Metric = GOODPUT,
) -> Standing:
    """Context ``key``'s standing of ``metric`` from its stored nights before run ``run_id``
    (None: all of them) and the store's acceptances."""
    return StandingBook(store, policy or BaselinePolicy()).before(key, run_id, metric)


def keep_standings_of_run(store: ResultsStore, run_id: str, policy: BaselinePolicy) -> int:
    """Keep the standing of every context run ``run_id`` measured, of every metric, after the
    run's night (walked on from last night's where it is kept); return how many contexts."""
    with store.transaction():
        return StandingBook(store, policy).walk_on(run_id, (GOODPUT, LATENCY))


def persisting_regressions(
    store: ResultsStore,
    policy: BaselinePolicy | None = None,
    metrics: Sequence[Metric] = (GOODPUT, LATENCY),
    lab: str | None = None,
) -> list[Persisting]:
    """Every context and metric of the store (of ``lab`` only, when named) whose latest night
    is in an unaccepted regression, the worst first."""
    book = StandingBook(store, policy or BaselinePolicy())
    found = [Persisting(key, standing, metric) for key, metric, standing in book.regressed(metrics, lab)]
    return sorted(found, key=lambda p: p.worse_pct)
