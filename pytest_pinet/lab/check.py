"""Validate a lab env file without touching hardware: pinet's section and labgrid's targets.

labgrid only warns about a misspelled driver argument and accepts unknown keys silently;
a nightly run should not discover that at 3 a.m.  ``pinet lab check`` builds every target
(resources and drivers, never activated) and turns each warning into an error naming the
file and the target.
"""

from __future__ import annotations

import warnings
from pathlib import Path

from ..errors import ConfigError
from .inventory import Inventory, load_inventory


def check_env_file(path: str | Path) -> Inventory:
    """Validate ``path`` completely; return the inventory or raise ConfigError."""
    inventory = load_inventory(path)
    from labgrid import Environment
    from labgrid.exceptions import InvalidConfigError, NoConfigFoundError

    source = str(path)
    try:
        env = Environment(config_file=str(path))
    except (InvalidConfigError, NoConfigFoundError) as exc:
        raise ConfigError(source, f"labgrid rejects it: {getattr(exc, 'msg', exc)}") from None
    for name in env.config.get_targets():
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                env.get_target(name)
            except InvalidConfigError as exc:
                cause = f": {exc.__cause__}" if exc.__cause__ else ""
                raise ConfigError(
                    source, f"targets.{name}: {str(getattr(exc, 'msg', exc)).strip()}{cause}"
                ) from None
            except Exception as exc:  # noqa: BLE001 - a driver that needs an optional module, e.g. pysnmp
                raise ConfigError(source, f"targets.{name}: {type(exc).__name__}: {exc}") from None
        for warning in caught:
            raise ConfigError(source, f"targets.{name}: {warning.message}", "remove or fix the attribute")
    return inventory
