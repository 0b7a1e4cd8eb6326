"""A context's standing across nights: the accepted level, and a regression that stays red.

A nightly verdict that lets a regressed night into the baseline turns green by itself: two
nights at the degraded level outvote the clean ones and the drop is forgotten.  Here history
is read night by night, oldest first, and only *accepted* nights form the baseline:

- a night judged a regression (below the band of the accepted nights, or the last of nights
  that pooled show a step down: :mod:`.pooled_step`) starts a *pending* regression; it and
  every later regressed night stay out of the baseline, each reported as "regression since
  run R";
- the pending regression ends when a person accepts it (:class:`Acceptance` of its run, of
  its context or of its change point: the history then restarts at the accepted night), or
  when the level comes back (a night no further below the accepted level than one spread of
  its nights: inside a noisy context's wide band a night may still be as low as the drop);
- a slow slide (each night inside the band, the step found over several) through a run a
  person accepted is that accepted level: the history restarts at the accepted run, though
  no regression of this context was pending when the run was accepted;
- a step *up* (the pooled nights above the accepted ones) moves the baseline without an
  accept: the history restarts at the step.

The same function walks the stored nights and judges tonight, so a verdict is always the one
the store's history and acceptances give: undo an accept and the next look at the context
calls the regression again.  Nothing here reads a store or knows pytest.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import partial

from .baseline import NIGHT_FALSE_ALARMS, BaselinePolicy, BaselineVerdict, judge_baseline, night_budget
from .changepoints import ChangePoint, came_with_step
from .pooled_step import pooled_step
from .spread_prior import SpreadPrior, applies, moderated

EVERY_CONTEXT = "*"  # an acceptance of a run in every context it regressed in
# The accepted nights a standing keeps: the last this many. The baseline and the step test
# read the last window of them; the accepted level a regression is shown against is their
# median, the level of the last two months of accepted nights, not of the context's life.
# A regression's nights are kept however many: it stays red, against the level it left,
# until a person accepts it or the level comes back.
HORIZON_NIGHTS = 60
# The accepted nights whose seconds are kept: the last this many windows. The step test reads
# the seconds of the last window; a slide found there moves at most a window of nights out of
# the baseline, so the window after it still has its seconds. Older nights are their figures
# alone: a kept standing (record/standing_memo.py) is a fifth of the size, read and written
# every night for every context.
SAMPLED_WINDOWS = 2
# A step is counted over two nights or more: one night alone is the band's to judge, and
# steps of one night of noise were most of the false alarms under the noise model.
MIN_NIGHTS_AFTER_STEP = 2


@dataclass(frozen=True)
class Night:
    """One context's one figure of one run (see ``record.nightly``), with its seconds."""

    run_id: str
    started: float
    value: float
    samples: tuple[float, ...] = ()
    meta: Mapping[str, str] = field(default_factory=dict)
    margin: float = 0.0  # the figure's own uncertainty: its band is at least this (a p99: .tail)
    # The spread the context's group shared when this night was judged (.spread_prior): kept
    # with the night, so a walk judges it as it was judged.
    prior: SpreadPrior | None = None


@dataclass(frozen=True)
class Acceptance:
    """A person's word that a changed level is the new normal: who, when, why, for what."""

    id: int
    run_id: str  # the first night at the accepted level
    context_key: str  # EVERY_CONTEXT: each context that regressed in that run
    why: str
    who: str
    at: float

    def covers(self, key: str, run_id: str) -> bool:
        """True when this acceptance is about run ``run_id`` of context ``key``."""
        return self.run_id == run_id and self.context_key in (EVERY_CONTEXT, key)

    def explain(self) -> str:
        """One line: id, run, who, when, why."""
        when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(self.at))
        scope = "every context" if self.context_key == EVERY_CONTEXT else "one context"
        return f"accept #{self.id}: run {self.run_id} ({scope}) by {self.who} at {when}: {self.why}"


@dataclass(frozen=True)
class Standing:
    """Where a context stands before a night: its accepted nights and a pending regression."""

    key: str = ""
    accepted: tuple[Night, ...] = ()  # the baseline's nights, oldest first
    regressed: tuple[Night, ...] = ()  # an unaccepted regression's nights, oldest first
    change: ChangePoint | None = None  # the downward step that started it, when one did
    accepted_by: Acceptance | None = None  # the acceptance that set the current level
    # This context's standing acceptances: a slow slide through a run a person accepted is
    # the accepted level, also when tonight (judged with no acceptances of its own) finds it.
    accepts: tuple[Acceptance, ...] = ()
    # The prior the next night is judged with, when the store fitted it for a run under way
    # (record/store_priors.py): tonight's night carries it (``Night.prior``).
    tonight_prior: SpreadPrior | None = None

    @property
    def history(self) -> list[float]:
        """The accepted figures, oldest first: what the baseline is made of."""
        return [night.value for night in self.accepted]

    @property
    def since(self) -> Night | None:
        """The first night of the pending regression, if any."""
        return self.regressed[0] if self.regressed else None


