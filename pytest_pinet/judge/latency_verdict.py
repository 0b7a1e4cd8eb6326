"""Judging latency under load: lower is better.

Goodput is judged "at least"; latency "at most".  Each metric therefore states its direction
(:data:`DIRECTIONS`), and everything that compares a value with a line or with history asks
it instead of assuming "higher is better":

* ``latency_rules`` in the thresholds file: a ceiling on the RTT under load (p99) per qdisc,
  derived from queue physics stated beside each rule (queue limit x packet time at the link
  rate, plus the idle RTT);
* the baseline follows the p90 under load (:data:`..model.latency.BASELINE_SHARE`: the p99
  of a hundred probes is their second-latest reply, and one late reply is no regression): a
  p90 above the history's band is a regression, one below it an improvement; the band is at
  least the run's own uncertainty of its p90 (:mod:`.tail`);
* the standing across nights (:mod:`.standing`): judged on the *mirrored* figure (``-p90``,
  :func:`mirrored_night`), so a rise is a step down, stays red night after night until a
  person accepts it (``pinet accept``), and a fall moves the baseline without an accept.

A latency that was not measured is never judged: its verdict says so, with the reason.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import yaml

from ..errors import ConfigError
from ..model.latency import BASELINE_SHARE, LatencyUse
from ..yaml_text import load_yaml
from .baseline import BaselinePolicy, BaselineVerdict, judge_baseline
from .standing import Night, NightVerdict, Standing, judge_night
from .tail import tail_margin
from .threshold_rules import SHIPPED, Scalar, _same

HIGHER, LOWER = "higher", "lower"
# Which way is better, per metric the store keeps and the reports chart.
DIRECTIONS: dict[str, str] = {
    "goodput_mbps": HIGHER,
    "jain": HIGHER,
    "rtt_idle_median_ms": LOWER,
    "rtt_load_median_ms": LOWER,
    "rtt_load_p90_ms": LOWER,
    "rtt_load_p99_ms": LOWER,
    "induced_latency_ms": LOWER,
    "probe_loss_pct": LOWER,
}


def lower_is_better(metric: str) -> bool:
    """True for a metric where a smaller value is the better one (latency, loss)."""
    return DIRECTIONS.get(metric, HIGHER) == LOWER


@dataclass(frozen=True)
class LatencyRule:
    """A ceiling on the p99 round-trip time under load, for the contexts it matches."""

    rule_id: str
    match: Mapping[str, tuple[Scalar, ...]]
    max_p99_ms: float
    why: str

    def matches(self, context: Mapping[str, Any]) -> bool:
        """True when every key of the rule is in the context with an allowed value."""
        return all(
            key in context and any(_same(context[key], option) for option in allowed)
            for key, allowed in self.match.items()
        )


def latency_rules_from_data(data: Any, source: str) -> tuple[LatencyRule, ...]:
    """The ``latency_rules`` of a decoded thresholds file (none: empty), validated by the
    file's declared schema (:mod:`.thresholds_schema`), each error naming file, rule and key."""
    # Imported here, when a file is read, as thresholds.py does: the schema library must not
    # cost a pytest run anything at plugin import (issue 27).
    from .threshold_rules_schema import read_thresholds_file

    return tuple(
        LatencyRule(raw.id, dict(raw.match), raw.max_p99_ms, raw.why)
        for raw in read_thresholds_file(data, source).latency_rules
    )


def load_latency_rules(path: str | Path) -> tuple[LatencyRule, ...]:
    """The latency rules of a thresholds file (its goodput rules are :mod:`.thresholds`').

    As for goodput, a lab's file with ``extends: shipped`` (and no ``replace: true``) adds to
    the shipped latency rules: one with a shipped rule's id overrides it, its own come first.
    """
    data = _read_yaml(path)
    own = latency_rules_from_data(data, str(path))
    extends = isinstance(data, Mapping) and data.get("extends") == "shipped" and not data.get("replace")
    if not extends or Path(path).resolve() == SHIPPED:
        return own
    ids = {rule.rule_id for rule in own}
    shipped = latency_rules_from_data(_read_yaml(SHIPPED), str(SHIPPED))
    return own + tuple(rule for rule in shipped if rule.rule_id not in ids)


