"""The verdict on one measurement: a pure function of the measurement, the rules and history.

Everything a lab engineer asks of a result is decided here, in one place, without a lab or a
test framework: is the board too hot for the figure to count, does a threshold rule cover it,
is it below that floor (a known limitation or a failure), is it worse than the same
context's history.  The pytest layer only fetches the history, calls :func:`judge_measurement`
and re-measures when the verdict says that could change it.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass, field

from ..model import Measurement
from .baseline import BaselinePolicy, judge_baseline
from .fairness import jain_fairness
from .impossible_figure import impossible_figure
from .precision import goodput_interval
from .standing import Night, NightVerdict, Standing, judge_night
from .thermal import DEFAULT_MAX_TEMPERATURE_C, thermal_evidence
from .threshold_rules import Thresholds


class VerdictKind(enum.Enum):
    """What a verdict says; the value is the word kept in the store and shown in reports."""

    PASS = "pass"  # noqa: S105 - a verdict word, not a password
    BELOW_THRESHOLD = "below-threshold"
    REGRESSION = "regression"
    KNOWN_SLOW = "known-slow"
    UNDECIDED = "undecided"  # the figure's interval holds the line it is judged against
    NO_RULE = "no-rule"
    INVALID_THERMAL = "invalid-thermal"
    LAB_FAULT = "lab-fault"


# Kinds that fail a test; known-slow is an expected failure, invalid-thermal a lab fault.
FAILING = frozenset({VerdictKind.BELOW_THRESHOLD, VerdictKind.REGRESSION, VerdictKind.NO_RULE})
# Stored verdict words whose figures never enter a baseline: unjudged, the lab's, too hot.
NOT_A_BASELINE_SAMPLE = frozenset({"", VerdictKind.LAB_FAULT.value, VerdictKind.INVALID_THERMAL.value})


@dataclass(frozen=True)
class JudgePolicy:
    """How strictly to judge: the baseline rules and the hottest a board may be."""

    baseline: BaselinePolicy = field(default_factory=BaselinePolicy)
    max_temp_c: float = DEFAULT_MAX_TEMPERATURE_C


@dataclass(frozen=True)
class Verdict:
    """The outcome for one measurement.

    ``kinds`` has the most severe first (a result can be both a regression and below its
    threshold); ``failures`` are the lines a failing test shows; ``note`` explains a
    known-slow or invalid result; ``reason`` is what the store keeps beside the verdict;
    ``remeasure`` says whether measuring again could change it (noise can, a missing rule or
    a hot board cannot); ``undecided`` has a line per comparison the measured interval could
    not decide ("940.0 inside 939.6-941.2 after 60 s").
    """

    measurement_id: str
    kinds: tuple[VerdictKind, ...]
    reason: str
    failures: tuple[str, ...] = ()
    note: str = ""
    remeasure: bool = False
    undecided: tuple[str, ...] = ()
    rule_id: str = ""  # the threshold rule that judged it ('' : none did)
    floor_mbps: float | None = None  # that rule's floor (None: none did)

    @property
    def kind(self) -> VerdictKind:
        """The most severe kind."""
        return self.kinds[0]

    @property
    def label(self) -> str:
        """The store's word: kinds joined by '+', e.g. ``regression+below-threshold``."""
        return "+".join(kind.value for kind in self.kinds)

    @property
    def failed(self) -> bool:
        """True when the result fails its test."""
        return any(kind in FAILING for kind in self.kinds)


