"""Every pinet option in one table, from which the command line, the ini keys, the layering and
the options page's table (docs/options.md) are generated.

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
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import pytest

from ..judge.confirmation import REMEASURE_BY_DEFAULT
from ..record.board_service import OUT_AFTER_BY_DEFAULT, RETURN_WHEN
from ..session.settings import VIRTUAL
from ..virtlab.names import ACCELERATORS, BOARD_KINDS, DEFAULT_IMAGE, IMAGE_NAMES
from .option_values import (
    adaptive_min,
    coordinator_address,
    data_file,
    detect_target,
    duration,
    host_names,
    image_names,
    lab_file,
    non_negative_int,
    omit,
    on_off,
    one_of,
    percent,
    place_tags,
    places,
    positive_int,
    precision,
    rootdir_path,
    temperature,
    text,
    udp_duration,
    virtual_lab_name,
)

Parse = Callable[[str, str], Any]
DATA = Path(__file__).resolve().parents[1] / "data"  # the lab data shipped in the wheel
IniType = Literal["string", "bool", "int", "float"]

# pytest knows "int" and "float" ini keys only from 8.4 on; older ones get "string" (the value is
# parsed by the same validator either way, only `pytest --help` and TOML typing differ).
_PYTEST_VERSION = re.match(r"(\d+)\.(\d+)", pytest.__version__)
NUMERIC_INI = _PYTEST_VERSION is None or (int(_PYTEST_VERSION[1]), int(_PYTEST_VERSION[2])) >= (8, 4)

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
    "0" = one per worker); when empty, help and the options page show ``default`` itself.
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
        """The default as a user reads it in ``--help`` and docs/options.md."""
        return self.default_text or self.default

    @property
    def declared_ini_type(self) -> IniType:
        """The ini type registered with this pytest (numbers need pytest 8.4)."""
        return "string" if self.ini_type in ("int", "float") and not NUMERIC_INI else self.ini_type


OPTIONS: tuple[Option, ...] = (
    Option(
        "lab",
        lab_file,
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
        duration,
        "",
        "seconds of measured traffic per run, after the warm-up; the seed used 65 (iperf3 -t 65 -O 5)",
        "S",
        "int",
        default_text="20 on a lab's hardware; 10 on the virtual lab (two boards in turn on one shared host)",
    ),
    Option(
        "omit",
        omit,
        "",
        "warm-up seconds before the measured ones, left out of the figures; the seed used 5",
        "S",
        "int",
        default_text="2 on a lab's hardware; 1 on the virtual lab, whose cables carry their line rate "
        "from the second second (a route may ask for more: routes[].omit_s)",
    ),
    Option("streams", positive_int, "10", "parallel TCP streams", "N", "int"),
    Option(
        "remeasure",
        non_negative_int,
        str(REMEASURE_BY_DEFAULT),
        "confirm a result below its threshold or regressed before it is red: measure it again up "
        "to N times, red when most of its 1+N attempts are; every attempt is recorded",
        "N",
        "int",
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
    Option(
        "adaptive_min",
        adaptive_min,
        "",
        "measured seconds before an adaptive run may stop",
        "S",
        "int",
        default_text="5 on a lab's hardware; 3 on the virtual lab, whose shaped seconds agree within 0.1 %",
    ),
    Option(
        "adaptive_precision",
        precision,
        "0.5",
        "stop when the 95% confidence half-width of the mean is within PCT %",
        "PCT",
        "float",
    ),
    Option(
        "detect",
        detect_target,
        "",
        "ask one night to catch a drop of PCT %: adaptive runs measure until their interval is narrow "
        "enough for it (within --pinet-duration); a context whose nights differ too much for it is "
        "reported as blind for one night, with the nights a persisting drop of PCT % needs",
        "PCT",
        "string",
        default_text="none asked",
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
        udp_duration,
        "",
        "seconds per UDP packet-rate run; a sweep runs one per mode and thread count",
        "S",
        "int",
        default_text="5 on a lab's hardware; 3 on the virtual lab (its rate is counted over the "
        "last 1.6 s, after a 1 s warm-up)",
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
        "both",
        "the virtual lab's boards: both (the default: pi, a network namespace, and qpi, a QEMU "
        "machine), netns only, or qemu only (its own kernel, serial console and USB devices)",
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
        "out_of_service_after",
        non_negative_int,
        str(OUT_AFTER_BY_DEFAULT),
        "leave a board out of the night once its health check failed this many nights in a row "
        "(docs/lab-health.md); 0 = never",
        "N",
        "int",
    ),
    Option(
        "return_when",
        one_of(RETURN_WHEN),
        "returned",
        "when a board out of service is measured again: returned, after `pinet lab return BOARD`; "
        "healthy, also once a night's health check of it passes",
        "|".join(RETURN_WHEN),
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


def _cell(value: str) -> str:
    """Markdown table cell text: a bare ``|`` would end the cell, even inside backticks."""
    return value.replace("|", "\\|")


def markdown_table() -> str:
    """The options page's table (docs/options.md), so it cannot drift from the options (a test checks
    the page contains exactly this text)."""
    rows = ["| option | env var | ini key | default | meaning |", "|---|---|---|---|---|"]
    for option in OPTIONS:
        usage = option.cli if option.flag else f"{option.cli} {option.metavar}"
        default = option.default_text or f"`{option.default}`"
        clis = "".join(f", `{alias.cli}`" for alias in option.aliases)
        envs = "".join(f", `{alias.env}`" for alias in option.aliases)
        cells = (f"`{usage}`{clis}", f"`{option.env}`{envs}", f"`{option.ini}`", default, option.help)
        rows.append("| " + " | ".join(_cell(cell) for cell in cells) + " |")
    return "\n".join(rows) + "\n"
