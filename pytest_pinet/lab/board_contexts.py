"""The contexts a board's nights measure, from the inventory alone: what ``pinet thresholds
explain --board`` and ``pinet lab check`` judge before any night runs, so that a lab sees the
limit and floor of each of its boards' paths (and which of its own rules judges which) while
it writes the env file, not in the first red morning.

One context per kind of measurement the suites take on the board's links, routes and disks:
each link both ways in half duplex, in full duplex (and, over an adapter, with the peer
throttled as the adapter suite does), UDP over the built-in link and over loopback, each
route's download per qdisc and its download beside each upload target, each disk written and
read at its smallest and largest blocks.  Profiles and clocks do not change a path's limit
or the rule that judges it: every context is the stock profile's.
"""

from __future__ import annotations

from typing import Any

from ..host.routed_path import DOWNLOAD, QDISCS, UPLOAD, UPLOAD_TARGETS
from ..host.scratch_disk import DEFAULT_BLOCKS
from ..model.context import LOOPBACK, UDP_MODES
from .inventory import Inventory

STREAMS = 10  # the suites' default (-P 10, the seed's)
THROTTLED_STREAM_MBPS = 40  # the adapter suite's throttled peer: 40 Mbit/s a stream (the seed's)


def board_contexts(inventory: Inventory, board: str) -> list[dict[str, Any]]:
    """Every kind of context the suites measure on ``board``, as threshold match keys."""
    base = {"lab": inventory.lab, "board": board, "model": inventory.model_of(board), "profile": "stock"}
    contexts: list[dict[str, Any]] = []
    for link in (link for link in inventory.links if link.board == board):
        over = {
            **base,
            "peer": link.peer,
            "link": link.name,
            "adapter": link.adapter,
            "adapter_bus": link.bus,
            "link_speed_mbps": link.speed_mbps,
            "mtu": link.mtu,
            "protocol": "TCP",
            "streams": STREAMS,
            "scenario": "ethernet" if link.adapter == "builtin" else "usb-adapter",
        }
        for direction in ("board->peer", "peer->board"):
            contexts.append({**over, "direction": direction, "duplex": "half"})
            contexts.append({**over, "direction": direction, "duplex": "full"})
        if over["scenario"] == "usb-adapter":
            throttled = THROTTLED_STREAM_MBPS * STREAMS
            contexts.append(
                {**over, "direction": "peer->board", "duplex": "full", "rate_target_mbps": throttled}
            )
        if link.adapter == "builtin":
            for mode in UDP_MODES:
                udp = {**over, "scenario": f"udp-{mode}", "protocol": "UDP", "duplex": "half", "streams": 1}
                contexts.append({**udp, "direction": "board->peer"})
                loopback = {"link": LOOPBACK, "peer": board, "link_speed_mbps": 0, "adapter": ""}
                contexts.append({**udp, **loopback, "direction": "board->board"})
    contexts += _routed(inventory, board, base)
    contexts += _stored(inventory, board, base)
    return contexts


def _routed(inventory: Inventory, board: str, base: dict[str, Any]) -> list[dict[str, Any]]:
    contexts: list[dict[str, Any]] = []
    disks = any(disk.host == board for disk in inventory.disks)
    for route in (route for route in inventory.routes if route.board == board):
        over = {
            **base,
            "peer": f"{route.wan.peer}<>{route.lan.peer}",
            "link": route.name,
            "adapter": route.wan.adapter,
            "lan_adapter": route.lan.adapter,
            "adapter_bus": route.wan.bus,
            "link_speed_mbps": min(route.lan.speed_mbps, route.wan.speed_mbps),
            "mtu": min(route.lan.mtu, route.wan.mtu),
            "protocol": "TCP",
            "streams": STREAMS,
            "scenario": "routing",
        }
        for qdisc in sorted(QDISCS):
            contexts.append({**over, "qdisc": qdisc, "direction": DOWNLOAD, "duplex": "half"})
            for target in UPLOAD_TARGETS:
                for direction in (DOWNLOAD, UPLOAD):
                    contexts.append(
                        {
                            **over,
                            "qdisc": qdisc,
                            "direction": direction,
                            "duplex": "full",
                            "rate_target_mbps": target,
                        }
                    )
        if disks:
            contexts.append({**over, "scenario": "routing+disk-io", "direction": DOWNLOAD, "duplex": "half"})
    return contexts


def _stored(inventory: Inventory, board: str, base: dict[str, Any]) -> list[dict[str, Any]]:
    contexts: list[dict[str, Any]] = []
    for disk in (disk for disk in inventory.disks if disk.host == board):
        over = {**base, "peer": board, "link": disk.name, "adapter": disk.bus, "protocol": "block"}
        for block in (DEFAULT_BLOCKS[0], DEFAULT_BLOCKS[-1]):
            for direction in ("write", "read"):
                contexts.append(
                    {
                        **over,
                        "scenario": "storage",
                        "direction": direction,
                        "duplex": "half",
                        "block_bytes": block,
                    }
                )
    return contexts


def describe(context: dict[str, Any]) -> str:
    """A context in a few words: what was measured, over what, which way."""
    what = str(context["scenario"])
    if context.get("qdisc"):
        what += f" {context['qdisc']}"
    if context.get("block_bytes"):
        what += f" {context['block_bytes']} B blocks"
    target = context.get("rate_target_mbps")
    aside = f", {'throttled to' if what.startswith('usb') else 'upload at'} {target}" if target else ""
    if what.startswith("routing") and context.get("duplex") == "full" and not target:
        aside = ", upload unlimited"
    over = context.get("link", "")
    return f"{what} {context.get('duplex', '')} {context.get('direction', '')} over {over}{aside}".strip()
