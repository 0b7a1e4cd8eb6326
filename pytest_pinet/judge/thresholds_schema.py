"""The thresholds file's shape, declared once: which keys a rule has and what each may hold.

Cross-rule facts (ids unique, a rule has a floor) stay in ``thresholds.py``; everything about
one value is here, so a new key (a rule's ``model:``) is one line with its check.  Imported
only when a thresholds file is read (attrs and cattrs are not free to import).
"""

from collections.abc import Mapping
from typing import Annotated, Any, ClassVar

import attrs

from ..schema.checks import Check, Invalid, NonEmptyText, Positive, Text
from ..schema.convert import structure

MATCH_KEYS = (
    "board",
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


@attrs.frozen
class RuleSchema:
    """One rule as written; errors show its id beside its index (``rules[3] (gbe)``)."""

    schema_label: ClassVar[str] = "id"

    id: Annotated[str, NonEmptyText("must be a non-empty string")]
    match: Mapping[Annotated[str, MatchKey()], Annotated[Any, ScalarOrList()]] = attrs.field(factory=dict)
    min_mbps: Annotated[float, Positive()] | None = None
    min_fraction_of_limit: Annotated[float, Positive(at_most=1)] | None = None
    min_jain: Annotated[float, Positive(at_most=1, too_big="is Jain's index: at most 1")] | None = None
    known_slow: Annotated[str, NonEmptyText("must be the reason, as text")] | None = None
    why: Annotated[str, Text()] = ""


@attrs.frozen
class ThresholdsFile:
    """A thresholds file: its rules (and the format version, not read yet)."""

    rules: tuple[RuleSchema, ...]
    version: Any = None


def read_thresholds_file(data: Any, source: str) -> ThresholdsFile:
    """Decoded YAML as a thresholds file, or a ConfigError naming the file, the rule and the key."""
    return structure(data, ThresholdsFile, source)
