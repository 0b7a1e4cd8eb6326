"""Where an option's value comes from: ``--pinet-NAME`` (or another plugin's alias such as
labgrid's ``--lg-env``) > ``PINET_NAME`` (or ``LG_ENV``) > ini ``pinet_NAME`` > the default, each
parsed by the option's validator and failing with the source named; whether pinet is engaged
at all; the run's settings; and whether a lab named any of those ways can be read."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

from ..errors import ConfigError
from ..session.settings import VIRTUAL, PinetSettings
from .option_values import lab_file
from .options import DATA, OPTIONS, Option


def _as_text(value: object) -> str:
    """A command-line or typed ini value as the text the validators parse (None = not set)."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "on" if value else "off"
    return str(value)


def value_of(
    option: Option,
    getoption: Callable[[str], Any],
    getini: Callable[[str], Any],
    environ: Mapping[str, str],
) -> Any:
    """The first given of ``--pinet-NAME``, ``PINET_NAME``, ini ``pinet_NAME``, the default,
    parsed naming where it came from."""
    text, source = given_or_default(option, getoption, getini, environ)
    return option.parse(text, source)


def given_or_default(
    option: Option,
    getoption: Callable[[str], Any],
    getini: Callable[[str], Any],
    environ: Mapping[str, str],
) -> tuple[str, str]:
    """The text of the first given of ``--pinet-NAME`` (or an alias), ``PINET_NAME`` (or an
    alias), ini ``pinet_NAME``, else the default, with where it came from (``LG_ENV``): the
    run header says how its lab was chosen, and a bad value names that place.

    An empty environment variable or ini value counts as not set, as an unset ``export`` is
    easy to leave behind. The ini is read only when needed, so an option can override a key
    that pytest cannot convert.
    """
    given = _one_of(
        option,
        [(option.cli, getoption(option.cli))]
        + [(a.cli, _alias_option(getoption, a.cli)) for a in option.aliases],
    )
    if given is not None:
        return given
    given = _one_of(
        option,
        [(option.env, environ.get(option.env))] + [(a.env, environ.get(a.env)) for a in option.aliases],
    )
    if given is not None:
        return given
    source = f"ini option {option.ini}"
    try:
        configured = getini(option.ini)
    except (pytest.UsageError, ValueError, TypeError) as exc:  # pytest's own conversion failed
        raise ConfigError(source, f"expected a value of type {option.declared_ini_type} ({exc})") from None
    if configured_text := _as_text(configured):
        return configured_text, source
    return option.default, f"default of {option.ini}"


def named_lab(
    getoption: Callable[[str], Any], getini: Callable[[str], Any], environ: Mapping[str, str]
) -> tuple[str, str]:
    """The lab as the user named it, any of the five ways, and which way: (text, source)."""
    (option,) = [option for option in OPTIONS if option.name == "lab"]
    return given_or_default(option, getoption, getini, environ)


def _alias_option(getoption: Callable[[str], Any], cli: str) -> Any:
    """Another plugin's option, or None when that plugin is not active (``-p no:labgrid``)."""
    try:
        return getoption(cli)
    except ValueError:
        return None


def _one_of(option: Option, candidates: list[tuple[str, Any]]) -> tuple[str, str] | None:
    """The value (text, source) given at one level under pinet's name or an alias; the names
    disagreeing is an error naming both, never a silent pick."""
    given = [
        (source, _as_text(value)) for source, value in candidates if value is not None and _as_text(value)
    ]
    if len({text for _, text in given}) > 1:
        said = " and ".join(f"{source} {text!r}" for source, text in given)
        raise ConfigError(said, f"two names for {option.cli} disagree", "give one of them, or the same value")
    return (given[0][1], given[0][0]) if given else None


