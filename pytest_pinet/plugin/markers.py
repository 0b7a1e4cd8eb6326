"""The suites' markers, registered only where pinet is active (a pinet option or ini key given,
a test using pinet's fixtures, or the shipped suite collected, whose conftest registers them):
a project that does not use pinet keeps ``--strict-markers`` catching its own typo of
"storage" or "routing"."""

from __future__ import annotations

import pytest

MARKERS = {
    "ethernet": "built-in or adapter Ethernet throughput between a board and a peer",
    "half_duplex": "one end sends, the other receives",
    "full_duplex": "both ends send at once",
    "routing": "traffic routed through the board between two peers",
    "latency": "round-trip time idle and under load beside the traffic, judged lower-is-better",
    "usb_adapter": "USB Ethernet adapters of the board",
    "udp": "UDP packet rates",
    "storage": "USB disk throughput",
    "qemu_board": "the QEMU board itself: labgrid power-cycle, serial console, USB devices",
    # labgrid's own marker, registered here only when labgrid's plugin is off (-p no:labgrid):
    # with --lg-env, a test needing a feature no target declares is skipped by labgrid
    # (adapters: usb-ethernet, disks: usb-disk; pinet derives them, see lab/features.py)
    "lg_feature": "labgrid feature flags a target must declare",
}


def register_markers(config: pytest.Config) -> None:
    """Register the suites' markers once, leaving any already registered (labgrid's
    ``lg_feature``, or a project's own line for the same name) as it is."""
    known = {line.split(":", 1)[0].split("(", 1)[0].strip() for line in config.getini("markers")}
    if config.pluginmanager.hasplugin("labgrid"):
        known.add("lg_feature")  # labgrid's plugin registers it in its own (trylast) configure
    for name, text in MARKERS.items():
        if name not in known:
            config.addinivalue_line("markers", f"{name}: {text}")
