"""The profiles file's shape, declared once: which tunables a role may set and what each holds.

Whether a value is one the tunable itself accepts (a governor or sysctl name, a qdisc spec) is
still the tunable's to say (``profiles.py`` builds each once); everything about the shape of a
value is here.  Imported only when a profiles file is read (attrs and cattrs are not free).
"""

from collections.abc import Mapping
from typing import Annotated, Any, ClassVar

import attrs

from ..schema.checks import Check, Flag, Integer, Invalid, Pattern, Text, ValuesAre
from ..schema.convert import ABSENT, structure
from .shell import INTERFACE_NAME

# An interface written as "link" is the link under test's on that host (profiles.LINK).
LINK = "link"


class InterfaceKey(Check):
    """A key naming an interface, or ``link``; nothing a shell could read as more than a name."""

    def __call__(self, value: Any) -> str:
        if not isinstance(value, str) or not (value == LINK or INTERFACE_NAME.fullmatch(value)):
            raise Invalid(f"{value!r} is not an interface name")
        return value


class Cpus(Check):
    """CPU numbers to pin to, or (for packet steering) ``all``."""

    def __init__(self, *, all_allowed: bool) -> None:
        self.all_allowed = all_allowed

    def __call__(self, value: Any) -> str | list[int]:
        if self.all_allowed and value == "all":
            return "all"
        if not isinstance(value, list) or not value or not all(_cpu(c) for c in value):
            raise Invalid("must be a list of CPU numbers" + (" or 'all'" if self.all_allowed else ""))
        return list(value)


def _cpu(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 1024


class PerInterface(Check):
    """A tunable set per interface: a non-empty mapping (its keys and values are checked after)."""

    def __call__(self, value: Any) -> Any:
        if not isinstance(value, Mapping) or not value:
            raise Invalid("must map interface names (or 'link') to values")
        return value


Interface = Annotated[str, InterfaceKey()]
IrqPins = Annotated[Mapping[Interface, Annotated[Any, Cpus(all_allowed=False)]], PerInterface()]
Steering = Annotated[Mapping[Interface, Annotated[Any, Cpus(all_allowed=True)]], PerInterface()]
QdiscSpecs = Annotated[
    Mapping[Interface, Annotated[str, Text("must be a qdisc spec like 'sfq quantum 1500'", numbers=False)]],
    PerInterface(),
]
Mtus = Annotated[
    Mapping[Interface, Annotated[int, Integer(68, 65535, "must be an MTU 68..65535")]], PerInterface()
]
OffloadFlags = Annotated[
    Mapping[Interface, Annotated[Any, ValuesAre((bool,), "must map offload names to true/false")]],
    PerInterface(),
]


@attrs.frozen
class RoleSettings:
    """The tunables of one role; a key left out is not set at all (``null`` is an error)."""

    schema_noun: ClassVar[str] = "tunables"

    irq_affinity: IrqPins = ABSENT
    rps: Steering = ABSENT
    xps: Steering = ABSENT
    governor: Annotated[str, Text("must be a governor name", numbers=False)] = ABSENT
    cpu_mhz: Annotated[int, Integer(100, 10000, "must be MHz 100..10000")] = ABSENT
    qdisc: QdiscSpecs = ABSENT
    ip_forward: Annotated[bool, Flag("must be true or false")] = ABSENT
    mtu: Mtus = ABSENT
    offloads: OffloadFlags = ABSENT
    sysctl: Annotated[Any, ValuesAre((str, int), "must map sysctl keys to values")] = ABSENT


@attrs.frozen
class ProfileSchema:
    """One profile: why it exists and the tunables per role (``board:`` with nothing sets none)."""

    why: Annotated[str, Text()] = ""
    board: RoleSettings | None = ABSENT
    peer: RoleSettings | None = ABSENT


ProfileName = Annotated[
    str,
    Pattern(r"[A-Za-z0-9_-]+", "{value!r} is not a profile name", "letters, digits, - and _"),
]


@attrs.frozen
class ProfilesFile:
    """A profiles file: profiles by name (``name:`` with nothing is a profile that changes nothing)."""

    profiles: Mapping[ProfileName, ProfileSchema | None]
    version: Any = None


def read_profiles_file(data: Any, source: str) -> ProfilesFile:
    """Decoded YAML as a profiles file, or a ConfigError naming the file, the profile and the key."""
    return structure(data, ProfilesFile, source)
