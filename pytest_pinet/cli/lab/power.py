"""``pinet lab power``: switch any lab's host through labgrid's power driver of its env file,
and the boot check ``pinet lab up --board qemu`` runs once after building the board."""

from __future__ import annotations

import argparse
import os
import re
from pathlib import Path
from typing import Any

from ...errors import PinetError
from .lab_args import add_lab_option, spec_of


def register(lab_sub: Any) -> None:
    """``pinet lab power HOST on|off|cycle``."""
    power = lab_sub.add_parser(
        "power", help="power a host through labgrid: on, off, or cycle and wait for SSH"
    )
    add_lab_option(power)
    power.add_argument("host")
    power.add_argument("state", choices=["on", "off", "cycle"])
    power.add_argument("--env", default=None, help="labgrid env file (default: the virtual lab's)")
    power.add_argument("--wait", type=float, default=120.0, help="seconds to wait for SSH after a cycle")
    power.set_defaults(func=cmd_lab_power)


def cmd_lab_power(args: argparse.Namespace) -> int:
    """Power a host through labgrid's power driver of the env file (any lab)."""
    # An env whose power command calls `pinet lab power` again would recurse without end.
    if os.environ.get("PINET_POWER_NESTED"):
        raise PinetError(
            "pinet lab power called from a power command: the env file's power driver loops back"
        )
    os.environ["PINET_POWER_NESTED"] = "1"
    env_file = Path(args.env) if args.env else spec_of(args).env_file
    strategy, target = board_strategy_for(env_file, args.host, args.wait)
    try:
        if args.state == "cycle":
            strategy.transition("reachable")
            print(f"{args.host}: power cycled, reachable over SSH after {strategy.boot_seconds:.1f} s")
            if strategy.console is not None:
                said = console_said(strategy.console_log)
                print(f"{args.host}: console {console_name(strategy.console)}: {said}")
        else:
            strategy.transition(args.state)
            print(f"{args.host}: power {args.state}")
    finally:
        target.deactivate_all_drivers()
    return 0


def console_name(console: Any) -> str:
    """Where a console driver reads: a console server's line as ``protocol host:port``."""
    port = getattr(console, "port", None)
    if port is not None and hasattr(port, "protocol"):
        return f"{port.protocol} {port.host}:{port.port}"
    return type(console).__name__


def console_said(log: str) -> str:
    """What a console carried since power on, in a line: a console server's line that is
    wired to the wrong board, or to none, is found by the first cycle, not the first fault."""
    from ...lab.strategy import readable

    text = readable(log)
    if not text.strip():
        return "silent since power on (no board on this line, or it sends nothing)"
    kernel = re.search(r"Linux version (\S+)", text)
    booted = f", the boot of kernel {kernel.group(1)}" if kernel else ""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return f"{len(lines)} lines since power on{booted}, the last: {lines[-1][-80:]!r}"


def check_qemu_board(env_file: Path, host: str) -> None:
    """Boot the QEMU board through labgrid, log in on its console, power-cycle it, reach it
    again, and switch it off: the proof that the lab's board works before a run needs it."""
    strategy, target = board_strategy_for(env_file, host, wait=300.0)
    try:
        strategy.transition("reachable")
        print(
            f"{host}: booted kernel {strategy.console_kernel} through labgrid's QEMUDriver; "
            f"SSH after {strategy.boot_seconds:.1f} s, console login {strategy.console_login_seconds:.1f} s"
        )
        strategy.transition("off")
        strategy.transition("reachable")
        print(f"{host}: power-cycled through labgrid; SSH again after {strategy.boot_seconds:.1f} s")
        strategy.transition("off")
        print(f"{host}: off until a test run powers it on (it boots in the run's session)")
    finally:
        target.deactivate_all_drivers()


def board_strategy_for(env_file: Path, host: str, wait: float) -> tuple[Any, Any]:
    """A PinetBoardStrategy for ``host`` of ``env_file``, with pinet's pinned SSH."""
    from labgrid import Environment

    from ...lab.inventory import load_inventory
    from ...lab.strategy import NoBoardStrategy, board_strategy

    if not env_file.exists():
        raise PinetError(f"{env_file} not found: run `pinet lab up` or pass --env FILE")
    inventory = load_inventory(env_file)
    if host not in inventory.hosts:
        raise PinetError(f"{env_file}: no host {host!r}; hosts: {sorted(inventory.hosts)}")
    target = Environment(config_file=str(env_file)).get_target(host)
    try:
        strategy = board_strategy(target, host)
    except NoBoardStrategy as exc:
        raise PinetError(f"{env_file}: {exc}") from None
    strategy.remote = inventory.hosts[host].connect(connect_timeout=3)
    strategy.boot_timeout = wait
    return strategy, target
