"""Judging a test's measurements, without pytest: the re-measure loop and what the verdicts
mean for the test.

A verdict (:func:`pytest_pinet.judge.verdict.judge_measurement`, or a lab's own) says what one
measurement is.  A test takes one or more (both directions of a full-duplex run); what the
test's outcome is follows from all of them together, in one order of precedence: any failure
fails the test (every direction judged first, so a full-duplex failure reports both); a
board too hot to trust makes the measurement a lab fault; a known-slow combination is an
expected failure; an interval that still holds the line is *undecided*; otherwise it passed.
A result that measuring again could change (below its floor, a regression) is confirmed
first: measured again until most of its attempts agree, because one unlucky run is not a
board that got worse, and one lucky run is not a drop that went away.

The pytest layer maps :class:`Outcome` onto ``pytest.fail`` / ``xfail`` / ``skip``; ``pinet
bench`` and any later command can use the same policy.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from ..errors import LabFault
from ..judge.confirmation import settled
from ..judge.verdict import FAILING, Verdict, VerdictKind
from ..model import Measurement


class LatencyOutcome(Protocol):
    """What :func:`with_latency` reads of a latency verdict (``judge.latency_verdict.LatencyVerdict``)."""

    @property
    def failed(self) -> bool:
        """A ceiling crossed or a regression."""

    @property
    def reason(self) -> str:
        """The verdict's line, with every figure."""

    @property
    def status(self) -> str:
        """The verdict's word (``above-ceiling``, ``regression`` ...)."""


class OutcomeKind(enum.Enum):
    """What a test's verdicts amount to, most severe first."""

    FAILED = "failed"
    KNOWN_SLOW = "known-slow"
    UNDECIDED = "undecided"
    PASSED = "passed"


@dataclass(frozen=True)
class Outcome:
    """The test's outcome, the line it shows, and the measurements of its final attempt;
    for a failure, the verdict words that failed it (``regression``, ``below-threshold``,
    ``above-ceiling`` ...), from which the night's exit status says whose failure it is."""

    kind: OutcomeKind
    message: str
    measurements: tuple[Measurement, ...]
    failed_as: frozenset[str] = frozenset()


@dataclass
class GoodputJudge:
    """Judge the measurements of one test, measuring again while that could change the verdict.

    ``verdict_of`` judges one measurement (and records the verdict where the caller keeps
    them); ``remeasure`` is how many more attempts a suspect result may get (red takes most
    of ``1 + remeasure``); ``on_remeasure`` hears
    why each one is taken (the results directory keeps it as a fact).  ``latency_of``, for a
    test that judges latency under load too, judges each measurement's p99: a ceiling crossed
    or a regression is measured again like a goodput failure (a neighbour's burst on a shared
    host lifts a p99 as surely as it lowers goodput), and joins the outcome
    (:func:`with_latency`).
    """

    verdict_of: Callable[[Measurement], Verdict]
    remeasure: int = 0
    on_remeasure: Callable[[list[str]], None] = lambda failures: None
    earlier: list[str] = field(default_factory=list)
    latency_of: Callable[[Measurement], LatencyOutcome] | None = None

    def judge(
        self, measurements: Sequence[Measurement], measure: Callable[[], Sequence[Measurement]] | None = None
    ) -> Outcome:
        """The outcome of ``measurements``; with ``measure``, a result worth measuring again is
        confirmed before it is red: measured again (``remeasure`` times at most) until a
        majority of its ``1 + remeasure`` attempts agrees, and red only when most of them are.

        Why a majority and not the last attempt: one lucky attempt must not clear a real drop
        any more than one unlucky one may make a night red.  With three attempts, a chance
        failure of probability p is red with 3p^2 - 2p^3 (0.03 for p = 0.1), a drop each
        attempt sees with probability q = 0.9 stays red with 0.97.  The attempt that settles
        the majority always agrees with it, so its measurements are the final ones."""
        taken = list(measurements)
        verdicts, latency = self._verdicts(taken)
        attempts = 1 + (self.remeasure if measure is not None else 0)
        red = passed = voided = 0
        while measure is not None:
            void = [v.note for v in verdicts if v.kind is VerdictKind.LAB_FAULT and v.remeasure]
            if void:
                # An attempt that did not measure the path counts for neither side: measured
                # again, as often as a suspect result may be, and a lab fault if it stays so.
                if voided == self.remeasure:
                    break
                voided += 1
                why, line = void, "; ".join(void)
            elif worth_remeasuring(verdicts, latency):
                red += 1
                why = [line for v in verdicts for line in v.failures] + latency_failures(taken, latency)
                line = "; ".join(why)
            elif red and not any(v.failed for v in verdicts):
                passed += 1
                why = [f"confirming: {red} of {red + passed} attempts below so far, {attempts} at most"]
                line = "passed"
            else:
                break  # nothing suspect, or a failure no measurement can change
            if not void and settled(red, passed, attempts):
                break
            self.earlier.append(line)
            self.on_remeasure(why)
            taken = list(measure())
            verdicts, latency = self._verdicts(taken)
        outcome = outcome_of(verdicts, tuple(taken), self.earlier)
        if self.latency_of is None:
            return outcome
        return with_latency(outcome, latency, self.earlier)

    def _verdicts(self, taken: Sequence[Measurement]) -> tuple[list[Verdict], list[LatencyOutcome]]:
        latency_of = self.latency_of
        return [self.verdict_of(m) for m in taken], [latency_of(m) for m in taken] if latency_of else []


