"""The thresholds file's shape, declared once: which keys a rule has and what each may hold.

Cross-rule facts (ids unique, a rule has a floor) stay in ``thresholds.py``; everything about
one value is here, so a new key (a rule's ``model:``) is one line with its check.  Imported
only when a thresholds file is read (attrs and cattrs are not free to import).
"""

import dataclasses
import fnmatch
from collections.abc import Mapping
from typing import Annotated, Any, ClassVar

import attrs

from ..model.context import SCENARIOS, TrafficContext
from ..schema.checks import BoardModel, Check, Flag, ForKeys, Invalid, NonEmptyText, OneOf, Positive, Text
from ..schema.convert import structure
from .path_limit import PARTS

# What a rule may match on: every field of a measurement's context but how long it ran (a
# run's length is a setting, not a kind of path), read from the context itself.
MATCH_KEYS = tuple(
    field.name for field in dataclasses.fields(TrafficContext) if field.name not in ("duration_s", "omit_s")
)

Scalar = str | int | float


class ScalarOrList(Check):
    """A match value: one scalar, or a non-empty list of them (any of which matches)."""

    def __call__(self, value: Any) -> tuple[Scalar, ...]:
        values = value if isinstance(value, list) else [value]
        if not values or not all(
            isinstance(v, str | int | float) and not isinstance(v, bool) for v in values
        ):
            raise Invalid("must be a scalar or a list of scalars")
        return tuple(values)


class MatchKey(Check):
    """A context key a rule may match on."""

    def __call__(self, value: Any) -> str:
        if not isinstance(value, str) or value not in MATCH_KEYS:
            raise Invalid(f"unknown match key {value!r}", f"allowed: {sorted(MATCH_KEYS)}")
        return value


class ModelMatch(Check):
    """``match.model``: known board models, or patterns (``CM*``) taken as written; a typo
    would be a rule that never matches."""

    def __call__(self, value: Any) -> tuple[Scalar, ...]:
        values = ScalarOrList()(value)
        for one in values:
            if not (isinstance(one, str) and "*" in one):
                BoardModel()(one)
        return values


class WordsMatch(Check):
    """A match key whose values are a closed set of words (``scenario``, ``limited_by``):
    a misspelt one, or a pattern that matches none of them, would be a rule that never
    matches; it is an error naming the known words instead."""

    def __init__(self, known: tuple[str, ...]) -> None:
        self.known = known

    def __call__(self, value: Any) -> tuple[Scalar, ...]:
        values = ScalarOrList()(value)
        for one in values:
            if not any(fnmatch.fnmatchcase(word, str(one)) for word in self.known):
                raise Invalid(
                    f"is {one!r}, which names nothing", f"use one of {list(self.known)} (or a * pattern)"
                )
        return values


@attrs.frozen
class RuleSchema:
    """One rule as written; errors show its id beside its index (``rules[3] (gbe)``)."""

    schema_label: ClassVar[str] = "id"

    id: Annotated[str, NonEmptyText("must be a non-empty string")]
    match: Annotated[
        Mapping[Annotated[str, MatchKey()], Annotated[Any, ScalarOrList()]],
        ForKeys(model=ModelMatch(), scenario=WordsMatch(SCENARIOS), limited_by=WordsMatch(PARTS)),
    ] = attrs.field(factory=dict)
    min_mbps: Annotated[float, Positive()] | None = None
    min_fraction_of_limit: Annotated[float, Positive(at_most=1)] | None = None
    min_jain: Annotated[float, Positive(at_most=1, too_big="is Jain's index: at most 1")] | None = None
    known_slow: Annotated[str, NonEmptyText("must be the reason, as text")] | None = None
    why: Annotated[str, Text()] = ""


@attrs.frozen
class LatencyRuleSchema:
    """A ceiling on the p99 RTT under load (lower is better; judged by ``judge.latency_verdict``)."""

    schema_label: ClassVar[str] = "id"

    id: Annotated[str, NonEmptyText("must be a non-empty string")]
    max_p99_ms: Annotated[float, Positive()]
    match: Mapping[Annotated[str, MatchKey()], Annotated[Any, ScalarOrList()]] = attrs.field(factory=dict)
    why: Annotated[str, Text()] = ""


@attrs.frozen
class ThresholdsFile:
    """A thresholds file: its goodput rules, its latency rules, how it relates to the shipped
    ones (and the format version, not read yet)."""

    rules: tuple[RuleSchema, ...]
    version: Any = None
    # A lab's file adds its rules to the shipped ones with ``extends: shipped``; without it
    # (or with ``replace: true``) its rules are all there is.
    extends: Annotated[str, OneOf(("shipped",), "extends: shipped is the one file a lab extends")] | None = (
        None
    )
    replace: Annotated[bool, Flag()] = False
    latency_rules: tuple[LatencyRuleSchema, ...] = ()


def read_thresholds_file(data: Any, source: str) -> ThresholdsFile:
    """Decoded YAML as a thresholds file, or a ConfigError naming the file, the rule and the key."""
    return structure(data, ThresholdsFile, source)
