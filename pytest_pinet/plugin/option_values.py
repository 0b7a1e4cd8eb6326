"""How each pinet option's text becomes a value: one validator per kind of value, each taking
the text and where it came from (``--pinet-duration``, ``PINET_DURATION``, an ini key, the
default) and failing with a :class:`ConfigError` that names that source.  The table of options
(:mod:`pytest_pinet.plugin.options`) names a validator per option."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from ..session.settings import VIRTUAL
from ..virtlab.names import LAB_NAME

Parse = Callable[[str, str], Any]

# --- validators: (value, source) -> value, or ConfigError naming the source ----------------------


def _whole_number(value: str, source: str) -> int:
    """A whole number, or a ConfigError naming ``source``."""
    try:
        return int(value)
    except ValueError:
        raise ConfigError(source, f"expected a whole number, got {value!r}") from None


def positive_int(value: str, source: str) -> int:
    """Parse a positive integer or fail naming ``source``."""
    number = _whole_number(value, source)
    if number < 1:
        raise ConfigError(source, f"must be at least 1, got {number}")
    return number


def non_negative_int(value: str, source: str) -> int:
    """Parse a whole number >= 0 or fail naming ``source``."""
    number = _whole_number(value, source)
    if number < 0:
        raise ConfigError(source, f"must not be negative, got {number}")
    return number


def percent(value: str, source: str) -> float:
    """A percentage below 100: a band or precision of 100 % or more judges nothing."""
    try:
        number = float(value)
    except ValueError:
        raise ConfigError(source, f"expected a percentage, got {value!r}") from None
    if not 0 <= number < 100:
        raise ConfigError(source, f"must be 0..100, got {number}")
    return number


def one_of(choices: tuple[str, ...]) -> Parse:
    """A parser accepting exactly ``choices``; the message lists them, so a typo is fixed at once."""

    def parse(value: str, source: str) -> str:
        if value not in choices:
            raise ConfigError(source, f"expected one of {', '.join(choices)}, got {value!r}")
        return value

    return parse


def on_off(value: str, source: str) -> bool:
    """``on``/``off`` (any case): the words the docs use, rather than Python's truthiness."""
    if value.lower() not in ("on", "off"):
        raise ConfigError(source, f"expected on or off, got {value!r}")
    return value.lower() == "on"


def temperature(value: str, source: str) -> float:
    """A board temperature limit; outside 20..125 °C it is a typo, not a policy."""
    try:
        number = float(value)
    except ValueError:
        raise ConfigError(source, f"expected degrees Celsius, got {value!r}") from None
    if not 20 <= number <= 125:
        raise ConfigError(source, f"must be 20..125 degrees Celsius, got {number}")
    return number


COORDINATOR = re.compile(r"^(?:[A-Za-z0-9.-]{1,253}|\[[0-9A-Fa-f:.]{2,45}\]):[0-9]{1,5}$")
# labgrid's own rule for tag names and values (the coordinator refuses anything else).
TAG = re.compile(r"^[a-z0-9_-]+$")


def coordinator_address(value: str, source: str) -> str:
    """``HOST:PORT`` of a labgrid coordinator, or "" for none."""
    if value and not COORDINATOR.match(value):
        raise ConfigError(source, f"expected HOST:PORT of a labgrid coordinator, got {value!r}")
    return value


def place_tags(value: str, source: str) -> tuple[str, ...]:
    """``key=value,key=value`` -> ("key=value", ...), each part checked against labgrid's rule."""
    tags = []
    for part in (p.strip() for p in value.split(",")):
        if not part:
            continue
        key, sep, tag_value = part.partition("=")
        if not sep or not TAG.match(key) or not TAG.match(tag_value):
            raise ConfigError(
                source, f"tag {part!r} is not KEY=VALUE of lowercase letters, digits, '_' and '-'"
            )
        tags.append(f"{key}={tag_value}")
    return tuple(tags)


HOST_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")


def host_names(value: str, source: str) -> tuple[str, ...]:
    """``pi4,pi5`` -> ("pi4", "pi5"): names of hosts as the inventory spells them."""
    names = tuple(part.strip() for part in value.split(",") if part.strip())
    for name in names:
        if not HOST_NAME.match(name):
            raise ConfigError(source, f"{name!r} is not a host name of an inventory")
    return names


