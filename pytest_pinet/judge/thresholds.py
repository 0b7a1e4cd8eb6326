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
from ..model.board_models import board_model

# The rules that ship in the package; a lab file says whether it adds to them.
SHIPPED = Path(__file__).resolve().parent.parent / "data" / "thresholds.yaml"
TOP_KEYS = frozenset({"version", "rules", "extends", "replace"})

MATCH_KEYS = frozenset(
    {
        "board",
        "model",
        "peer",
        "adapter",
        "driver",
        "direction",
        "duplex",
        "scenario",
        "profile",
        "qdisc",
        "protocol",
        "link_speed_mbps",
        "mtu",
        "kernel",
        "image",
        "os",
        "lab",
        "rate_target_mbps",
        "filesystem",
        "block_bytes",
        "streams",
    }
)
RULE_KEYS = frozenset({"id", "match", "min_mbps", "min_fraction_of_limit", "min_jain", "known_slow", "why"})

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
    """Validate already-decoded thresholds data."""
    if not isinstance(data, Mapping) or not isinstance(data.get("rules"), list):
        raise ConfigError(source, "expected a mapping with a 'rules' list")
    unknown = set(data) - TOP_KEYS
    if unknown:
        raise ConfigError(
            source,
            f"unknown top-level keys {sorted(unknown, key=str)}",
            f"allowed: {', '.join(sorted(TOP_KEYS))}",
        )
    mode = _mode(data, source)
    rules = []
    seen: set[str] = set()
    for index, raw in enumerate(data["rules"]):
        rule = _rule(raw, f"{source}: rules[{index}]")
        if rule.rule_id in seen:
            raise ConfigError(source, f"rule id {rule.rule_id!r} appears twice", "ids must be unique")
        seen.add(rule.rule_id)
        rules.append(rule)
    return Thresholds(source, tuple(rules), mode)


def _mode(data: Mapping[str, Any], source: str) -> str:
    """``extends: shipped`` or ``replace: true`` (the default for any file but the shipped one)."""
    extends, replace = data.get("extends"), data.get("replace", False)
    if extends is not None and extends != "shipped":
        raise ConfigError(source, f"extends is {extends!r}", "extends: shipped is the one file a lab extends")
    if not isinstance(replace, bool):
        raise ConfigError(source, f"replace must be true or false, got {replace!r}")
    if extends is not None and replace:
        raise ConfigError(source, "extends: shipped and replace: true contradict each other", "keep one")
    if extends is not None:
        if Path(source).resolve() == SHIPPED:
            raise ConfigError(source, "the shipped thresholds cannot extend themselves")
        return "extends"
    return "shipped" if Path(source).resolve() == SHIPPED else "replace"


def _rule(raw: Any, where: str) -> Rule:
    if not isinstance(raw, Mapping):
        raise ConfigError(where, "a rule must be a mapping")
    unknown = set(raw) - RULE_KEYS
    if unknown:
        raise ConfigError(where, f"unknown keys {sorted(unknown, key=str)}", f"allowed: {sorted(RULE_KEYS)}")
    rule_id = raw.get("id")
    if not isinstance(rule_id, str) or not rule_id:
        raise ConfigError(where, "'id' must be a non-empty string")
    match_raw = raw.get("match", {})
    if not isinstance(match_raw, Mapping):
        raise ConfigError(f"{where} ({rule_id})", "'match' must be a mapping")
    match: dict[str, tuple[Scalar, ...]] = {}
    for key, value in match_raw.items():
        if key not in MATCH_KEYS:
            raise ConfigError(
                f"{where} ({rule_id})", f"unknown match key {key!r}", f"allowed: {sorted(MATCH_KEYS)}"
            )
        values = value if isinstance(value, list) else [value]
        if not values or not all(
            isinstance(v, str | int | float) and not isinstance(v, bool) for v in values
        ):
            raise ConfigError(f"{where} ({rule_id})", f"match.{key} must be a scalar or a list of scalars")
        if key == "model":  # a typo would be a rule that never matches: name the known models
            for value in values:
                if not (isinstance(value, str) and "*" in value):
                    board_model(value, f"{where} ({rule_id})", "match.model")
        match[key] = tuple(values)
    min_mbps = _positive(raw.get("min_mbps"), f"{where} ({rule_id}) min_mbps")
    fraction = _positive(raw.get("min_fraction_of_limit"), f"{where} ({rule_id}) min_fraction_of_limit")
    if fraction is not None and fraction > 1:
        raise ConfigError(f"{where} ({rule_id})", "min_fraction_of_limit must be at most 1")
    if min_mbps is None and fraction is None:
        raise ConfigError(f"{where} ({rule_id})", "a rule needs min_mbps or min_fraction_of_limit")
    min_jain = _positive(raw.get("min_jain"), f"{where} ({rule_id}) min_jain")
    if min_jain is not None and min_jain > 1:
        raise ConfigError(f"{where} ({rule_id})", "min_jain is Jain's index: at most 1")
    known_slow = raw.get("known_slow")
    if known_slow is not None and (not isinstance(known_slow, str) or not known_slow.strip()):
        raise ConfigError(f"{where} ({rule_id})", "known_slow must be the reason, as text")
    why = raw.get("why", "")
    return Rule(rule_id, match, min_mbps, fraction, str(why), min_jain, known_slow)


def _positive(value: Any, where: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        raise ConfigError(where, f"must be a positive number, got {value!r}")
    return float(value)
