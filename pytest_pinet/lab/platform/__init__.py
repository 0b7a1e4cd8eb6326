"""The operating systems pinet can drive, one module each, behind :class:`Platform`."""

from __future__ import annotations

from ...errors import ConfigError
from .base import FACTS_MARK, SNAPSHOT_MARK, Platform
from .linux import LINUX, LinuxPlatform

PLATFORMS: dict[str, Platform] = {LINUX.name: LINUX}


def platform_named(name: str, where: str = "inventory") -> Platform:
    """The platform of a host's ``os:`` key; an unknown one names the known ones."""
    try:
        return PLATFORMS[name]
    except KeyError:
        raise ConfigError(where, f"unknown os {name!r}", f"one of: {', '.join(sorted(PLATFORMS))}") from None


__all__ = ["FACTS_MARK", "LINUX", "PLATFORMS", "SNAPSHOT_MARK", "LinuxPlatform", "Platform", "platform_named"]