def judge_measurement(
    measurement: Measurement,
    thresholds: Thresholds,
    history: Sequence[float],
    policy: JudgePolicy | None = None,
    standing: Standing | None = None,
) -> Verdict:
    """Judge ``measurement`` against its threshold rule and ``history`` (earlier goodputs of the
    same context, oldest first, already stripped of results that are no baseline samples).

    With ``standing`` (the context's accepted nights and pending regression, see
    :mod:`.standing`) the baseline is the accepted nights', a change point in them counts, and
    a regression that persists says since when; ``history`` is then not used."""
    policy = policy or JudgePolicy()
    context = measurement.context
    direction = context.direction
    heat = thermal_evidence(measurement.observations, context.board, policy.max_temp_c)
    if heat:
        # Not judged, not a baseline sample: the board was not in a state to measure.
        return Verdict(measurement.id, (VerdictKind.INVALID_THERMAL,), heat, note=f"{direction}: {heat}")
    interval = goodput_interval(measurement)
    impossible = impossible_figure(measurement, interval)
    if impossible:
        # The lab's, not the board's: measured again where the caller can (.goodput_judge).
        note = f"{direction}: {impossible}"
        return Verdict(measurement.id, (VerdictKind.LAB_FAULT,), impossible, note=note, remeasure=True)
    match = context.as_match()
    check = thresholds.judge(
        match, measurement.goodput_mbps, measurement.limit_mbps, jain_fairness(measurement.per_stream_mbps)
    )
    night = _night_verdict(measurement, standing, policy.baseline)
    baseline = night.baseline if night else judge_baseline(measurement.goodput_mbps, history, policy.baseline)
    undecided: list[str] = []
    # Where the interval holds the floor or the baseline's lower edge, that comparison is
    # neither met nor missed (see .precision); the other one still counts.
    floor_undecided = bool(interval and check and check.fair and interval.holds(check.expected_mbps))
    if interval is not None and check is not None and floor_undecided:
        undecided.append(f"{direction} threshold {interval.explain(check.expected_mbps)}: undecided")
    edge = baseline.baseline - baseline.band if baseline.baseline is not None and baseline.band else None
    edge_undecided = bool(interval and edge is not None and interval.holds(edge))
    if interval is not None and edge is not None and edge_undecided:
        undecided.append(f"{direction} baseline edge {interval.explain(edge)}: undecided")
    retransmits = measurement.retransmits
    tail = f"; retransmits {retransmits if retransmits is not None else 'n/a'}"
    kinds: list[VerdictKind] = []
    failures: list[str] = []
    note = ""
    if check is None:
        failures.append(f"no rule in {thresholds.source} matches {match}: add one")
        kinds.append(VerdictKind.NO_RULE)
    elif floor_undecided:
        pass  # neither met nor missed: said in ``undecided``
    elif not check.passed and check.known_slow:
        note = f"{direction}: {check.known_slow} ({check.explain()})"
        kinds.append(VerdictKind.KNOWN_SLOW)
    elif not check.passed:
        failures.append(f"below threshold: {direction} goodput {check.explain()}{tail}")
        kinds.append(VerdictKind.BELOW_THRESHOLD)
    regressed = night.regression if night else baseline.regression
    if regressed and not edge_undecided:
        failures.append(f"{_regression_head(night)}: {direction} {baseline.explain()}{_since(night)}{tail}")
        kinds.insert(0, VerdictKind.REGRESSION)
    if undecided:
        kinds.append(VerdictKind.UNDECIDED)
    rule = check.explain() if check else "no threshold rule"
    reason = f"{rule}; baseline: {baseline.explain()}{_since(night)}"
    reason += "".join(f"; {line}" for line in undecided)
    if standing is not None and standing.accepted_by is not None:
        reason += f"; baseline level from {standing.accepted_by.explain()}"
    return Verdict(
        measurement.id,
        tuple(kinds) or (VerdictKind.PASS,),
        reason,
        tuple(failures),
        note,
        remeasure=bool(failures) and VerdictKind.NO_RULE not in kinds,
        undecided=tuple(undecided),
        rule_id=check.rule_id if check else "",
        floor_mbps=check.expected_mbps if check else None,
    )


def _night_verdict(
    measurement: Measurement, standing: Standing | None, policy: BaselinePolicy
) -> NightVerdict | None:
    """Tonight's figure against the context's standing, when the caller knows it."""
    if standing is None:
        return None
    tonight = Night(
        measurement.id,
        measurement.started,
        measurement.goodput_mbps,
        measurement.interval_mbps,
        prior=standing.tonight_prior,
    )
    return judge_night(standing, tonight, (), policy)


def _regression_head(night: NightVerdict | None) -> str:
    """How a regression's failure line starts: the words the report's categories match."""
    if night is None:
        return "regression against baseline"
    return f"regression against baseline ({'persisting' if night.status == 'persisting' else 'new tonight'})"


def _since(night: NightVerdict | None) -> str:
    """ "; regression since run R (N nights, first seen DATE)" or a new step's change point."""
    if night is None or not night.regression:
        return ""
    if night.status == "persisting":
        return f"; {night.since_text()}"
    change = night.change
    slide = change is not None and change.run_id != night.after.regressed[-1].run_id
    return f"; a slide since {change.explain()}" if change is not None and slide else ""
