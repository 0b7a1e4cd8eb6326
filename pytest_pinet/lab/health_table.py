"""What the hardware an inventory names must look like: the adapter table and thermal limits.

An inventory says a link is an ``rtl8153``; only a table knows that such an adapter is
driven by ``r8152`` on Linux and ``ure`` on the BSDs, enumerates as ``0bda:8153`` and must
sit on a USB 3 port.  The table is data (``pytest_pinet/data/lab_health.yaml``), and a lab
extends or overrides it with its own ``lab/lab_health.yaml`` under the rootdir, so a new
adapter needs no code.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from ..errors import ConfigError
from ..yaml_text import load_yaml

SHIPPED = Path(__file__).resolve().parent.parent / "data" / "lab_health.yaml"


@dataclass(frozen=True)
class AdapterSpec:
    """What one adapter name of an inventory must look like on its host."""

    name: str
    drivers: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # os -> driver names
    usb_ids: tuple[str, ...] = ()  # "0bda:8153"
    usb_mbps: float | None = None  # the bus speed it must enumerate at, at least


@dataclass(frozen=True)
class HealthTable:
    """Adapters by name, and (model substring, throttling point) in order of precedence."""

    adapters: Mapping[str, AdapterSpec]
    throttle: tuple[tuple[str, float], ...]

    def throttle_c(self, model: str) -> float | None:
        """The temperature ``model`` throttles at: the first entry whose name it contains."""
        rule = self.throttle_rule(model)
        return rule[1] if rule else None

    def throttle_rule(self, model: str) -> tuple[str, float] | None:
        """(the entry's model, its throttling point) that applies to ``model``; "default" when
        no entry names it."""
        for name, limit in self.throttle:
            if name != "default" and name.lower() in model.lower():
                return name, limit
        return next(((name, limit) for name, limit in self.throttle if name == "default"), None)


def load_health_table(paths: Sequence[Path]) -> HealthTable:
    """The shipped table with each of ``paths`` laid over it (adapters by name; boards first)."""
    adapters: dict[str, AdapterSpec] = {}
    throttle: list[tuple[str, float]] = []
    for path in (SHIPPED, *paths):
        read = _read(path)
        adapters.update(
            {
                name: AdapterSpec(
                    name,
                    {os: tuple(drivers) for os, drivers in spec.drivers.items()},
                    tuple(i.lower() for i in spec.usb),
                    spec.usb_mbps,
                )
                for name, spec in read.adapters.items()
            }
        )
        throttle = [(board.model, board.throttle_c) for board in read.boards] + throttle
    return HealthTable(adapters, tuple(throttle))


def _read(path: Path) -> Any:
    """One table file, read into its schema (ConfigError naming the file and the key otherwise)."""
    # Imported here, when a file is read: the schema library must not cost a pytest run that
    # never checks a lab's health anything at plugin import (issue 27).
    from ..schema.convert import structure
    from .health_table_schema import HealthTableSchema

    source = str(path)
    try:
        data = load_yaml(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(source, f"cannot read the lab health table: {exc.strerror}") from None
    except (UnicodeDecodeError, yaml.YAMLError):
        raise ConfigError(source, "not a YAML file", "fix the syntax") from None
    return structure({} if data is None else data, HealthTableSchema, source)
