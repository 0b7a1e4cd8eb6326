"""The context key: what must be equal for two measurements to be compared, as one string.

It is built once here and read back here, never split by hand elsewhere: the store keeps it,
baselines and trends group by it, and the commands print the readable part of it. The text
is ``field=value`` pairs joined by ``|``, the fields of :data:`FIELDS` always and the later
ones (:data:`LATER_FIELDS`) only when set, so the keys (and baselines) of everything measured
before a later field existed stay what they were.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

FIELDS = (
    "lab",
    "board",
    "peer",
    "link",
    "adapter",
    "scenario",
    "direction",
    "duplex",
    "profile",
    "protocol",
    "streams",
    "mtu",
    "link_speed_mbps",
    "qdisc",
)
LATER_FIELDS = ("rate_target_mbps", "filesystem", "block_bytes", "image", "opposite_rate_mbps")
# What a person reads first of a context: the rest is mostly the same across one lab's runs.
LABEL_FIELDS = ("board", "link", "direction", "duplex", "profile", "qdisc")


@dataclass(frozen=True)
class ContextKey:
    """A context key's fields in their stored order; ``str()`` gives the stored text."""

    pairs: tuple[tuple[str, str], ...]

    @classmethod
    def of(cls, context: Mapping[str, Any]) -> ContextKey:
        """The key of a measurement's context (missing fields are empty)."""
        pairs = [(name, str(context.get(name, ""))) for name in FIELDS]
        pairs += [(name, str(context[name])) for name in LATER_FIELDS if context.get(name)]
        return cls(tuple(pairs))

    @classmethod
    def parse(cls, text: str) -> ContextKey:
        """A stored key read back; a part without ``=`` (none is ever written) is left out."""
        return cls(
            tuple((name, value) for name, _, value in (p.partition("=") for p in text.split("|") if "=" in p))
        )

    def __str__(self) -> str:
        return "|".join(f"{name}={value}" for name, value in self.pairs)

    def get(self, name: str) -> str:
        """One field's value ('' when the key has none)."""
        return dict(self.pairs).get(name, "")

    def values(self, names: Sequence[str] = LABEL_FIELDS) -> list[str]:
        """The non-empty values of ``names``, in that order: the readable part of the key."""
        fields = dict(self.pairs)
        return [fields[name] for name in names if fields.get(name)]

    def shown(self, names: Sequence[str] = LABEL_FIELDS) -> list[str]:
        """The non-empty fields of ``names`` as ``name=value``, in the key's order."""
        return [f"{name}={value}" for name, value in self.pairs if name in names and value]

    def only(self, names: Sequence[str]) -> ContextKey:
        """A key of ``names`` alone, in that order and empty ones kept: a group of contexts
        (those that share a board's noise), stored and read back as any key is."""
        fields = dict(self.pairs)
        return ContextKey(tuple((name, fields.get(name, "")) for name in names))

    def without(self, names: Sequence[str]) -> ContextKey:
        """The same key with ``names`` emptied (a later field emptied is left out, as when built)."""
        return ContextKey.of({**dict(self.pairs), **dict.fromkeys(names, "")})


def context_key(context: Mapping[str, Any]) -> str:
    """The stored text of a context's key (see :class:`ContextKey`)."""
    return str(ContextKey.of(context))
