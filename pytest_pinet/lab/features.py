"""Which suites a lab can run, and the labgrid features its suites need, from its inventory.

The adapter and storage suites carry labgrid's ``lg_feature("usb-ethernet")`` and
``lg_feature("usb-disk")``: with ``--lg-env`` / ``LG_ENV`` labgrid skips a test whose feature no
target declares, and a night without those suites would still be green.  pinet therefore
derives the features from what the inventory already says (a link with a USB adapter gives
``usb-ethernet``, a disk in ``pinet.disks`` gives ``usb-disk``), and ``pinet lab check`` says
per suite whether the lab can run it and why not.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .inventory import Inventory

# The suite (its marker) -> the labgrid features its tests carry (pytest_pinet/suite).
SUITE_FEATURES: dict[str, tuple[str, ...]] = {"usb_adapter": ("usb-ethernet",), "storage": ("usb-disk",)}
NOT_USB = frozenset({"builtin", "unknown"})  # adapter values that are not a USB adapter


def usb_links(inventory: Inventory) -> list[str]:
    """Links whose board end is a USB Ethernet adapter (``adapter`` other than builtin)."""
    return [link.name for link in inventory.links if link.adapter not in NOT_USB]


def derived_features(inventory: Inventory) -> set[str]:
    """The labgrid features the inventory implies: what the lab has, it can be tested on."""
    features = set()
    if usb_links(inventory):
        features.add("usb-ethernet")
    if inventory.disks:
        features.add("usb-disk")
    return features


def declared_features(env_data: Mapping[str, Any]) -> set[str]:
    """The features labgrid reads from an env file: its own and every target's."""
    found = set(env_data.get("features") or ())
    for target in (env_data.get("targets") or {}).values():
        if isinstance(target, Mapping):
            found |= set(target.get("features") or ())
    return {str(name) for name in found}


@dataclass(frozen=True)
class SuiteReadiness:
    """Whether a lab can run one suite, and why (or why not)."""

    suite: str
    runs: bool
    why: str
    applies: bool = True  # False: a suite for another kind of lab (the QEMU board's own tests)

    @property
    def status(self) -> str:
        """``runs``, ``CANNOT RUN`` (a suite the night plans and would not measure) or
        ``not for this lab``."""
        if self.runs:
            return "runs"
        return "CANNOT RUN" if self.applies else "not for this lab"


def _feature_note(suite: str, declared: set[str], derived: set[str]) -> str:
    notes = []
    for feature in SUITE_FEATURES.get(suite, ()):
        how = (
            "declared" if feature in declared else "derived from the inventory" if feature in derived else ""
        )
        notes.append(f"labgrid feature {feature}: {how}" if how else f"labgrid feature {feature} missing")
    return f" ({'; '.join(notes)})" if notes else ""


def suite_readiness(inventory: Inventory, env_data: Mapping[str, Any]) -> list[SuiteReadiness]:
    """One line per suite of pytest_pinet/suite: can this lab run it, and what it runs on."""
    declared, derived = declared_features(env_data), derived_features(inventory)
    boards = [board.name for board in inventory.boards]
    linked = {board: [link.name for link in inventory.links if link.board == board] for board in boards}
    with_links = [
        f"{board} ({len(names)} link{'s' if len(names) != 1 else ''})"
        for board, names in linked.items()
        if names
    ]
    usb = usb_links(inventory)
    qemu = [
        name
        for name, target in (env_data.get("targets") or {}).items()
        if isinstance(target, Mapping) and "QEMUDriver" in (target.get("drivers") or {})
    ]
    facts = {
        "ethernet": (
            bool(with_links),
            f"boards {', '.join(with_links)}",
            "no board has a link to a peer (pinet.links)",
        ),
        "usb_adapter": (
            bool(usb),
            f"links with a USB adapter: {', '.join(usb)}",
            "no link has a USB adapter (adapter: other than builtin)",
        ),
        "routing": (
            bool(inventory.routes),
            f"routes {', '.join(r.name for r in inventory.routes)}",
            "no pinet.routes entry",
        ),
        "udp": (
            bool(with_links),
            f"boards {', '.join(with_links)}",
            "no board has a link to a peer (pinet.links)",
        ),
        "storage": (
            bool(inventory.disks),
            f"disks {', '.join(f'{d.name} on {d.host}' for d in inventory.disks)}",
            "no disk in pinet.disks",
        ),
        "qemu_board": (
            bool(qemu),
            f"QEMU targets {', '.join(qemu)}",
            "not a QEMU board (the QEMU board's own tests; no target has a QEMUDriver)",
        ),
    }
    report = []
    for suite, (runs, yes, no) in facts.items():
        note = _feature_note(suite, declared, derived)
        report.append(SuiteReadiness(suite, runs, (yes if runs else no) + note, suite != "qemu_board"))
    return report
