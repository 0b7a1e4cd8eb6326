"""Line-rate model: the most payload an Ethernet link can carry, from first principles.

Thresholds are only trustworthy if they are derived from physics instead of copied from a
lucky run.  Every frame on the wire carries fixed overhead that no tuning can remove:

* preamble + start-of-frame delimiter: 8 bytes
* Ethernet header: 14 bytes (+4 per 802.1Q VLAN tag)
* frame check sequence: 4 bytes
* inter-frame gap: 12 bytes
* minimum frame (header + payload + FCS) of 64 bytes; shorter payloads are padded

On GbE at MTU 1500 a frame occupies 1538 bytes of wire time, so at most 81,274 full-size
frames/s fit, and TCP gets 1460 bytes of each (949.3 Mbit/s), or 1448 with the TCP timestamp
option that Linux enables by default (941.5 Mbit/s).
"""

from __future__ import annotations

from dataclasses import dataclass

PREAMBLE_SFD = 8
ETH_HEADER = 14
VLAN_TAG = 4
FCS = 4
INTER_FRAME_GAP = 12
MIN_FRAME = 64  # header + payload + FCS, without preamble and gap

IP_HEADER = {4: 20, 6: 40}
TCP_HEADER = 20
TCP_TIMESTAMP_OPTION = 12  # 10 bytes of option padded to a 4-byte boundary
UDP_HEADER = 8

MIN_MTU = {4: 68, 6: 1280}
MAX_MTU = 65535


@dataclass(frozen=True)
class LinkModel:
    """An Ethernet link as the model sees it.

    ``tcp_options`` is the number of TCP option bytes carried in every segment (12 with
    timestamps, the Linux default; 0 with ``net.ipv4.tcp_timestamps=0``).
    """

    speed_mbps: float = 1000.0
    mtu: int = 1500
    ip_version: int = 4
    tcp_options: int = TCP_TIMESTAMP_OPTION
    vlan_tags: int = 0

    def __post_init__(self) -> None:
        if self.speed_mbps <= 0:
            raise ValueError(f"link speed must be positive, got {self.speed_mbps}")
        if self.ip_version not in IP_HEADER:
            raise ValueError(f"IP version must be 4 or 6, got {self.ip_version}")
        if not MIN_MTU[self.ip_version] <= self.mtu <= MAX_MTU:
            raise ValueError(
                f"MTU {self.mtu} outside {MIN_MTU[self.ip_version]}..{MAX_MTU} for IPv{self.ip_version}"
            )
        if self.tcp_options < 0 or self.tcp_options > 40 or self.tcp_options % 4:
            raise ValueError(f"TCP options must be 0..40 in steps of 4, got {self.tcp_options}")
        if self.vlan_tags < 0 or self.vlan_tags > 2:
            raise ValueError(f"VLAN tags must be 0, 1 or 2, got {self.vlan_tags}")

    def wire_bytes(self, l3_bytes: int) -> int:
        """Bytes of wire time one frame carrying ``l3_bytes`` of IP packet occupies."""
        tags = VLAN_TAG * self.vlan_tags
        frame = max(ETH_HEADER + tags + l3_bytes + FCS, MIN_FRAME)
        return PREAMBLE_SFD + frame + INTER_FRAME_GAP

    @property
    def full_frame_wire_bytes(self) -> int:
        """Wire bytes of a frame filled up to the MTU."""
        return self.wire_bytes(self.mtu)

    @property
    def tcp_payload_per_frame(self) -> int:
        """TCP payload bytes in one MTU-sized segment (the MSS minus options)."""
        return self.mtu - IP_HEADER[self.ip_version] - TCP_HEADER - self.tcp_options

    @property
    def udp_payload_per_frame(self) -> int:
        """UDP payload bytes in one MTU-sized datagram (1472 at MTU 1500 over IPv4)."""
        return self.mtu - IP_HEADER[self.ip_version] - UDP_HEADER

    def frames_per_second(self, l3_bytes: int | None = None) -> float:
        """Frames per second at line rate for IP packets of ``l3_bytes`` (default: MTU)."""
        size = self.mtu if l3_bytes is None else l3_bytes
        return self.speed_mbps * 1e6 / (8 * self.wire_bytes(size))

    @property
    def tcp_goodput_mbps(self) -> float:
        """Maximum TCP goodput (payload Mbit/s) with full-size segments back to back."""
        return self.speed_mbps * self.tcp_payload_per_frame / self.full_frame_wire_bytes

    @property
    def ack_wire_bytes(self) -> int:
        """Wire bytes of a pure TCP ACK (headers only, padded to the minimum frame)."""
        return self.wire_bytes(IP_HEADER[self.ip_version] + TCP_HEADER + self.tcp_options)

    def tcp_goodput_full_duplex_mbps(self, segments_per_ack: int = 2) -> float:
        """Per-direction TCP goodput when both ends send at once.

        Each direction then also carries the ACKs of the other direction's data, one per
        ``segments_per_ack`` segments: 914.7 Mbit/s per direction on GbE at MTU 1500 with
        classic delayed ACKs (every 2nd segment), 939.8 with the stretch ACKs Linux sends
        at high rates (one per ~33 segments measured in the virtual lab).  Without a
        measured ACK ratio the half-duplex limit is the honest upper bound.
        """
        if segments_per_ack < 1:
            raise ValueError(f"segments_per_ack must be >= 1, got {segments_per_ack}")
        data = self.full_frame_wire_bytes * segments_per_ack
        share = data / (data + self.ack_wire_bytes)
        return self.tcp_goodput_mbps * share

    @property
    def udp_goodput_mbps(self) -> float:
        """Maximum UDP goodput with MTU-sized datagrams."""
        return self.speed_mbps * self.udp_payload_per_frame / self.full_frame_wire_bytes


def tcp_goodput_limit(
    speed_mbps: float = 1000.0,
    mtu: int = 1500,
    *,
    ip_version: int = 4,
    timestamps: bool = True,
    vlan_tags: int = 0,
) -> float:
    """Shorthand for the TCP goodput limit of a link, in Mbit/s."""
    options = TCP_TIMESTAMP_OPTION if timestamps else 0
    return LinkModel(speed_mbps, mtu, ip_version, options, vlan_tags).tcp_goodput_mbps


def udp_goodput_limit(speed_mbps: float, mtu: int, payload_bytes: int, *, ip_version: int = 4) -> float:
    """Most UDP payload Mbit/s a link carries in datagrams of ``payload_bytes``.

    0.0 where no cable is involved (``speed_mbps`` 0: loopback), which judges as "no limit".
    """
    if not speed_mbps:
        return 0.0
    model = LinkModel(speed_mbps, mtu, ip_version)
    l3_bytes = payload_bytes + IP_HEADER[ip_version] + UDP_HEADER
    return model.frames_per_second(l3_bytes) * payload_bytes * 8 / 1e6