@dataclass(frozen=True)
class NightVerdict:
    """One night against its context's standing, and the standing after it."""

    status: str  # "no-baseline", "within", "improvement", "new-regression", "persisting"
    baseline: BaselineVerdict
    after: Standing
    change: ChangePoint | None = None  # the step found in the accepted nights and this one

    @property
    def regression(self) -> bool:
        """True for a new or a persisting regression."""
        return self.status in ("new-regression", "persisting")

    def since_text(self) -> str:
        """``regression since run R (N nights, first seen DATE)``; empty when none persists."""
        first = self.after.since
        if first is None or self.status != "persisting":
            return ""
        day = time.strftime("%Y-%m-%d", time.gmtime(first.started))
        return f"regression since run {first.run_id} ({len(self.after.regressed)} nights, first seen {day})"


def judge_night(
    standing: Standing,
    night: Night,
    acceptances: Sequence[Acceptance] = (),
    policy: BaselinePolicy | None = None,
) -> NightVerdict:
    """Judge ``night`` against the accepted nights of ``standing``; return it with the new standing.

    The walk is a fold: the standing after a night depends on the one before and the night
    alone, so a store keeps a context's standing and walks on from it night by night
    (record/standing_memo.py) to the very standing a walk from its first night gives.
    """
    verdict = _judge_night(standing, night, acceptances, policy)
    window = (policy or BaselinePolicy()).window
    accepted = verdict.after.accepted[-max(HORIZON_NIGHTS, window) :]  # never fewer than a baseline reads
    bare = len(accepted) - SAMPLED_WINDOWS * window
    if bare > 0 and any(n.samples for n in accepted[:bare]):
        # A night that left the sampled nights keeps its figure, not its seconds.
        accepted = (*(replace(n, samples=()) if n.samples else n for n in accepted[:bare]), *accepted[bare:])
    return replace(verdict, after=replace(verdict.after, accepted=accepted, tonight_prior=None))


def _judge_night(
    standing: Standing,
    night: Night,
    acceptances: Sequence[Acceptance],
    policy: BaselinePolicy | None,
) -> NightVerdict:
    policy = policy or BaselinePolicy()
    acceptances = (*acceptances, *(a for a in standing.accepts if a not in acceptances))
    base = list(standing.accepted)
    prior = applies(night.prior, [n.value for n in base[-policy.window :]])
    budget = night_budget(night.prior)  # the night's, also for a context the prior does not explain
    judge = partial(
        judge_baseline, night.value, policy=policy, margin=night.margin, prior=prior, budget=budget
    )
    verdict = judge([n.value for n in base])
    if verdict.status == "no-baseline":
        return NightVerdict("no-baseline", verdict, replace(standing, accepted=(*base, night)))
    step = _last_step(base, night, policy, night.prior, budget)
    regressed = list(standing.regressed)
    change = standing.change
    accepted_by = standing.accepted_by
    down = step is not None and step.change_percent < 0
    slide_accept = _slide_accepted(standing.key, base, step, acceptances) if down and not regressed else None
    if slide_accept is not None:
        # A slide each night of which stayed inside the band, through a run a person accepted
        # (of every context: this one never went red, so no pending regression took the
        # accept): the level from that run on is the baseline, as it is for a regression.
        base = base[[n.run_id for n in base].index(slide_accept.run_id) :]
        verdict = judge([n.value for n in base])
        accepted_by, step, down = slide_accept, None, False
    # A pending regression ends when the level is back, not merely inside the band: a band wide
    # enough for a noisy context's nights holds a drop the pooled nights showed.
    low = [n.value for n in (*regressed, night)]
    back = _came_back(verdict, [n.value for n in base[-policy.window :]], low, policy, night.margin, prior)
    still_low = bool(regressed) and verdict.status == "within" and not back
    if verdict.status == "regression" or (down and not regressed) or still_low:
        if down and not regressed and step is not None and step.run_id != night.run_id:
            # A slow slide: each night inside the band, the step seen over several of them.
            cut = [n.run_id for n in base].index(step.run_id)
            base, regressed = base[:cut], base[cut:]
            verdict = judge([n.value for n in base])
        status = "persisting" if standing.regressed else "new-regression"
        change = change if standing.regressed else (step if down else None)
        regressed.append(night)
        after = Standing(standing.key, tuple(base), tuple(regressed), change, accepted_by, standing.accepts)
        return _accepted(NightVerdict(status, verdict, after, step), acceptances)
    if step is not None and step.change_percent > 0:
        # A step up moves the baseline: the history restarts at the step, no accept needed.
        ids = [n.run_id for n in base]
        base = base[ids.index(step.run_id) :] if step.run_id in ids else []
    # Within or above the accepted band: a pending regression is over (the level came back).
    after = Standing(standing.key, (*base, night), (), None, accepted_by, standing.accepts)
    return NightVerdict(verdict.status, verdict, after, step)


