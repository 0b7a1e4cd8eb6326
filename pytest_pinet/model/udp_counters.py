"""What a UDP receiver's kernel counted: the figure a packet-rate measurement is made of."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ReceiverCounters:
    """What a receiver's kernel counted: interface packets, UDP datagrams to no port, UDP in."""

    rx_packets: int
    udp_in: int
    udp_noports: int
    udp_rcvbuf_errors: int

    def __sub__(self, earlier: ReceiverCounters) -> ReceiverCounters:
        return ReceiverCounters(
            self.rx_packets - earlier.rx_packets,
            self.udp_in - earlier.udp_in,
            self.udp_noports - earlier.udp_noports,
            self.udp_rcvbuf_errors - earlier.udp_rcvbuf_errors,
        )

    @property
    def datagrams(self) -> int:
        """Datagrams that reached UDP, to a socket or to no port."""
        return self.udp_in + self.udp_noports + self.udp_rcvbuf_errors
