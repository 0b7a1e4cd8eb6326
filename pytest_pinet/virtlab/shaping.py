"""Make a veth behave like an Ethernet cable of a given speed.

A veth moves packets at memory speed.  To emulate GbE faithfully two things are needed:
segmentation offloads off (so the qdisc sees real MTU-sized frames, not 64 KiB GSO
super-packets) and a token bucket that charges every frame its full wire cost.  The kernel's
``skb->len`` on a veth already includes the 14-byte Ethernet header; the remaining per-frame
cost (FCS 4 + preamble 8 + inter-frame gap 12 = 24 bytes) is the ``overhead``.
"""

from __future__ import annotations

from dataclasses import dataclass

from . import system

# Offloads that would let the qdisc see anything but wire-sized frames.
OFFLOADS_OFF = ("tso", "gso", "gro", "lro", "ufo", "tx-udp-segmentation", "rx-gro-list")
# Per-frame bytes not in skb->len on a veth: FCS + preamble/SFD + inter-frame gap.
WIRE_OVERHEAD = 4 + 8 + 12


@dataclass(frozen=True)
class Shaping:
    """How one direction of an emulated link is shaped."""

    speed_mbps: int
    overhead: int = WIRE_OVERHEAD
    burst_bytes: int = 32 * 1024
    latency_ms: float = 5.0

    def tc_args(self) -> list[str]:
        """Arguments after ``tc qdisc replace dev DEV root``."""
        return [
            "tbf",
            "rate",
            f"{self.speed_mbps}mbit",
            "burst",
            str(self.burst_bytes),
            "latency",
            f"{self.latency_ms}ms",
            "overhead",
            str(self.overhead),
            "mpu",
            "84",  # 64-byte minimum frame + preamble + gap
        ]


def disable_offloads(netns: str, device: str) -> None:
    """Turn off every segmentation/aggregation offload the device lets us change."""
    ethtool = system.find_tool("ethtool")
    for feature in OFFLOADS_OFF:
        # Not every kernel knows every feature name: unknown ones are skipped, known ones
        # must take effect (checked by ``offloads_state``).
        system.run([ethtool, "-K", device, feature, "off"], netns=netns, check=False)


def offloads_state(netns: str, device: str) -> dict[str, bool]:
    """Current on/off state of the offloads we care about, from ``ethtool -k``."""
    out = system.run([system.find_tool("ethtool"), "-k", device], netns=netns).stdout
    names = {
        "tcp-segmentation-offload": "tso",
        "generic-segmentation-offload": "gso",
        "generic-receive-offload": "gro",
        "large-receive-offload": "lro",
    }
    state: dict[str, bool] = {}
    for line in out.splitlines():
        key, _, value = line.partition(":")
        short = names.get(key.strip())
        if short:
            state[short] = value.strip().startswith("on")
    return state


def apply(netns: str, device: str, shaping: Shaping) -> None:
    """Install the shaper as the device's root qdisc."""
    system.run(
        [system.find_tool("tc"), "qdisc", "replace", "dev", device, "root", *shaping.tc_args()], netns=netns
    )


def describe(netns: str, device: str) -> str:
    """The root qdisc line of ``device``, for ``pinet lab status``."""
    out = system.run(
        [system.find_tool("tc"), "qdisc", "show", "dev", device], netns=netns, check=False
    ).stdout
    return out.strip().splitlines()[0] if out.strip() else "none"
