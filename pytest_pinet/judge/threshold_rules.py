"""Thresholds as data: ``lab/thresholds.yaml`` says what each kind of measurement must reach.

A rule matches a measurement's context (board, model, adapter, direction, duplex, scenario,
and ``limited_by``: which part of the path sets its limit) and states a floor, a share of the
path's limit (``min_fraction_of_limit: 0.9``; the limit is :func:`.path_limit.path_limit`'s,
from the path's physics) or absolute (``min_mbps: 940``, the user's own figure where a cable
is the limit, or a collapse floor where no share can hold).

A shipped floor never exceeds what the path can carry: a shipped rule whose absolute floor is
above a context's limit does not judge that context (940 Mbit/s is a GbE cable's floor, not
a Pi 3B+'s, whose GbE port is a USB 2 device), and the next matching rule does.  A lab's own
rule judges as written; ``pinet lab check`` warns where its floor is above its path's limit.

Rules come in layers: the shipped rules, and above them a lab's own file (``extends:
shipped``).  A matching lab rule wins over every shipped one, but only where it matches: each
rule names the scenarios it judges (a rule without ``scenario`` is refused), so ``{model: "Pi
3B+", scenario: ethernet}`` narrows that model's Ethernet floors and leaves its storage and
UDP to theirs.  Inside one layer a matching rule naming the board wins (it speaks of that one
host: a board under emulation is judged by its own rules whatever driver its context names),
then the most specific (most match keys), then the first in the file.  A context no rule
names is judged against :data:`UNMATCHED_FRACTION` of its own limit, and says so.
:meth:`Thresholds.explain` tells which rule judged a context and why each other matching rule
lost (``pinet thresholds explain``).
"""

from __future__ import annotations

import dataclasses
import fnmatch
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from ..errors import ConfigError
from ..yaml_text import load_yaml
from .path_limit import PathLimit, path_limit

# The rules that ship in the package; a lab file says whether it adds to them.
SHIPPED = Path(__file__).resolve().parent.parent / "data" / "thresholds.yaml"
# The layers, lowest first: a matching rule of a higher layer wins over any of a lower one.
SHIPPED_LAYER, LAB_LAYER = 0, 1
# A link no rule names (100 Mbit/s, 2.5 GbE, jumbo frames, ...) must still carry this share of
# what its line-rate model allows: a collapse floor, from the physics, never "no rule".
UNMATCHED_FRACTION = 0.9
UNMATCHED_RULE_ID = "line-rate-fraction"

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
        limit = f", path limit {self.limit_mbps:.1f} Mbit/s" if self.limit_mbps else ""
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
    layer: int = LAB_LAYER  # SHIPPED_LAYER for the package's own rules

    @property
    def layer_name(self) -> str:
        """The layer in words, for explanations."""
        return "shipped" if self.layer == SHIPPED_LAYER else "the lab's file"

    def matches(self, context: Mapping[str, Any]) -> bool:
        """True when every key of the rule is in the context with an allowed value."""
        for key, allowed in self.match.items():
            if key not in context:
                return False
            value = context[key]
            if not any(_same(value, option) for option in allowed):
                return False
        return True

    def above(self, limit_mbps: float | None) -> bool:
        """Whether the rule's absolute floor is more than a path of ``limit_mbps`` carries (0
        or None: no limit known, nothing is above it)."""
        return bool(limit_mbps) and self.min_mbps is not None and self.min_mbps > float(limit_mbps or 0)

    def steps_aside(self, limit_mbps: float | None) -> bool:
        """A shipped rule whose floor a path cannot carry judges no context of it: the shipped
        absolute floors are written for paths whose cable is the limit.  A lab's own rule
        still judges (its floor missed, as the lab wrote it); ``pinet lab check`` and
        ``pinet thresholds explain`` say it is above what the path carries."""
        return self.layer == SHIPPED_LAYER and self.above(limit_mbps)

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

    def matching(self, context: Mapping[str, Any], limit_mbps: float | None = None) -> list[Rule]:
        """Every rule matching ``context`` whose floor its path can carry (``limit_mbps``), the
        winner first: the highest layer, then a rule naming the board, then the most match keys,
        then the first in the file."""
        found = [
            (index, rule)
            for index, rule in enumerate(self.rules)
            if rule.matches(context) and not rule.steps_aside(limit_mbps)
        ]
        found.sort(
            key=lambda pair: (-pair[1].layer, "board" not in pair[1].match, -len(pair[1].match), pair[0])
        )
        return [rule for _, rule in found]

    def rule_for(self, context: Mapping[str, Any], limit_mbps: float | None = None) -> Rule | None:
        """The rule that judges ``context`` (see :meth:`matching`); with no matching rule and a
        limit, the share of it every path is held to."""
        found = self.matching(context, limit_mbps)
        if found:
            return found[0]
        return unmatched_rule(limit_mbps) if limit_mbps else None

    def explain(self, context: Mapping[str, Any], limit_mbps: float | None, why_limit: str = "") -> list[str]:
        """Which rule judges ``context``, its floor and the path's limit (``why_limit``: which
        part sets it), and why each other matching rule lost: what ``pinet thresholds explain``
        prints."""
        found = self.matching(context, limit_mbps)
        chosen = self.rule_for(context, limit_mbps)
        if chosen is None:
            return [f"no rule in {self.source} matches and no limit is known: nothing judges it"]
        limit = f"{limit_mbps:.1f} Mbit/s" if limit_mbps else "none known"
        try:
            floor: float | None = chosen.floor(limit_mbps)
        except ConfigError:  # a share of the limit, and no limit known
            floor = None
        floor_text = f"{floor:.1f} Mbit/s" if floor is not None else "needs the path's limit"
        lines = [
            f"rule {chosen.rule_id} ({chosen.layer_name}, {len(chosen.match)} match keys) judges it",
            f"  floor {floor_text}, path limit {limit}" + (f": {why_limit}" if why_limit else ""),
            f"  why: {chosen.why}",
        ]
        for loser in found[1:]:
            if loser.layer != chosen.layer:
                reason = f"{loser.layer_name} rule: a matching rule of {chosen.layer_name} wins over it"
            elif "board" in chosen.match and "board" not in loser.match:
                reason = "names no board: the rule naming this board wins over it"
            elif len(loser.match) < len(chosen.match):
                reason = f"less specific ({len(loser.match)} match keys against {len(chosen.match)})"
            else:
                reason = "as specific, later in the file"
            lines.append(f"  matched and lost: {loser.rule_id} ({reason})")
        for high in (rule for rule in self.rules if rule.matches(context) and rule.steps_aside(limit_mbps)):
            lines.append(
                f"  matched, not for this path: {high.rule_id} (its floor {high.min_mbps:g} Mbit/s is above "
                f"the path's limit)"
            )
        if chosen.above(limit_mbps):
            lines.append("  WARNING: its floor is above what this path carries: red by construction")
        return lines

    def judge(
        self,
        context: Mapping[str, Any],
        measured_mbps: float,
        limit_mbps: float | None,
        jain: float | None = None,
    ) -> RuleCheck | None:
        """Judge ``measured_mbps`` (and the streams' fairness ``jain`` where the rule sets a
        floor for it); ``None`` when no rule covers this context and no limit is known."""
        rule = self.rule_for(context, limit_mbps)
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