def worth_remeasuring(verdicts: Sequence[Verdict], latency: Sequence[LatencyOutcome] = ()) -> bool:
    """True when something failed and every goodput failure is one a new measurement could
    change (a latency failure always could: it is a figure of the same noisy run)."""
    failed = [v for v in verdicts if v.failed]
    if not all(v.remeasure for v in failed):
        return False
    return bool(failed) or any(v.failed for v in latency)


def latency_failures(measurements: Sequence[Measurement], latency: Sequence[LatencyOutcome]) -> list[str]:
    """The failed latency verdicts' lines, each with its direction."""
    return [
        f"{m.context.direction}: {v.reason}" for m, v in zip(measurements, latency, strict=False) if v.failed
    ]


def outcome_of(
    verdicts: Sequence[Verdict], measurements: tuple[Measurement, ...], earlier: Sequence[str]
) -> Outcome:
    """What the final attempt's verdicts mean for the test (see the module's docstring).

    A board too hot or throttled, or a figure above what its path carries, raises
    :class:`LabFault`: the measurement says nothing about the board's network, and the lab is
    at fault, never the board.
    """
    void = [v.note for v in verdicts if v.kind is VerdictKind.LAB_FAULT]
    if void:  # the run did not measure the path: its other figures are no evidence either
        raise LabFault("impossible-figure", "; ".join(void))
    failures = [line for v in verdicts for line in v.failures]
    if failures:
        history = "".join(f"\n(earlier attempt: {e})" for e in earlier)
        failed_as = frozenset(kind.value for v in verdicts for kind in v.kinds if kind in FAILING)
        return Outcome(OutcomeKind.FAILED, "\n".join(failures) + history, measurements, failed_as)
    invalid = [v.note for v in verdicts if v.kind is VerdictKind.INVALID_THERMAL]
    if invalid:
        raise LabFault("thermal", "measurement invalid, board too hot or throttled: " + "; ".join(invalid))
    known = [v.note for v in verdicts if v.kind is VerdictKind.KNOWN_SLOW]
    if known:
        return Outcome(OutcomeKind.KNOWN_SLOW, "known slow: " + "; ".join(known), measurements)
    undecided = [line for v in verdicts for line in v.undecided]
    if undecided:
        # Neither passed nor failed: the run's interval holds the line (see judge.precision).
        return Outcome(OutcomeKind.UNDECIDED, "; ".join(undecided), measurements)
    return Outcome(OutcomeKind.PASSED, "", measurements)


def with_latency(
    outcome: Outcome, verdicts: Sequence[LatencyOutcome], earlier: Sequence[str] = ()
) -> Outcome:
    """The test's outcome with its latency verdicts (one per final measurement) joined: a
    latency failure fails the test whatever goodput said (an undecided or known-slow goodput
    says nothing about the queue), its lines after goodput's own, with the earlier attempts'
    failures when goodput did not already show them; otherwise goodput decides."""
    lines = latency_failures(outcome.measurements, verdicts)
    if not lines:
        return outcome
    failed_as = outcome.failed_as | {v.status for v in verdicts if v.failed}
    if outcome.kind is OutcomeKind.FAILED:
        message = outcome.message + "\n" + "\n".join(lines)
        return Outcome(OutcomeKind.FAILED, message, outcome.measurements, failed_as)
    goodput = f"\n(goodput {outcome.kind.value}: {outcome.message})" if outcome.message else ""
    history = "".join(f"\n(earlier attempt: {e})" for e in earlier)
    return Outcome(OutcomeKind.FAILED, "\n".join(lines) + goodput + history, outcome.measurements, failed_as)
