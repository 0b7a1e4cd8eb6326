"""Programs pinet ships as source and builds on the host under test: the UDP packet-rate
generator (``pinet-udpgen.c``; :mod:`pytest_pinet.traffic.udpgen` builds and runs it, and the
QEMU board's images carry it built).  Named here once, where reading the path costs nothing:
the images' recipe hashes the source without loading the SSH machinery."""

from __future__ import annotations

from pathlib import Path

UDPGEN_SOURCE = Path(__file__).resolve().with_name("pinet-udpgen.c")