def any_given(getoption: Callable[[str], Any], getini: Callable[[str], Any]) -> bool:
    """True when the command line or the ini file sets any pinet option: what engages pinet.

    A key counts as set by the same rule :func:`value_of` uses (an ini ``0`` or ``off`` is set,
    an empty value is not), and a key pytest cannot convert counts as set, so that
    :func:`resolve` then reports it naming the key instead of pytest's bare conversion error.
    """
    for option in OPTIONS:
        if getoption(option.cli) is not None:
            return True
        try:
            if _as_text(getini(option.ini)):
                return True
        except (pytest.UsageError, ValueError, TypeError):
            return True
    return False


# Options whose default depends on the lab: (on the virtual lab, on a lab's hardware).
BY_LAB: dict[str, tuple[int, int]] = {
    # The virtual lab's two boards measure one after the other on one shared host: a run of
    # 10 s (adaptive runs stop earlier once settled) keeps the whole suite on both within a
    # CI job's time; a lab's hardware gets the longer default.
    "duration": (10, 20),
    # The settle rule, not the minimum, is what makes an early stop sound: its interval must
    # be within the precision, with Student's t for so few seconds (4.3 for three).  The
    # virtual lab's token-bucket cables give seconds within 0.1 % of each other, so three of
    # them decide as well as five; a lab's hardware (interrupt moderation, thermal steps, a
    # switch) keeps the longer guard.
    "adaptive_min": (3, 5),
    # The warm-up leaves out slow start and a shaper's initial burst.  On the virtual lab's
    # cables both are over within the first second: with no warm-up at all, the first second
    # read 949 Mbit/s (tbf's 1 MiB burst) on GbE and 10.3 on the 10 Mbit/s USB cable, and
    # every later one its line rate (941.4 +- 0.2, 9.41; 2026-11-28).  A route whose recovery
    # lasts longer names its own (routes[].omit_s: 3 through the QEMU board).
    "omit": (1, 2),
    # A UDP rate is counted between two readings of the receiver's counters, after a 1 s
    # warm-up and before the sender's last 0.4 s (measure/udp.py).  On the virtual lab's
    # shaped cable 1.6 s hold some 130,000 frames, a count known to far better than its 0.5 %
    # band; a lab's hardware keeps the longer window for its interrupt moderation and
    # thermal steps.
    "udp_duration": (3, 5),
}


def resolve(
    getoption: Callable[[str], Any],
    getini: Callable[[str], Any],
    environ: Mapping[str, str],
    rootdir: Path,
) -> PinetSettings:
    """The run's settings: each option layered by :func:`value_of`, then the two things a
    validator alone cannot know: relative paths anchored at ``rootdir`` and the defaults that
    depend on the lab (:data:`BY_LAB`)."""
    values: dict[str, Any] = {option.name: value_of(option, getoption, getini, environ) for option in OPTIONS}
    values["lab_source"] = named_lab(getoption, getini, environ)[1]
    for name, value in values.items():
        if isinstance(value, Path) and not value.is_absolute():
            values[name] = rootdir / value
    for name in ("thresholds", "profiles"):
        if values[name] is None:
            own = rootdir / "lab" / f"{name}.yaml"
            values[name] = own if own.is_file() else DATA / f"{name}.yaml"
    for name, (virtual, hardware) in BY_LAB.items():
        if values[name] is None:
            values[name] = virtual if values["lab"] == VIRTUAL else hardware
    return PinetSettings(**values)


def check_named_lab_files(text: str, source: str) -> None:
    """A lab named any of the five ways (``--pinet-lab``, ``--lg-env``, ``PINET_LAB``,
    ``LG_ENV``, ini ``pinet_lab``) that labgrid could not even read (missing, a binary file,
    not a mapping, no targets) is a ConfigError naming the way it was named, raised before
    labgrid's plugin reads it (whose answer is an INTERNALERROR).  Nothing is loaded when no
    lab is named."""
    if source.startswith("default of") or text == VIRTUAL:
        return
    from ..lab.inventory import check_env_shape

    for part in lab_file(text, source).split(","):
        path = Path(part)
        for env_file in sorted(path.glob("*.yaml")) if path.is_dir() else [path]:
            try:
                check_env_shape(env_file)
            except ConfigError as exc:
                raise ConfigError(source, str(exc)) from None