@dataclass(frozen=True)
class Judged:
    """A context as a run judges it: its path's limit, the rule, the floor (None: no rule)."""

    context: Mapping[str, Any]  # with ``limited_by``, as the measurer records it
    path: PathLimit
    rule: Rule | None
    floor: float | None


def judged(thresholds: Thresholds, context: Mapping[str, Any], **physics: Any) -> Judged:
    """Which rule judges ``context`` and at what floor, with its path's limit found the way a
    measurer finds it (:func:`.path_limit.path_limit`); ``physics`` as that function takes."""
    path = path_limit(context, **physics)
    limited = {**context, "limited_by": path.part}
    rule = thresholds.rule_for(limited, path.mbps)
    return Judged(limited, path, rule, rule.floor(path.mbps) if rule else None)


def unmatched_rule(limit_mbps: float) -> Rule:
    """The floor of a path no rule names: a share of its own limit."""
    return Rule(
        UNMATCHED_RULE_ID,
        {},
        None,
        UNMATCHED_FRACTION,
        f"no rule names this path: it must carry {UNMATCHED_FRACTION:.0%} of its limit "
        f"({limit_mbps:.1f} Mbit/s); add a rule for its own floor (docs/inventory.md)",
        layer=SHIPPED_LAYER,
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


def _in_layer(rules: list[Rule], layer: int) -> tuple[Rule, ...]:
    return tuple(dataclasses.replace(rule, layer=layer) for rule in rules)


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
        data = load_yaml(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        raise ConfigError(source, f"malformed YAML{where}", "fix the syntax") from None
    return thresholds_from_data(data, source)


def thresholds_from_data(data: Any, source: str) -> Thresholds:
    """Validate already-decoded thresholds data against the declared schema, then across rules."""
    # Imported here, when a file is read: the schema library must not cost a pytest run that
    # never loads a thresholds file anything at plugin import (issue 27).
    from .threshold_rules_schema import read_thresholds_file

    checked = read_thresholds_file(data, source)
    mode = _mode(checked.extends, checked.replace, source)

    rules: list[Rule] = []
    for index, raw in enumerate(checked.rules):
        where = f"{source}: rules[{index}] ({raw.id})"
        if raw.min_mbps is None and raw.min_fraction_of_limit is None:
            raise ConfigError(where, "a rule needs min_mbps or min_fraction_of_limit")
        if "scenario" not in raw.match:
            raise ConfigError(
                where,
                "names no scenario: it would judge every kind of measurement alike (a Pi's Ethernet "
                "floor applied to 8-byte disk writes and to full duplex)",
                "add match.scenario: the scenarios it judges (ethernet, usb-adapter, routing, "
                "routing+disk-io, storage, udp-sendto, udp-sendmmsg, udp-raw; 'udp-*' for every UDP mode)",
            )
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
    return Thresholds(source, _in_layer(rules, SHIPPED_LAYER if mode == "shipped" else LAB_LAYER), mode)


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