def image_names(value: str, source: str) -> tuple[str, ...]:
    """``a,b`` -> ("a", "b"): catalogue image names, in the order the run flashes them."""
    from ..model.lab import IMAGE_NAME  # the model loads when settings are resolved, not at start-up

    names = tuple(part.strip() for part in value.split(",") if part.strip())
    for name in names:
        if not IMAGE_NAME.fullmatch(name):
            raise ConfigError(source, f"{name!r} is not an image name of a catalogue")
    if len(set(names)) != len(names):
        raise ConfigError(source, f"names an image twice: {value!r}")
    return names


def _exists(path: str, kind: Callable[[Path], bool]) -> bool:
    """``Path.is_file``/``is_dir`` that says False, not OSError, for a name too long to stat."""
    try:
        return kind(Path(path))
    except OSError:
        return False


def lab_file(value: str, source: str) -> str:
    """``virtual``, one directory of ``PLACE.yaml`` env files (for a coordinator), or env files
    separated by commas (one per place), made absolute so workers in other directories agree."""
    if value == VIRTUAL:
        return value
    parts = [part.strip() for part in value.split(",") if part.strip()]
    if len(parts) == 1 and _exists(parts[0], Path.is_dir):
        return str(Path(parts[0]).resolve())  # one env file per place, for a coordinator
    for part in parts:
        if not _exists(part, Path.is_file):
            raise ConfigError(
                source,
                f"lab env file {part!r} does not exist",
                "give a labgrid env file, several separated by commas (one per place), or 'virtual'",
            )
    if not parts:
        raise ConfigError(source, "no env file given", "give a labgrid env file or 'virtual'")
    return ",".join(str(Path(part).resolve()) for part in parts)


def places(value: str, source: str) -> int:
    """How many virtual places; the lab names them pinet1..pinet99, so 99 at most."""
    number = non_negative_int(value, source)
    if number > 99:
        raise ConfigError(source, f"at most 99 virtual places (pinet1..pinet99), got {number}")
    return number


def adaptive_min(value: str, source: str) -> int | None:
    """Seconds before an adaptive stop, or None ("" = by the lab: :func:`resolve` picks it).
    At least 2: one second has no spread to judge settling by."""
    if value == "":
        return None
    number = positive_int(value, source)
    if number < 2:
        raise ConfigError(source, f"an adaptive run needs at least 2 measured seconds, got {number}")
    return number


def omit(value: str, source: str) -> int | None:
    """Warm-up seconds, or None ("" = by the lab: :func:`resolve` picks it)."""
    return None if value == "" else non_negative_int(value, source)


def udp_duration(value: str, source: str) -> int | None:
    """Seconds per UDP run, or None ("" = by the lab: :func:`resolve` picks it)."""
    return None if value == "" else positive_int(value, source)


def precision(value: str, source: str) -> float:
    """The settling precision: 0 never settles, above 50 % settles on noise."""
    number = percent(value, source)
    if not 0 < number <= 50:
        raise ConfigError(source, f"must be more than 0 and at most 50, got {number}")
    return number


def detect_target(value: str, source: str) -> float | None:
    """The drop one night is asked to catch, percent; None ("") asks nothing."""
    if value == "":
        return None
    number = percent(value, source)
    if not 0 < number <= 50:
        raise ConfigError(source, f"must be more than 0 and at most 50, got {number}")
    return number


def virtual_lab_name(value: str, source: str) -> str:
    """A virtual lab's name; the lab tooling knows only pinet and pinet1..pinet99."""
    if not LAB_NAME.match(value):
        raise ConfigError(source, f"virtual lab name {value!r} must be pinet, pinet1 ... pinet99")
    return value


def text(value: str, source: str) -> str:
    """Any text (a URL checked by the store that opens it)."""
    return value


def rootdir_path(value: str, source: str) -> Path:
    """A path; :func:`resolve` anchors a relative one at the rootdir, not the working
    directory, so a run started from a subdirectory finds the same files."""
    return Path(value)


def data_file(value: str, source: str) -> Path | None:
    """A lab data file (thresholds, profiles); "" = the lab's own under the rootdir, else the
    copy shipped in the package, so a ``pip install`` user runs the suite without a clone."""
    return Path(value) if value else None


def duration(value: str, source: str) -> int | None:
    """Measured seconds per run, or None ("" = by the lab: :func:`resolve` picks it)."""
    return None if value == "" else positive_int(value, source)
