"""Every pinet option in one table, from which the command line, the ini keys, the layering and
the README's options table are generated.

Before this table each option was written four times (``addoption``, ``addini``, the parse call
and the README row) and its default lived in the help text, in ``_settings`` and in
:class:`PinetSettings`; they drifted. Now a default is one string, parsed by the same function
that parses a user's value, so a default can never be a value the user could not type.

A value comes from the first of: ``--pinet-NAME`` > ``PINET_NAME`` > ini ``pinet_NAME`` >
default, and a bad one fails naming that source (``PINET_DURATION: expected a whole number,
got 'ten'``), because the user must know *which* of four places to fix.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import pytest

from .errors import ConfigError
from .settings import VIRTUAL, PinetSettings
from .virtlab.names import ACCELERATORS, BOARD_KINDS, DEFAULT_IMAGE, IMAGE_NAMES, LAB_NAME

Parse = Callable[[str, str], Any]
DATA = Path(__file__).parent / "data"  # the lab data shipped in the wheel
IniType = Literal["string", "bool", "int", "float"]

# pytest knows "int" and "float" ini keys only from 8.4 on; older ones get "string" (the value is
# parsed by the same validator either way, only `pytest --help` and TOML typing differ).
_PYTEST_VERSION = re.match(r"(\d+)\.(\d+)", pytest.__version__)
NUMERIC_INI = _PYTEST_VERSION is None or (int(_PYTEST_VERSION[1]), int(_PYTEST_VERSION[2])) >= (8, 4)

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
    from .model.lab import IMAGE_NAME  # the model loads when settings are resolved, not at start-up

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


def lab(value: str, source: str) -> str:
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


def adaptive_min(value: str, source: str) -> int:
    """Seconds before an adaptive stop: one second has no spread to judge settling by."""
    number = positive_int(value, source)
    if number < 2:
        raise ConfigError(source, f"an adaptive run needs at least 2 measured seconds, got {number}")
    return number


def precision(value: str, source: str) -> float:
    """The settling precision: 0 never settles, above 50 % settles on noise."""
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


def remeasure(value: str, source: str) -> int | None:
    """Remeasure count, or None ("" = auto): :func:`resolve` picks it from the lab, which is
    parsed by then (the virtual lab shares its host's CPUs, so it earns one retry)."""
    return None if value == "" else non_negative_int(value, source)


# --- the table ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Alias:
    """Another tool's name for the same setting (labgrid's ``--lg-env`` / ``LG_ENV``)."""

    cli: str  # its command-line option; read only when that tool's plugin is active
    env: str


@dataclass(frozen=True)
class Option:
    """One setting: its parser, its one textual default and how it is shown.

    ``default_text`` describes a default that the literal does not explain ("" = auto,
    "0" = one per worker); when empty, help and README show ``default`` itself.
    """

    name: str  # PinetSettings field; --pinet-NAME-WITH-DASHES, PINET_NAME, ini pinet_NAME
    parse: Parse
    default: str
    help: str
    metavar: str = ""
    ini_type: IniType = "string"
    flag: bool = False  # store_true on the command line; on/off in PINET_NAME, bool in the ini
    default_text: str = ""
    aliases: tuple[Alias, ...] = ()

    @property
    def cli(self) -> str:
        """The command-line option, e.g. ``--pinet-max-temp``."""
        return "--pinet-" + self.name.replace("_", "-")

    @property
    def env(self) -> str:
        """The environment variable, e.g. ``PINET_MAX_TEMP``."""
        return "PINET_" + self.name.upper()

    @property
    def ini(self) -> str:
        """The ini key, e.g. ``pinet_max_temp``."""
        return "pinet_" + self.name

    @property
    def shown_default(self) -> str:
        """The default as a user reads it in ``--help`` and the README."""
        return self.default_text or self.default

    @property
    def declared_ini_type(self) -> IniType:
        """The ini type registered with this pytest (numbers need pytest 8.4)."""
        return "string" if self.ini_type in ("int", "float") and not NUMERIC_INI else self.ini_type


OPTIONS: tuple[Option, ...] = (
    Option(
        "lab",
        lab,
        VIRTUAL,
        "labgrid env file of the lab, several separated by commas (one per place), a directory of "
        "PLACE.yaml env files (with --pinet-coordinator), or 'virtual' for the namespace lab; "
        "labgrid's --lg-env / LG_ENV say the same",
        "ENV|virtual",
        aliases=(Alias("--lg-env", "LG_ENV"),),
    ),
    Option(
        "results",
        rootdir_path,
        "results",
        "directory for measurements and raw outputs, relative to the rootdir",
        "DIR",
    ),
    Option(
        "thresholds",
        data_file,
        "",
        "thresholds file, relative to the rootdir",
        "FILE",
        default_text="lab/thresholds.yaml under the rootdir if there is one, else the shipped one",
    ),
    Option(
        "profiles",
        data_file,
        "",
        "tuning profiles file, relative to the rootdir",
        "FILE",
        default_text="lab/profiles.yaml under the rootdir if there is one, else the shipped one",
    ),
    Option(
        "db",
        text,
        "",
        "results store: sqlite:///PATH or postgresql://USER:PASSWORD@HOST/DB for a lab's shared store",
        "URL",
        default_text="pinet.sqlite in the XDG data directory (~/.local/share/pinet)",
    ),
    Option(
        "duration",
        positive_int,
        "20",
        "seconds of measured traffic per run, after the warm-up; the seed used 65 (iperf3 -t 65 -O 5)",
        "S",
        "int",
    ),
    Option(
        "omit",
        non_negative_int,
        "2",
        "warm-up seconds before the measured ones, left out of the figures; the seed used 5",
        "S",
        "int",
    ),
    Option("streams", positive_int, "10", "parallel TCP streams", "N", "int"),
    Option(
        "remeasure",
        remeasure,
        "",
        "measure again up to N times when a result is below its threshold; every attempt is recorded",
        "N",
        "int",
        default_text="1 on the virtual lab, whose host is shared, 0 on hardware",
    ),
    Option(
        "adaptive",
        on_off,
        "on",
        "stop a run early once its per-second goodput settled; off = always the full --pinet-duration, "
        "the seeds' fixed method",
        "on|off",
        "bool",
    ),
    Option("adaptive_min", adaptive_min, "5", "measured seconds before an adaptive run may stop", "S", "int"),
    Option(
        "adaptive_precision",
        precision,
        "0.5",
        "stop when the 95% confidence half-width of the mean is within PCT %",
        "PCT",
        "float",
    ),
    Option(
        "baseline_window",
        positive_int,
        "10",
        "baseline = median of the last N results of the same context",
        "N",
        "int",
    ),
    Option(
        "baseline_min",
        positive_int,
        "2",
        "judge against a baseline only with at least N earlier results",
        "N",
        "int",
    ),
    Option(
        "baseline_band",
        percent,
        "0.5",
        "smallest band around the baseline in percent; above it, the history's prediction bound "
        "(pinet bench measures what this floor catches)",
        "PCT",
        "float",
    ),
    Option(
        "max_temp",
        temperature,
        "80",
        "a measurement with the board above C degrees or throttling is invalid, not judged",
        "C",
        "float",
    ),
    Option(
        "udp_duration",
        positive_int,
        "5",
        "seconds per UDP packet-rate run; a sweep runs one per mode and thread count",
        "S",
        "int",
    ),
    Option(
        "storage_mib",
        positive_int,
        "8",
        "MiB written and read back per block size in the storage sweep",
        "MIB",
        "int",
    ),
    Option(
        "virtual_lab",
        virtual_lab_name,
        "pinet",
        "which virtual lab to build and use: pinet, pinet1, ... pinet99",
        "NAME",
    ),
    Option(
        "board",
        one_of(BOARD_KINDS),
        "netns",
        "the virtual lab's board: a network namespace (netns) or a QEMU machine (qemu) with its own "
        "kernel, serial console and USB devices",
        "|".join(BOARD_KINDS),
    ),
    Option(
        "board_image",
        one_of(IMAGE_NAMES),
        DEFAULT_IMAGE,
        "the OS image on the QEMU board's SD card when the lab is built: " + ", ".join(IMAGE_NAMES),
        "NAME",
    ),
    Option(
        "qemu_accel",
        one_of(ACCELERATORS),
        "tcg",
        "how QEMU runs the board: tcg, software emulation, or kvm",
        "|".join(ACCELERATORS),
    ),
    Option(
        "places",
        places,
        "0",
        "virtual places pinet1..pinetN; each pytest process takes a free one, an xdist worker gwK "
        "first pinet(K+1)",
        "N",
        "int",
        default_text="0, one per xdist worker",
    ),
    Option(
        "coordinator",
        coordinator_address,
        "",
        "reserve this process's place from a labgrid coordinator (with --pinet-place-tags); "
        "--pinet-lab then names the env file, or a directory of PLACE.yaml env files",
        "HOST:PORT",
        default_text="none",
        aliases=(Alias("--lg-coordinator", "LG_COORDINATOR"),),
    ),
    Option(
        "place_tags",
        place_tags,
        "",
        "tags a place reserved from the coordinator must carry, e.g. board=rpi4,pinet=yes",
        "K=V,...",
        default_text="none",
    ),
    Option(
        "place_wait",
        positive_int,
        "1800",
        "seconds to wait for a place (or a board's hosts) another run holds before the run's "
        "tests fail as a lab fault; the wait says which place and who holds it",
        "S",
        "int",
    ),
    Option(
        "keep_lab",
        on_off,
        "off",
        "leave a virtual lab this run built running afterwards",
        ini_type="bool",
        flag=True,
    ),
    Option(
        "boards",
        host_names,
        "",
        "measure only these boards of the inventory (the network suites run over every board)",
        "NAME,...",
        default_text="every board",
    ),
    Option(
        "image",
        image_names,
        "",
        "flash the boards with each of these catalogue images in turn (pinet.images of the env "
        "file) and run the selected tests on each: image is the outermost axis",
        "NAME,...",
        default_text="whatever the boards run",
    ),
    Option(
        "repeat",
        positive_int,
        "1",
        "run every board test N times (rep-1..rep-N in its id): repeated measurements give the "
        "run's own noise, as pinet bisect needs",
        "N",
        "int",
    ),
    Option(
        "allow_skips",
        on_off,
        "off",
        "a lab that cannot be had skips its tests instead of erroring, and a run that measured "
        "nothing may pass (off: never green on nothing)",
        ini_type="bool",
        flag=True,
    ),
)

# --- what the table generates --------------------------------------------------------------------


def add_options(parser: pytest.Parser) -> None:
    """Register ``--pinet-*`` and ``pinet_*`` with the real ini types, so ``pytest --help``
    shows ``(int)`` where an int is wanted and pytest itself rejects a mistyped TOML value."""
    group = parser.getgroup("pinet", "network regression testing of boards (pytest-pinet)")
    for option in OPTIONS:
        # argparse %-formats help texts; the table's texts are plain.
        shown = f"{option.help} (default: {option.shown_default})".replace("%", "%%")
        if option.flag:
            # default None, not False: "not given" must fall through to PINET_NAME and the ini.
            group.addoption(option.cli, action="store_true", default=None, help=shown)
        else:
            group.addoption(option.cli, default=None, metavar=option.metavar, help=shown)
        # default None: an absent key is "not set", distinguishable from a set 0, off or "".
        parser.addini(
            option.ini,
            f"default for {option.cli} (built-in default: {option.shown_default})",
            type=option.declared_ini_type,
            default=None,
        )


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


def resolve(
    getoption: Callable[[str], Any],
    getini: Callable[[str], Any],
    environ: Mapping[str, str],
    rootdir: Path,
) -> PinetSettings:
    """The run's settings: each option layered by :func:`value_of`, then the two things a
    validator alone cannot know: relative paths anchored at ``rootdir`` and the automatic
    remeasure count, which depends on the lab."""
    values: dict[str, Any] = {option.name: value_of(option, getoption, getini, environ) for option in OPTIONS}
    values["lab_source"] = named_lab(getoption, getini, environ)[1]
    for name, value in values.items():
        if isinstance(value, Path) and not value.is_absolute():
            values[name] = rootdir / value
    for name in ("thresholds", "profiles"):
        if values[name] is None:
            own = rootdir / "lab" / f"{name}.yaml"
            values[name] = own if own.is_file() else DATA / f"{name}.yaml"
    if values["remeasure"] is None:
        values["remeasure"] = 1 if values["lab"] == VIRTUAL else 0
    return PinetSettings(**values)


def check_named_lab_files(text: str, source: str) -> None:
    """A lab named any of the five ways (``--pinet-lab``, ``--lg-env``, ``PINET_LAB``,
    ``LG_ENV``, ini ``pinet_lab``) that labgrid could not even read (missing, a binary file,
    not a mapping, no targets) is a ConfigError naming the way it was named, raised before
    labgrid's plugin reads it (whose answer is an INTERNALERROR).  Nothing is loaded when no
    lab is named."""
    if source.startswith("default of") or text == VIRTUAL:
        return
    from .lab.inventory import check_env_shape

    for part in lab(text, source).split(","):
        path = Path(part)
        for env_file in sorted(path.glob("*.yaml")) if path.is_dir() else [path]:
            try:
                check_env_shape(env_file)
            except ConfigError as exc:
                raise ConfigError(source, str(exc)) from None


def _cell(value: str) -> str:
    """Markdown table cell text: a bare ``|`` would end the cell, even inside backticks."""
    return value.replace("|", "\\|")


def markdown_table() -> str:
    """The README's options table, so the README cannot drift from the options (a test checks
    the README contains exactly this text)."""
    rows = ["| option | env var | ini key | default | meaning |", "|---|---|---|---|---|"]
    for option in OPTIONS:
        usage = option.cli if option.flag else f"{option.cli} {option.metavar}"
        default = option.default_text or f"`{option.default}`"
        clis = "".join(f", `{alias.cli}`" for alias in option.aliases)
        envs = "".join(f", `{alias.env}`" for alias in option.aliases)
        cells = (f"`{usage}`{clis}", f"`{option.env}`{envs}", f"`{option.ini}`", default, option.help)
        rows.append("| " + " | ".join(_cell(cell) for cell in cells) + " |")
    return "\n".join(rows) + "\n"
