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

SHIPPED = Path(__file__).resolve().parent.parent / "data" / "lab_health.yaml"
ADAPTER_KEYS = frozenset({"drivers", "usb", "usb_mbps"})
BOARD_KEYS = frozenset({"model", "throttle_c"})
USB_ID_CHARS = frozenset("0123456789abcdef:")


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
        data = _read(path)
        adapters.update(_adapters(data.get("adapters", {}), str(path)))
        throttle = _boards(data.get("boards", []), str(path)) + throttle
    return HealthTable(adapters, tuple(throttle))


def _read(path: Path) -> Mapping[str, Any]:
    source = str(path)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(source, f"cannot read the lab health table: {exc.strerror}") from None
    except (UnicodeDecodeError, yaml.YAMLError):
        raise ConfigError(source, "not a YAML file", "fix the syntax") from None
    if data is None:
        return {}
    if not isinstance(data, Mapping) or set(data) - {"adapters", "boards"}:
        raise ConfigError(source, "expected a mapping of 'adapters' and 'boards'")
    return data


def _adapters(data: Any, source: str) -> dict[str, AdapterSpec]:
    if not isinstance(data, Mapping):
        raise ConfigError(source, "adapters: expected a mapping of adapter name -> spec")
    found = {}
    for name, spec in data.items():
        where = f"adapters.{name}"
        if not isinstance(spec, Mapping) or set(spec) - ADAPTER_KEYS:
            raise ConfigError(source, f"{where}: expected a mapping of {sorted(ADAPTER_KEYS)}")
        drivers = spec.get("drivers", {})
        if not isinstance(drivers, Mapping) or not all(
            isinstance(v, list) and all(isinstance(d, str) for d in v) for v in drivers.values()
        ):
            raise ConfigError(source, f"{where}.drivers: expected OS -> list of driver names")
        usb = spec.get("usb", [])
        if not isinstance(usb, list) or not all(
            isinstance(i, str) and len(i) == 9 and set(i.lower()) <= USB_ID_CHARS for i in usb
        ):
            raise ConfigError(source, f"{where}.usb: expected a list of 'vvvv:pppp' IDs")
        mbps = spec.get("usb_mbps")
        if mbps is not None and (isinstance(mbps, bool) or not isinstance(mbps, int | float) or mbps <= 0):
            raise ConfigError(source, f"{where}.usb_mbps: expected a positive number (480, 5000)")
        found[str(name)] = AdapterSpec(
            str(name),
            {str(os): tuple(names) for os, names in drivers.items()},
            tuple(i.lower() for i in usb),
            float(mbps) if mbps is not None else None,
        )
    return found


def _boards(data: Any, source: str) -> list[tuple[str, float]]:
    if not isinstance(data, list):
        raise ConfigError(source, "boards: expected a list of {model, throttle_c}")
    found = []
    for index, entry in enumerate(data):
        if (
            not isinstance(entry, Mapping)
            or set(entry) != BOARD_KEYS
            or not isinstance(entry["model"], str)
            or isinstance(entry["throttle_c"], bool)
            or not isinstance(entry["throttle_c"], int | float)
        ):
            raise ConfigError(source, f"boards[{index}]: expected {{model: TEXT, throttle_c: NUMBER}}")
        found.append((entry["model"], float(entry["throttle_c"])))
    return found
