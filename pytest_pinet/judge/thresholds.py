"""Thresholds as data: ``lab/thresholds.yaml`` says what each kind of measurement must reach.

A rule matches a measurement's context (board, adapter, direction, duplex, scenario, ...)
and states a floor, absolute (``min_mbps: 940``) or relative to the line-rate model
(``min_fraction_of_limit: 0.99``).  The most specific matching rule wins, so a lab can state
a general GbE rule and override it for one slow adapter without touching code.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from ..errors import ConfigError

# The rules that ship in the package; a lab file says whether it adds to them.
SHIPPED = Path(__file__).resolve().parent.parent / "data" / "thresholds.yaml"

Scalar = str | int | float


@dataclass(frozen=True)
class RuleCheck:
    """The outcome of judging one measured figure against its rule."""

    passed: bool
    measured_mbps: float
    expected_mbps: float
    limit_mbps: float | None
    rule_id: str
    why: str
    jain: float | None = None  # per-stream fairness measured, when the rule asks for it
    min_jain: float | None = None
    known_slow: str | None = None  # a known limitation: below the floor is an xfail, with this reason

    @property
    def fair(self) -> bool:
        """False only when the rule sets a fairness floor and the streams missed it."""
        return self.min_jain is None or (self.jain is not None and self.jain >= self.min_jain)

    def explain(self) -> str:
        """One line a lab engineer reads in a failure: measured, expected, theoretical."""
        limit = f", line-rate limit {self.limit_mbps:.1f} Mbit/s" if self.limit_mbps else ""
        state = "meets" if self.measured_mbps >= self.expected_mbps else "below"
        fairness = ""
        if self.min_jain is not None:
            measured = f"{self.jain:.3f}" if self.jain is not None else "n/a"
            fairness = (
                f"; fairness (Jain) {measured} {'meets' if self.fair else 'below'} >= {self.min_jain:.3f}"
            )
        return (
            f"measured {self.measured_mbps:.1f} Mbit/s {state} expected >= "
            f"{self.expected_mbps:.1f} Mbit/s (rule {self.rule_id}{limit}){fairness}"
        )


@dataclass(frozen=True)
class Rule:
    """One rule of the thresholds file."""

    rule_id: str
    match: Mapping[str, tuple[Scalar, ...]]
    min_mbps: float | None
    min_fraction_of_limit: float | None
    why: str
    min_jain: float | None = None
    known_slow: str | None = None

    def matches(self, context: Mapping[str, Any]) -> bool:
        """True when every key of the rule is in the context with an allowed value."""
        for key, allowed in self.match.items():
            if key not in context:
                return False
            value = context[key]
            if not any(_same(value, option) for option in allowed):
                return False
        return True

    def floor(self, limit_mbps: float | None) -> float:
        """The goodput the measurement must reach: the stricter of the two forms."""
        floors = []
        if self.min_mbps is not None:
            floors.append(self.min_mbps)
        if self.min_fraction_of_limit is not None:
            if limit_mbps is None:
                raise ConfigError(
                    f"threshold rule {self.rule_id}",
                    "min_fraction_of_limit needs a line-rate limit and the context gave none",
                )
            floors.append(self.min_fraction_of_limit * limit_mbps)
        return max(floors)


def _same(value: Any, option: Scalar) -> bool:
    if isinstance(option, int | float) and isinstance(value, int | float):
        return float(value) == float(option)
    if isinstance(option, str) and "*" in option:
        # A pattern: "FreeBSD*" for every FreeBSD release, "6.12.*" for a kernel series.
        return fnmatch.fnmatchcase(str(value), option)
    return str(value) == str(option)


@dataclass(frozen=True)
class Thresholds:
    """All rules of one thresholds file."""

    source: str
    rules: tuple[Rule, ...]
    # How this file relates to the shipped rules: "shipped" (it is them), "extends" (its
    # rules first, then the shipped ones it did not override by id), "replace" (its own only).
    mode: str = "replace"

    def rule_for(self, context: Mapping[str, Any]) -> Rule | None:
        """The most specific matching rule; among equals the first in the file."""
        best: Rule | None = None
        for rule in self.rules:
            if rule.matches(context) and (best is None or len(rule.match) > len(best.match)):
                best = rule
        return best

    def judge(
        self,
        context: Mapping[str, Any],
        measured_mbps: float,
        limit_mbps: float | None,
        jain: float | None = None,
    ) -> RuleCheck | None:
        """Judge ``measured_mbps`` (and the streams' fairness ``jain`` where the rule sets a
        floor for it); ``None`` when no rule covers this context."""
        rule = self.rule_for(context)
        if rule is None:
            return None
        floor = rule.floor(limit_mbps)
        fair = rule.min_jain is None or (jain is not None and jain >= rule.min_jain)
        return RuleCheck(
            passed=measured_mbps >= floor and fair,
            measured_mbps=measured_mbps,
            expected_mbps=floor,
            limit_mbps=limit_mbps,
            rule_id=rule.rule_id,
            why=rule.why,
            jain=jain,
            min_jain=rule.min_jain,
            known_slow=rule.known_slow,
        )


def load_thresholds(path: str | Path) -> Thresholds:
    """Read and validate a thresholds file; every error names the file and the rule.

    A lab's file with ``extends: shipped`` adds to the shipped rules: a rule with the id of a
    shipped one overrides it, the others come first, so among equally specific rules the
    lab's wins.  Without it (or with ``replace: true``) the file's rules are all there is.
    """
    thresholds = _read(path)
    if thresholds.mode != "extends":
        return thresholds
    shipped = _read(SHIPPED)
    own = {rule.rule_id for rule in thresholds.rules}
    kept = tuple(rule for rule in shipped.rules if rule.rule_id not in own)
    return Thresholds(thresholds.source, thresholds.rules + kept, "extends")


def describe_mode(path: Path) -> str:
    """How ``path`` relates to the shipped rules, for the run header ("" when unreadable:
    loading it reports why)."""
    try:
        mode = _read(path).mode
    except ConfigError:
        return ""
    return {
        "shipped": "the shipped rules",
        "extends": "adds to the shipped rules (extends: shipped)",
        "replace": "its own rules only, the shipped ones unused (write extends: shipped to add to them)",
    }[mode]


def _read(path: str | Path) -> Thresholds:
    source = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(source, f"cannot read thresholds file: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(source, f"not UTF-8 text (byte {exc.start})") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        raise ConfigError(source, f"malformed YAML{where}", "fix the syntax") from None
    return thresholds_from_data(data, source)


def thresholds_from_data(data: Any, source: str) -> Thresholds:
    """Validate already-decoded thresholds data against the declared schema, then across rules."""
    # Imported here, when a file is read: the schema library must not cost a pytest run that
    # never loads a thresholds file anything at plugin import (issue 27).
    from .thresholds_schema import read_thresholds_file

    checked = read_thresholds_file(data, source)
    mode = _mode(checked.extends, checked.replace, source)

    rules: list[Rule] = []
    for index, raw in enumerate(checked.rules):
        where = f"{source}: rules[{index}] ({raw.id})"
        if raw.min_mbps is None and raw.min_fraction_of_limit is None:
            raise ConfigError(where, "a rule needs min_mbps or min_fraction_of_limit")
        if any(rule.rule_id == raw.id for rule in rules):
            raise ConfigError(source, f"rule id {raw.id!r} appears twice", "ids must be unique")
        rules.append(
            Rule(
                raw.id,
                dict(raw.match),
                raw.min_mbps,
                raw.min_fraction_of_limit,
                raw.why,
                raw.min_jain,
                raw.known_slow,
            )
        )
    return Thresholds(source, tuple(rules), mode)


def _mode(extends: str | None, replace: bool, source: str) -> str:
    """``extends: shipped`` or ``replace: true`` (the default for any file but the shipped one);
    the schema checked each value, this what they say together."""
    if extends is not None and replace:
        raise ConfigError(source, "extends: shipped and replace: true contradict each other", "keep one")
    shipped = Path(source).resolve() == SHIPPED
    if extends is not None:
        if shipped:
            raise ConfigError(source, "the shipped thresholds cannot extend themselves")
        return "extends"
    return "shipped" if shipped else "replace"
