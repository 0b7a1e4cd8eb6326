"""Unit tables shared by the rooms that read figures other programs print (tc, iperf3)."""

from __future__ import annotations

# The decimal prefixes of rates ("988333Kbit", "-b 500M"): tc and iperf3 both mean powers of ten.
SI_PREFIX = {"": 1.0, "K": 1e3, "M": 1e6, "G": 1e9}
