"""``pinet lab degrade``: make the virtual lab's cables worse on purpose, the way real ones go
bad: slower by a percentage (a planted regression), noisy (``--jitter``), one cable negotiating
a lower speed (``--link-speed``), or deeper queues (``--queue-packets``, a latency regression)."""

from __future__ import annotations

import argparse
from typing import Any

from ...virtlab import cable_faults
from .lab_args import add_lab_option, spec_of

QUEUE = cable_faults.DEFAULT_QUEUE_PACKETS


def register(lab_sub: Any) -> None:
    """``pinet lab degrade``."""
    degrade = lab_sub.add_parser(
        "degrade", help="slow the emulated cables by a percentage (a known regression)"
    )
    add_lab_option(degrade)
    degrade.add_argument("--percent", type=float, default=3.0, help="how much slower (default 3)")
    degrade.add_argument(
        "--jitter",
        type=float,
        default=0.0,
        metavar="PERCENT",
        help="noise model: the rate varies by this spread run to run and second to second (default 0)",
    )
    degrade.add_argument(
        "--jitter-runs",
        type=float,
        default=None,
        metavar="PERCENT",
        help="the run-to-run part alone (longer runs cannot average it away; default: --jitter)",
    )
    degrade.add_argument(
        "--jitter-seconds",
        type=float,
        default=None,
        metavar="PERCENT",
        help="the second-to-second part alone (longer runs average it away; default: --jitter)",
    )
    degrade.add_argument(
        "--hold", type=float, default=10.0, help="seconds one run-to-run level holds (default 10)"
    )
    degrade.add_argument("--reset", action="store_true", help="back to the calibrated rate, no jitter")
    degrade.add_argument(
        "--link-speed",
        type=int,
        default=None,
        metavar="MBPS",
        help="instead: one cable negotiates like a bad one, shaped to and reporting MBPS (0: its own)",
    )
    degrade.add_argument("--link", default=None, help="the cable --link-speed changes (default: the first)")
    degrade.add_argument(
        "--queue-packets",
        type=int,
        default=None,
        metavar="N",
        help="instead: give every cable end a queue of N packets (txqueuelen; a planted latency "
        f"regression when deeper than {QUEUE}; 0 = back to {QUEUE})",
    )
    degrade.set_defaults(func=cmd_lab_degrade)


def cmd_lab_degrade(args: argparse.Namespace) -> int:
    """Slow the virtual lab's cables by a percentage (0 = back to calibrated), give one cable
    a bad link speed (``--link-speed``), or deepen every cable's queue (``--queue-packets``)."""
    if args.queue_packets is not None:
        packets = args.queue_packets or cable_faults.DEFAULT_QUEUE_PACKETS
        for line in cable_faults.deepen_queues(spec_of(args), packets):
            print(line)
        return 0
    if args.link_speed is not None:
        for line in cable_faults.degrade_link_speed(spec_of(args), args.link_speed, args.link):
            print(line)
        return 0
    percent = 0.0 if args.reset else args.percent
    runs = 0.0 if args.reset else (args.jitter if args.jitter_runs is None else args.jitter_runs)
    seconds = 0.0 if args.reset else (args.jitter if args.jitter_seconds is None else args.jitter_seconds)
    for line in cable_faults.degrade(spec_of(args), percent, runs, args.hold, seconds):
        steady = f" (degraded {percent:g} %)" if percent else " (calibrated)"
        print(line if "jitter" in line else line + steady)
    return 0
