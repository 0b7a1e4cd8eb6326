"""Measurers: take one kind of measurement on a lab and hand each result to a recorder.

They know the lab (hosts, links, facts) and the traffic tools, and nothing of pytest: the
fixtures give them a recorder and callbacks, ``pinet bench`` gives them its own, so the same
code measures in a test, in a benchmark and in any later command.
"""

from __future__ import annotations

from ..model.context import LOOPBACK
from .base import FactsCache, Measurer, Recorder, Site, link_context
from .routing import RoutingMeasurer
from .storage import StorageMeasurer
from .tcp import DIRECTIONS, TcpMeasurer
from .udp import PAYLOAD, UdpMeasurer

__all__ = [
    "DIRECTIONS",
    "LOOPBACK",
    "PAYLOAD",
    "FactsCache",
    "Measurer",
    "Recorder",
    "RoutingMeasurer",
    "Site",
    "StorageMeasurer",
    "TcpMeasurer",
    "UdpMeasurer",
    "link_context",
]
