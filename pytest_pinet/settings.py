"""pinet's settings, layered: command-line option > environment variable > ini > default.

Each value is validated by a function that names where a bad value came from, so
``PINET_DURATION=ten`` fails with "PINET_DURATION: ..." and not deep inside a test.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from .errors import ConfigError
from .traffic.adaptive import SettleRule
from .virtlab.topology import LabSpec, lab_spec

T = TypeVar("T")

VIRTUAL = "virtual"


@dataclass(frozen=True)
class PinetSettings:
    """Effective settings of one run."""

    lab: str  # "virtual" or a path to a labgrid env file
    results: Path
    thresholds: Path
    profiles: Path
    duration: int
    omit: int
    streams: int
    keep_lab: bool
    remeasure: int = 0
    db: str = ""  # results store URL; "" = sqlite file in the results directory
    virtual_lab: str = "pinet"  # which virtual lab (place) to build and use
    baseline_window: int = 10  # earlier results of the same context the baseline uses
    baseline_min: int = 2  # fewer earlier results: recorded, not judged
    baseline_band: float = 1.0  # smallest band around the baseline, percent
    adaptive: bool = True  # stop a run once per-second goodput settled
    adaptive_min: int = 5  # measured seconds before an adaptive stop
    adaptive_precision: float = 0.5  # 95 % half-width of the mean, percent
    max_temp: float = 80.0  # a board above this (°C) measures invalid results
    udp_duration: int = 5  # seconds per UDP packet-rate run (a sweep runs one per thread count)
    storage_mib: int = 8  # MiB written and read per block size in the storage sweep
    board: str = "netns"  # the virtual lab's board: a namespace, or a QEMU machine ("qemu")
    board_kernel: str = "6.1"  # the QEMU board's kernel, one of the image's matrix
    qemu_accel: str = "tcg"  # how QEMU runs the board: tcg (anywhere) or kvm (where it works)
    places: int = 0  # virtual places pinet1..pinetN to spread over; 0 = one per xdist worker
    coordinator: str = ""  # labgrid coordinator (HOST:PORT) to reserve places from; "" = none
    place_tags: tuple[str, ...] = ()  # KEY=VALUE tags a reserved place must carry

    def lab_spec(self) -> LabSpec:
        """The virtual lab this run builds and uses."""
        return lab_spec(
            self.virtual_lab,
            board=self.board,
            kernel=self.board_kernel if self.board == "qemu" else "",
            accel=self.qemu_accel,
        )

    def settle_rule(self) -> SettleRule | None:
        """The adaptive-duration rule, or None for fixed-duration runs."""
        if not self.adaptive or self.adaptive_min >= self.duration:
            return None
        return SettleRule(self.adaptive_min, self.adaptive_precision)

    @property
    def lab_files(self) -> tuple[Path, ...]:
        """The env files (one per place) of a real lab; empty for the virtual lab."""
        return () if self.virtual else tuple(Path(part) for part in self.lab.split(","))

    @property
    def virtual(self) -> bool:
        """True when the run uses the built-in namespace lab."""
        return self.lab == VIRTUAL


def positive_int(value: str, source: str) -> int:
    """Parse a positive integer or fail naming ``source``."""
    try:
        number = int(value)
    except ValueError:
        raise ConfigError(source, f"expected a whole number, got {value!r}") from None
    if number < 1:
        raise ConfigError(source, f"must be at least 1, got {number}")
    return number


def non_negative_int(value: str, source: str) -> int:
    """Parse a whole number >= 0 or fail naming ``source``."""
    try:
        number = int(value)
    except ValueError:
        raise ConfigError(source, f"expected a whole number, got {value!r}") from None
    if number < 0:
        raise ConfigError(source, f"must not be negative, got {number}")
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


def layered(
    name: str,
    option: str | None,
    ini: str | None,
    default: str,
    parse: Callable[[str, str], T],
) -> T:
    """Pick the first given of option, ``PINET_<NAME>``, ini, default; parse naming its origin."""
    env_name = f"PINET_{name.upper()}"
    if option is not None:
        return parse(option, f"--pinet-{name.replace('_', '-')}")
    if os.environ.get(env_name):
        return parse(os.environ[env_name], env_name)
    if ini:
        return parse(ini, f"ini option pinet_{name}")
    return parse(default, f"default of pinet_{name}")
