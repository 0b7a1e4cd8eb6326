"""Where and how a measurement was taken: the keys thresholds and baselines match on."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

# The link of a board sending to itself (UDP over loopback): no cable, adapter or driver.
LOOPBACK = "loopback"
# The UDP generator's modes, and the scenarios the measurers name their contexts by: what a
# threshold rule's ``scenario`` may say.
UDP_MODES = ("sendto", "sendmmsg", "raw")
SCENARIOS = (
    "ethernet",
    "usb-adapter",
    "routing",
    "routing+disk-io",
    "storage",
    *(f"udp-{m}" for m in UDP_MODES),
)


@dataclass(frozen=True)
class TrafficContext:
    """Where and how a measurement was taken: a figure is only comparable within one context."""

    lab: str
    scenario: str
    board: str
    peer: str
    link: str
    adapter: str
    direction: str  # "board->peer", "peer->board"
    duplex: str  # "half" or "full"
    streams: int
    duration_s: int
    omit_s: int
    link_speed_mbps: int
    mtu: int
    protocol: str = "TCP"
    profile: str = "stock"
    qdisc: str = ""
    kernel: str = ""
    os: str = ""
    driver: str = ""
    # the sender's -b target in total; 0 = as fast as it can (whole numbers stay int: store keys)
    rate_target_mbps: float = 0
    # A full duplex whose other direction is throttled: that direction's -b target in total.
    # Its load differs (fewer segments queue at the board), so its latency too: it is its own
    # context, never blended with the unthrottled full duplex's (0: the other direction is free).
    opposite_rate_mbps: float = 0
    filesystem: str = ""  # storage suite: ext2, ext3, ext4, vfat
    block_bytes: int = 0  # storage suite: the dd block size
    image: str = ""  # the catalogue image pinet verified on the board; "" when not flashed by pinet
    # The board's model from the inventory ("Pi 5"): threshold rules match it.  Not part of
    # the store's context key: the board's name already fixes it.
    model: str = ""
    # The bus the adapter's port sits on ("usb2", "usb3", "pcie"), where the inventory says;
    # "" : the model's fastest USB port for an adapter (its physics), nothing for a built-in
    # port.  A routed path's second leg: the LAN link's adapter ("builtin", a chip's name).
    adapter_bus: str = ""
    lan_adapter: str = ""
    # Which part of the path set its limit (judge.path_limit: "cable", "port", "usb2", ...),
    # as the measurer found it: rules may match on it, the report and summary show it.  None
    # of these three are in the store's context key: the link's name already fixes them.
    limited_by: str = ""

    def as_match(self) -> dict[str, Any]:
        """The context as threshold match keys."""
        return asdict(self)
