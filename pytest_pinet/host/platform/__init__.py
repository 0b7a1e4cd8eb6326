"""The operating systems pinet can drive, one module each, behind :class:`Platform`.

A host's platform comes from ``uname -s`` on its first connection (or from its ``os:`` key in
the inventory, which spares the question): Linux, FreeBSD, NetBSD and QNX are driven (QNX as
far as its command line allows: what it cannot do is refused with a QNX reason); any other
system is reported unsupported with the reason, never as a traceback.
"""

from __future__ import annotations

from ...errors import ConfigError, Unsupported
from .base import FACTS_MARK, SNAPSHOT_MARK, Platform
from .bsd_parse import os_of_uname
from .freebsd import FREEBSD, FreeBsdPlatform
from .linux import LINUX, LinuxPlatform
from .netbsd import NETBSD, NetBsdPlatform
from .qnx import QNX, QnxPlatform

PLATFORMS: dict[str, Platform] = {p.name: p for p in (LINUX, FREEBSD, NETBSD, QNX)}
# Systems pinet recognises but cannot drive, and why (none at the moment).
RECOGNISED: dict[str, str] = {}


def platform_named(name: str, where: str = "inventory") -> Platform:
    """The platform of a host's ``os:`` key; an unknown one names the known ones."""
    try:
        return PLATFORMS[name]
    except KeyError:
        raise ConfigError(where, f"unknown os {name!r}", f"one of: {', '.join(sorted(PLATFORMS))}") from None


def platform_of_uname(host: str, uname: str) -> Platform:
    """The platform of what ``uname -s`` printed on ``host``; Unsupported (with the reason)
    for a system pinet recognises but cannot drive, or does not know."""
    key = os_of_uname(uname)
    if key in PLATFORMS:
        return PLATFORMS[key]
    said = uname.strip().splitlines()[0][:60] if uname.strip() else "nothing"
    reason = RECOGNISED.get(key) or f"`uname -s` said {said!r}: pinet drives {', '.join(sorted(PLATFORMS))}"
    raise Unsupported("platform", host, reason)


__all__ = [
    "FACTS_MARK",
    "FREEBSD",
    "LINUX",
    "NETBSD",
    "PLATFORMS",
    "QNX",
    "SNAPSHOT_MARK",
    "FreeBsdPlatform",
    "LinuxPlatform",
    "NetBsdPlatform",
    "Platform",
    "QnxPlatform",
    "platform_named",
    "platform_of_uname",
]
