"""Value checks a schema field declares, and the errors they raise.

A field says what it accepts next to its type, ``speed_mbps: Annotated[int, Integer(1, 400_000)]``;
the check sees the value exactly as YAML decoded it (so ``true`` is never the integer 1 and
``'940'`` never a number) and returns what the loaded object holds.  Its message is the part a
user reads after the key path (``pinet.links[0].mtu must be an integer 68..65535, got 20``), so
each check words it for its field; ``convert`` adds the file and the path.
"""

from __future__ import annotations

import ipaddress
import math
import re
from collections.abc import Callable, Collection, Mapping
from typing import Any

from ..model.board_models import BOARD_MODELS, kernel_keys, model_fix


class Invalid(Exception):
    """A value a check refused: what is wrong and what to do; the key path is added by the reader."""

    def __init__(self, message: str, fix: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.fix = fix

    def describe(self, path: str) -> str:
        """The line a user reads, after the file name."""
        return f"{path} {self.message}" if path else self.message


class NotAMapping(Invalid):
    """A section that must be a mapping is something else."""

    def __init__(self, keys: Collection[str]) -> None:
        super().__init__("must be a mapping", f"keys: {sorted(keys)}" if keys else None)

    def describe(self, path: str) -> str:
        """At the top of a file there is no key to name: say what the file must be."""
        return f"{path} must be a mapping" if path else "expected a mapping"


class BadKeys(Invalid):
    """A section with keys its schema does not know, or without keys it requires."""

    def __init__(self, unknown: list[Any], missing: list[str], noun: str, fix: str) -> None:
        parts = [f"unknown {noun} {unknown}"] if unknown else []
        parts += [f"missing {missing}"] if missing else []
        super().__init__(", ".join(parts), fix)

    def describe(self, path: str) -> str:
        """``pinet.links[0]: missing ['peer']``; at the top, ``unknown top-level keys [...]``."""
        if path:
            return f"{path}: {self.message}"
        return self.message.replace("unknown keys", "unknown top-level keys", 1)


class BadKey(Invalid):
    """A mapping key its schema refuses (an unknown match key, an interface name with a ``;``).

    A key's check words its message with the key in it (``unknown match key 'colour'``): a key
    has no path of its own to stand after.
    """

    def __init__(self, reason: Invalid) -> None:
        super().__init__(reason.message, reason.fix)

    def describe(self, path: str) -> str:
        """Named at the mapping that holds the key."""
        return f"{path}: {self.message}" if path else self.message


class AtKey(Invalid):
    """A value refused under one key of a mapping whose values are otherwise alike (``ForKeys``)."""

    def __init__(self, key: str, reason: Invalid) -> None:
        super().__init__(reason.message, reason.fix)
        self.key = key

    def describe(self, path: str) -> str:
        """``rules[0] (x).match.model is 'Pi 4', ...``: the key is part of the path."""
        return f"{path}.{self.key} {self.message}" if path else f"{self.key} {self.message}"


class Check:
    """A field's rule: ``check(value)`` returns the value to keep or raises ``Invalid``."""

    def __call__(self, value: Any) -> Any:
        raise NotImplementedError


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


class Integer(Check):
    """An integer in ``low..high`` (a YAML boolean or a quoted number is not one)."""

    def __init__(
        self, low: int, high: int, message: str = "must be an integer {low}..{high}, got {value!r}"
    ) -> None:
        self.low, self.high, self.message = low, high, message

    def __call__(self, value: Any) -> int:
        if not _is_int(value) or not self.low <= value <= self.high:
            raise Invalid(self.message.format(low=self.low, high=self.high, value=value))
        return int(value)


class Positive(Check):
    """A finite number above zero, at most ``at_most`` when given (NaN would make every floor fail)."""

    def __init__(self, at_most: float | None = None, too_big: str = "must be at most {at_most:g}") -> None:
        self.at_most, self.too_big = at_most, too_big

    def __call__(self, value: Any) -> float:
        if not isinstance(value, int | float) or isinstance(value, bool) or not math.isfinite(value):
            raise Invalid(f"must be a positive number, got {value!r}")
        if value <= 0:
            raise Invalid(f"must be a positive number, got {value!r}")
        if self.at_most is not None and value > self.at_most:
            raise Invalid(self.too_big.format(at_most=self.at_most))
        return float(value)


class Flag(Check):
    """``true`` or ``false``, as YAML writes them (``yes`` quoted or ``1`` is neither)."""

    def __init__(self, message: str = "must be true or false, got {value!r}") -> None:
        self.message = message

    def __call__(self, value: Any) -> bool:
        if not isinstance(value, bool):
            raise Invalid(self.message.format(value=value))
        return value


class OneOf(Check):
    """One of a few words; the fix lists them."""

    def __init__(self, options: Collection[str], fix: str | None = None) -> None:
        self.options = tuple(options)
        self.fix = fix or f"use one of {list(self.options)}"

    def __call__(self, value: Any) -> str:
        if not isinstance(value, str) or value not in self.options:
            raise Invalid(f"is {value!r}", self.fix)
        return value


class Text(Check):
    """Free text (a name, a reason); a bare number is taken as written, ``true`` or a list is not text."""

    def __init__(self, message: str = "must be text, got {value!r}", *, numbers: bool = True) -> None:
        self.message, self.numbers = message, numbers

    def __call__(self, value: Any) -> str:
        if isinstance(value, str):
            return value
        if self.numbers and isinstance(value, int | float) and not isinstance(value, bool):
            return str(value)
        raise Invalid(self.message.format(value=value))


class NonEmptyText(Check):
    """Text with something in it besides blanks, kept without surrounding blanks when ``strip``."""

    def __init__(self, message: str, fix: str | None = None, *, strip: bool = False) -> None:
        self.message, self.fix, self.strip = message, fix, strip

    def __call__(self, value: Any) -> str:
        if not isinstance(value, str) or not value.strip():
            raise Invalid(self.message.format(value=value), self.fix)
        return value.strip() if self.strip else value


class Pattern(Check):
    """Text matching a regular expression as a whole: what reaches a remote shell is plain."""

    def __init__(self, regex: str | re.Pattern[str], message: str, fix: str | None = None) -> None:
        self.regex = re.compile(regex) if isinstance(regex, str) else regex
        self.message, self.fix = message, fix

    def __call__(self, value: Any) -> str:
        if not isinstance(value, str) or not self.regex.fullmatch(value):
            raise Invalid(self.message.format(value=value), self.fix)
        return value


class IpAddress(Check):
    """An IPv4 or IPv6 address (test-network ends of a link, never a host name)."""

    def __call__(self, value: Any) -> str:
        try:
            ipaddress.ip_address(value if isinstance(value, str) else "")
        except ValueError:
            raise Invalid(f"{value!r} is not an IP address") from None
        return str(value)


class PathText(Check):
    """A file name as written; where it is relative to is the loader's business."""

    def __call__(self, value: Any) -> str:
        if not isinstance(value, str) or not value:
            raise Invalid("must be a path")
        return value


class NonEmpty(Check):
    """A section that must hold at least one entry (a lab with no hosts measures nothing)."""

    def __init__(self, message: str = "is empty", fix: str | None = None) -> None:
        self.message, self.fix = message, fix

    def __call__(self, value: Any) -> Any:
        if isinstance(value, Mapping | list) and not value:
            raise Invalid(self.message, self.fix)
        return value


class ValuesAre(Check):
    """A mapping whose values are all of ``kinds`` (offload names to true/false, sysctl keys to values)."""

    def __init__(self, kinds: tuple[type, ...], message: str) -> None:
        self.kinds, self.message = kinds, message

    def __call__(self, value: Any) -> dict[Any, Any]:
        if not isinstance(value, Mapping) or not all(isinstance(v, self.kinds) for v in value.values()):
            raise Invalid(self.message)
        return dict(value)


class Satisfies(Check):
    """A one-off rule given as a predicate, for a field whose rule is not worth a class."""

    def __init__(self, test: Callable[[Any], bool], message: str, fix: str | None = None) -> None:
        self.test, self.message, self.fix = test, message, fix

    def __call__(self, value: Any) -> Any:
        if not self.test(value):
            raise Invalid(self.message.format(value=value), self.fix)
        return value


class BoardModel(Check):
    """A board model of ``model/board_models``: a typo is an error naming the known models (and
    the near miss), never a rule or an image kernel that silently applies to no board."""

    def __init__(
        self, message: str = "is {value!r}, not a known board model", flavours: bool = False
    ) -> None:
        self.message = message
        self.flavours = flavours  # a kernel flavour (rpi-v8) stands for the models booting it

    def __call__(self, value: Any) -> str:
        known = kernel_keys() if self.flavours else BOARD_MODELS
        if not isinstance(value, str) or value not in known:
            hint = model_fix(value) + (" or a kernel flavour (rpi-v8, rpi-2712)" if self.flavours else "")
            raise Invalid(self.message.format(value=value), hint)
        return value


class ForKeys(Check):
    """More checks for the values of some keys of a mapping whose other values are alike (a
    threshold rule's ``match``: any scalar, but ``model`` must name known models); an error is
    named at that key.  What a check returns is not kept: the mapping's value type structures it.
    """

    def __init__(self, **checks: Check) -> None:
        self.checks = checks

    def __call__(self, value: Any) -> Any:
        if isinstance(value, Mapping):
            for key, check in self.checks.items():
                if key in value:
                    try:
                        check(value[key])
                    except Invalid as exc:
                        raise AtKey(key, exc) from None
        return value