def _came_back(
    verdict: BaselineVerdict,
    values: Sequence[float],
    low: Sequence[float],
    policy: BaselinePolicy,
    margin: float,
    prior: SpreadPrior | None = None,
) -> bool:
    """Whether a night judged within the band is back at the accepted level: no further below
    it than one spread (or the band's floor, when wider). The spread is pooled from the
    accepted nights ``values`` and the regression's nights ``low`` (tonight's included), each
    about their own mean, and from the group's ``prior`` by its worth: two accepted nights
    that agreed by luck say nothing of the noise, and the nights since and the group do.

    A context truly 3 spreads lower stays red on 49 nights of 50; one called red by chance is
    back on 5 nights of 6."""
    if verdict.baseline is None:
        return True
    squares = sum(_squares(part) for part in (values, low))
    degrees = sum(max(len(part) - 1, 0) for part in (values, low))
    spread = math.sqrt(moderated(prior, squares, degrees, verdict.baseline)[0])
    tolerance = max(policy.min_band_percent / 100.0 * abs(verdict.baseline), margin, spread)
    return verdict.value >= verdict.baseline - tolerance


def _squares(values: Sequence[float]) -> float:
    """The sum of squared deviations of ``values`` from their mean."""
    if not values:
        return 0.0
    mean = statistics.fmean(values)
    return sum((v - mean) ** 2 for v in values)


def _slide_accepted(
    key: str, base: Sequence[Night], step: ChangePoint | None, acceptances: Sequence[Acceptance]
) -> Acceptance | None:
    """The acceptance of a run of ``key`` at or after the step ``step`` among the accepted
    nights ``base``, if any: the level the slide reached is then one a person accepted."""
    ids = [n.run_id for n in base]
    if step is None or step.run_id not in ids:
        return None
    since = ids[ids.index(step.run_id) :]
    return next((a for run in since for a in acceptances if a.covers(key, run)), None)


def _accepted(verdict: NightVerdict, acceptances: Sequence[Acceptance]) -> NightVerdict:
    """A regression whose nights hold an accepted run becomes the accepted level from that run."""
    standing = verdict.after
    for n, night in enumerate(standing.regressed):
        accept = next((a for a in acceptances if a.covers(standing.key, night.run_id)), None)
        if accept is not None:
            after = Standing(standing.key, standing.regressed[n:], (), None, accept, standing.accepts)
            return replace(verdict, after=after)
    return verdict


def _last_step(
    base: Sequence[Night],
    night: Night,
    policy: BaselinePolicy,
    prior: SpreadPrior | None = None,
    budget: float = NIGHT_FALSE_ALARMS,
) -> ChangePoint | None:
    """The most significant step over the accepted nights and this one, if any
    (:mod:`.pooled_step`: the nights since it pooled against the accepted window before it),
    as a change point naming its first night and what came with it.

    The standing rule tests nights, not seconds (``pinet trends`` does): on a board whose runs
    differ by several percent, the seconds of two runs always differ "significantly", so a
    test of seconds called noise a step."""
    if not base:
        return None
    nights = sorted([*base, night], key=lambda n: n.started)
    found = pooled_step([n.value for n in nights], policy, night.margin, prior, budget)
    if found is None:
        return None
    before, first = nights[-found.nights - 1], nights[-found.nights]
    came_with = came_with_step(before.meta, first.meta)
    change = 100.0 * (found.after - found.before) / abs(found.before) if found.before else 0.0
    return ChangePoint(first.run_id, found.before, found.after, change, found.p_value, came_with)


def standing_of(
    key: str,
    nights: Sequence[Night],
    acceptances: Sequence[Acceptance] = (),
    policy: BaselinePolicy | None = None,
) -> Standing:
    """The standing of context ``key`` after ``nights`` (oldest first), each judged in turn."""
    standing = Standing(key, accepts=tuple(a for a in acceptances if a.context_key in (EVERY_CONTEXT, key)))
    for night in sorted(nights, key=lambda n: n.started):
        standing = judge_night(standing, night, acceptances, policy).after
    return standing
