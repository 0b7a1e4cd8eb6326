"""The model every room shares: what a measurement is, where it was taken, what the hosts were.

It imports nothing of the other rooms, so ``record`` can store a measurement, ``judge`` can
judge it and ``traffic`` can build it without any of them loading the others.
"""

from __future__ import annotations

from .context import TrafficContext
from .host_facts import HostFacts, InterfaceFacts
from .latency import BacklogSample, LatencyUse, ProbeFigures
from .measurement import Detail, DiskDetail, Measurement, QdiscUse, RouteUse, TcpDetail, UdpDetail
from .observation import CpuUse, Observation
from .udp_counters import ReceiverCounters

__all__ = [
    "BacklogSample",
    "CpuUse",
    "Detail",
    "DiskDetail",
    "HostFacts",
    "InterfaceFacts",
    "LatencyUse",
    "Measurement",
    "Observation",
    "ProbeFigures",
    "QdiscUse",
    "ReceiverCounters",
    "RouteUse",
    "TcpDetail",
    "TrafficContext",
    "UdpDetail",
]
