"""``pinet lab vhost-power HOST on|off`` (internal): switch one virtual host, which is what the
virtual lab's env file has labgrid's ExternalPowerDriver run."""

from __future__ import annotations

import argparse
from typing import Any

from ...errors import PinetError
from ...virtlab import virtual_lab
from .lab_args import add_lab_option, spec_of


def register(lab_sub: Any) -> None:
    """Register ``lab vhost-power`` on ``pinet lab``'s subparsers."""
    vhost = lab_sub.add_parser("vhost-power", help="(internal) switch a virtual host; used by its env file")
    add_lab_option(vhost)
    vhost.add_argument("host")
    vhost.add_argument("state", choices=["on", "off"])
    vhost.set_defaults(func=cmd_lab_vhost_power)


def cmd_lab_vhost_power(args: argparse.Namespace) -> int:
    """Switch a virtual host itself (what the virtual env's ExternalPowerDriver runs)."""
    spec = spec_of(args)
    try:
        spec.host(args.host)
    except KeyError:
        raise PinetError(
            f"no host {args.host!r} in lab {spec.name}; hosts: {[h.name for h in spec.hosts]}"
        ) from None
    virtual_lab.power(spec, args.host, args.state)
    return 0