def _read_yaml(path: str | Path) -> Any:
    try:
        return load_yaml(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise ConfigError(str(path), f"cannot read latency rules: {exc}") from None


def latency_rule_for(rules: Sequence[LatencyRule], context: Mapping[str, Any]) -> LatencyRule | None:
    """The most specific matching rule; among equals the first."""
    best: LatencyRule | None = None
    for rule in rules:
        if rule.matches(context) and (best is None or len(rule.match) > len(best.match)):
            best = rule
    return best


def baseline_lower_is_better(
    value: float, history: Sequence[float], policy: BaselinePolicy | None = None, margin: float = 0.0
) -> BaselineVerdict:
    """:func:`.baseline.judge_baseline` for a lower-is-better metric: the same band, mirrored,
    so a rise beyond it is the regression and a fall beyond it the improvement."""
    mirrored = judge_baseline(-value, [-h for h in history], policy, margin)
    return BaselineVerdict(
        mirrored.status,
        value,
        -mirrored.baseline if mirrored.baseline is not None else None,
        mirrored.band,
        mirrored.history,
    )


def mirrored_night(
    run_id: str, started: float, figure_ms: float, rtt_ms: Sequence[float] = (), share: float = BASELINE_SHARE
) -> Night:
    """A night of a lower-is-better figure as the standing reads nights (higher is better):
    the figure (the ``share`` percentile under load, the p90 the baseline follows) and every
    probe's RTT negated, so a rise of latency is a fall of the night; its margin is how far
    the figure may lie above the true one (:func:`.tail.tail_margin`)."""
    margin = tail_margin(figure_ms, rtt_ms, share)
    return Night(run_id, started, -figure_ms, tuple(-v for v in rtt_ms), margin=margin)


def unmirrored(verdict: BaselineVerdict) -> BaselineVerdict:
    """A baseline verdict of mirrored figures back in milliseconds."""
    return BaselineVerdict(
        verdict.status,
        -verdict.value,
        -verdict.baseline if verdict.baseline is not None else None,
        verdict.band,
        verdict.history,
    )


def since_text(night: NightVerdict) -> str:
    """Since when a latency regression persists, or the slide that started it (in ms)."""
    if night.status == "persisting":
        return f"; {night.since_text()}"
    change = night.change
    if change is None or change.run_id == night.after.regressed[-1].run_id:
        return ""
    return (
        f"; a slide since run {change.run_id}: median RTT {-change.before_median:.1f} -> "
        f"{-change.after_median:.1f} ms ({-change.change_percent:+.1f} %)"
    )


@dataclass(frozen=True)
class LatencyVerdict:
    """The outcome of judging one run's latency under load."""

    status: str  # pass, above-ceiling, regression, not-measured
    p99_ms: float | None
    ceiling_ms: float | None
    rule_id: str | None
    baseline: BaselineVerdict | None
    reason: str

    @property
    def failed(self) -> bool:
        """A ceiling crossed or a regression against the baseline (never a missing figure)."""
        return self.status in ("above-ceiling", "regression")


def judge_latency(
    latency: LatencyUse | None,
    context: Mapping[str, Any],
    rules: Sequence[LatencyRule],
    history: Sequence[float],
    policy: BaselinePolicy | None = None,
    standing: Standing | None = None,
    tonight: tuple[str, float] = ("tonight", 0.0),
) -> LatencyVerdict:
    """Judge the RTT under load: its p99 against the ceiling, its p90 against its history
    (lower is better).

    With ``standing`` (the context's accepted latency nights, mirrored, and a pending
    regression: ``record.nightly``) the baseline is the accepted nights', a regression stays
    one until accepted and says since when; ``history`` is then not used.  ``tonight`` is the
    measurement's id and start, tonight's place among the nights."""
    if latency is None or latency.not_measured or latency.load is None or latency.load.p99_ms is None:
        why = latency.not_measured if latency is not None and latency.not_measured else "no probe came back"
        if latency is None:
            why = "this measurement carries no latency probe"
        return LatencyVerdict("not-measured", None, None, None, None, f"latency not measured: {why}")
    p99 = latency.load.p99_ms
    rule = latency_rule_for(rules, context)
    night: NightVerdict | None = None
    rtts = [v for v in latency.load_rtt_ms if v is not None]
    followed = latency.baseline_ms
    followed = p99 if followed is None else followed  # not taken: a probe series with a p99 has a p90
    if standing is not None:
        mirrored = replace(mirrored_night(*tonight, followed, rtts), prior=standing.tonight_prior)
        night = judge_night(standing, mirrored, (), policy)
        base = unmirrored(night.baseline)
    else:
        base = baseline_lower_is_better(followed, history, policy, tail_margin(followed, rtts))
    regressed = night.regression if night is not None else base.regression
    since = since_text(night) if night is not None and night.regression else ""
    figures = f"RTT under load p99 {p99:.1f} ms"
    if rule is not None and p99 > rule.max_p99_ms:
        return LatencyVerdict(
            "above-ceiling",
            p99,
            rule.max_p99_ms,
            rule.rule_id,
            base,
            f"{figures} above the ceiling {rule.max_p99_ms:g} ms (rule {rule.rule_id}: lower is better)"
            + (f"; also a regression{since}" if regressed else ""),
        )
    if regressed and base.baseline is not None and base.band is not None:
        # The words goodput's failures start with (the report's categories match them).
        head = (
            "" if night is None else f" ({'persisting' if night.status == 'persisting' else 'new tonight'})"
        )
        return LatencyVerdict(
            "regression",
            p99,
            rule.max_p99_ms if rule else None,
            rule.rule_id if rule else None,
            base,
            f"RTT under load p90 {followed:.1f} ms (p99 {p99:.1f} ms): regression against baseline{head} "
            f"{base.baseline:.1f} +- {base.band:.1f} ms (p90, from {base.history} earlier results; "
            f"lower is better){since}",
        )
    ceiling = f", ceiling {rule.max_p99_ms:g} ms (rule {rule.rule_id})" if rule else ""
    accepted = (
        f"; baseline level from {standing.accepted_by.explain()}"
        if standing is not None and standing.accepted_by is not None
        else ""
    )
    return LatencyVerdict(
        "pass", p99, rule.max_p99_ms if rule else None, rule.rule_id if rule else None, base,
        f"{figures}{ceiling}; p90 {followed:.1f} ms, baseline: {base.status}{accepted}",
    )  # fmt: skip
