"""Make a veth behave like an Ethernet cable of a given speed.

A veth moves packets at memory speed.  To emulate GbE faithfully two things are needed:
segmentation offloads off (so the qdisc sees real MTU-sized frames, not 64 KiB GSO
super-packets) and a token bucket that charges every frame its full wire cost.  The kernel's
``skb->len`` on a veth already includes the 14-byte Ethernet header; the remaining per-frame
cost (FCS 4 + preamble 8 + inter-frame gap 12 = 24 bytes) is folded into the rate.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..host.facts_parse import cable_alias
from . import system

# Offloads that would let the qdisc see anything but wire-sized frames.
OFFLOADS_OFF = ("tso", "gso", "gro", "lro", "ufo", "tx-udp-segmentation", "rx-gro-list")
ETH_HEADER = 14
# Per-frame wire bytes not in skb->len on a veth: FCS 4 + preamble/SFD 8 + inter-frame gap 12.
WIRE_EXTRA = 4 + 8 + 12
# 1.0: the emulated cable is never faster than Ethernet.  Measured here (docs/virtual-lab.md,
# `pinet bench`): with the framing-scaled rate, 10 cubic streams after a 2 s warm-up land
# within 0.05 % under the line-rate limit, with TCP timestamps on and off, and 1472-byte UDP
# at 81,274 frames/s.  A factor other than 1.0 needs a measured model error to justify it.
DEFAULT_CALIBRATION = 1.0


@dataclass(frozen=True)
class Shaping:
    """How one direction of an emulated link is shaped.

    tbf's ``overhead`` argument did not charge the 24 framing bytes faithfully on veth (10
    streams measured 1.3 % above physics with ``rate 1gbit overhead 24``).  Charging each
    frame its skb length at a rate scaled by (MTU + 14) / (MTU + 38) gives MTU-sized frames
    exactly their wire time, which is what bulk TCP goodput depends on.
    """

    speed_mbps: int
    mtu: int = 1500
    calibration: float = DEFAULT_CALIBRATION
    # A burst below one GSO packet (~64 KiB) makes tbf split packets itself: CPU, drops.  On
    # slower cables the burst shrinks with the rate (8.4 ms of traffic, as 1 MiB is at GbE),
    # to at least 16 KiB: a 1 MiB burst would let a 10 Mbit/s cable send 0.8 s at once.
    burst_bytes: int | None = None
    # 50 ms of queue: a 13 ms queue made 10 cubic streams overflow it every few seconds
    # (hundreds of retransmits, runs at 938-939 Mbit/s).
    latency_ms: float = 50.0
    # The queue in bytes instead, for a bucket larger than usual: tc's ``latency`` sizes the
    # queue as rate x latency + burst, so a larger bucket would deepen the queue with it.
    limit_bytes: int | None = None

    @property
    def rate_kbit(self) -> int:
        """tbf rate in kbit/s for skb lengths that exclude the 24 framing bytes."""
        frame = self.mtu + ETH_HEADER
        return round(self.speed_mbps * 1000 * frame / (frame + WIRE_EXTRA) * self.calibration)

    @property
    def min_skb_bytes(self) -> int:
        """Smallest charge: a 64-byte frame's wire time (84 bytes) at the scaled rate."""
        frame = self.mtu + ETH_HEADER
        return round((64 + 8 + 12) * frame / (frame + WIRE_EXTRA))

    @property
    def burst(self) -> int:
        """tbf's bucket in bytes."""
        if self.burst_bytes is not None:
            return self.burst_bytes
        return max(16 * 1024, min(1024 * 1024, 1024 * 1024 * self.speed_mbps // 1000))

    @property
    def queue_bytes(self) -> int:
        """The bytes tbf queues: ``limit_bytes``, or rate x latency + burst as tc sizes it."""
        if self.limit_bytes:
            return self.limit_bytes
        return round(self.rate_kbit * 1000 / 8 * self.latency_ms / 1000) + self.burst

    def tc_args(self) -> list[str]:
        """Arguments after ``tc qdisc replace dev DEV root``."""
        return [
            "tbf",
            "rate",
            f"{self.rate_kbit}kbit",
            "burst",
            str(self.burst),
            *(["limit", str(self.limit_bytes)] if self.limit_bytes else ["latency", f"{self.latency_ms}ms"]),
            "mpu",
            str(self.min_skb_bytes),
        ]


# How long the QEMU board's vCPUs may be kept off the host's cores without the cable losing
# its capacity: 100 ms of traffic in the board's own bucket (never less than the cable's
# usual bucket, never more than 1 MiB).
BOARD_STALL_S = 0.1


def board_shaping(speed_mbps: int, mtu: int) -> Shaping:
    """The QEMU board's own shaper on a port: the cable's rate, with a bucket for host stalls.

    A real NIC keeps sending from its ring while the CPU is late; the emulated board's tbf
    only sends when its timer runs, and under software emulation on a busy two-core host the
    vCPU threads wait tens of milliseconds for a core.  With the cable's usual 16 KiB bucket
    (13 ms at 10 Mbit/s) every longer wait was wire time lost for good: a CI run's SFQ
    download measured 7.95-8.64 Mbit/s every second (8.29 in all, against 9.41), and two
    busy loops on the host reproduced 8.43-8.64.  With 100 ms in the bucket the same loops
    left 9.36-9.45 in the steady seconds.  The rate is unchanged, so over a run the cable
    still carries no more than its line rate; what a stall held back arrives in the next
    second instead (docs/qemu-board.md).
    """
    usual = Shaping(speed_mbps, mtu)
    stall = min(1024 * 1024, round(speed_mbps * 1e6 / 8 * BOARD_STALL_S))
    # The queue stays the cable's usual one (rate x 50 ms + its usual bucket): with tc's
    # latency form the 125 KB bucket had deepened it to 150 ms, and a main job measured the
    # 10 Mbit/s adapter's RTT under load at p99 143.5 ms against its 85 ms ceiling.
    return Shaping(speed_mbps, mtu, burst_bytes=max(usual.burst, stall), limit_bytes=usual.queue_bytes)


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


def shape_end(netns: str, device: str, speed_mbps: int, mtu: int, port_mbps: int = 0) -> None:
    """Shape one end of a cable: at the cable's speed, or, for a board's port behind a
    one-way bus (``port_mbps``), on that bus at the slower of the two (:func:`apply_bus`)."""
    if port_mbps:
        apply_bus(netns, device, Shaping(min(port_mbps, speed_mbps), mtu))
    else:
        apply(netns, device, Shaping(speed_mbps, mtu))


def bus_device(device: str) -> str:
    """The IFB device that stands for the bus behind a board's port ``device`` (at most the
    kernel's 15 characters)."""
    return f"bus-{device}"[:15]


def apply_bus(netns: str, device: str, shaping: Shaping) -> None:
    """Shape ``device`` as a port behind a one-way bus (USB 2): what it sends and what it
    receives both pass one shaper, on an IFB device, so the two directions share the bus's
    rate as they do on the board instead of each getting a cable's worth.  Egress reaches the
    IFB through an htb root whose filter redirects every packet (htb sends what comes back
    from the IFB unclassified, straight to the device), ingress through the ingress qdisc."""
    tc, ip, bus = system.find_tool("tc"), system.find_tool("ip"), bus_device(device)
    if bus not in system.run([ip, "-o", "link", "show"], netns=netns).stdout:
        system.run([ip, "link", "add", bus, "type", "ifb"], netns=netns)
    system.run([ip, "link", "set", bus, "up"], netns=netns)
    system.run([tc, "qdisc", "replace", "dev", bus, "root", *shaping.tc_args()], netns=netns)
    redirect = ["protocol", "all", "u32", "match", "u32", "0", "0", "action", "mirred", "egress", "redirect"]
    system.run([tc, "qdisc", "replace", "dev", device, "root", "handle", "1:", "htb"], netns=netns)
    system.run([tc, "filter", "replace", "dev", device, "parent", "1:", *redirect, "dev", bus], netns=netns)
    system.run([tc, "qdisc", "replace", "dev", device, "ingress"], netns=netns)
    system.run(
        [tc, "filter", "replace", "dev", device, "parent", "ffff:", *redirect, "dev", bus], netns=netns
    )


def describe(netns: str, device: str) -> str:
    """The root qdisc line of ``device``, for ``pinet lab status``."""
    out = system.run(
        [system.find_tool("tc"), "qdisc", "show", "dev", device], netns=netns, check=False
    ).stdout
    return out.strip().splitlines()[0] if out.strip() else "none"


def label(netns: str, device: str, speed_mbps: int) -> None:
    """Make the cable's end say what it is: a veth shaped to ``speed_mbps``, full duplex.

    A veth's ethtool speed is a fixed 10000 Mb/s whatever it carries; the facts of a host read
    this alias instead, so the health check compares the inventory with what the cable was
    really shaped to (``pinet lab degrade --link-speed`` changes both together).
    """
    system.run(
        [system.find_tool("ip"), "link", "set", "dev", device, "alias", cable_alias(speed_mbps)], netns=netns
    )
