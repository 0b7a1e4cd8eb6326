"""The effective settings of one run, as :mod:`pytest_pinet.plugin.options` resolved them.

Options, their defaults and their validators are declared once, in the options table; this
is only the resulting value, free of pytest, so sessions and commands can carry it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # loaded when a run needs them, not at every pytest start
    from ..traffic.adaptive import SettleRule
    from ..virtlab.topology import LabSpec

VIRTUAL = "virtual"


@dataclass(frozen=True)
class PinetSettings:
    """Effective settings of one run: every field is given, by ``option_sources.resolve``, from
    the options table, which holds each default once (no default here could drift from it)."""

    lab: str  # "virtual" or a path to a labgrid env file
    results: Path
    thresholds: Path
    profiles: Path
    duration: int
    omit: int
    streams: int
    keep_lab: bool
    remeasure: int
    db: str  # results store URL; "" = sqlite file in the results directory
    virtual_lab: str  # which virtual lab (place) to build and use
    baseline_window: int  # earlier results of the same context the baseline uses
    baseline_min: int  # fewer earlier results: recorded, not judged
    baseline_band: float  # smallest band around the baseline, percent (pinet bench: sensitivity)
    adaptive: bool  # stop a run once per-second goodput settled
    adaptive_min: int  # measured seconds before an adaptive stop
    adaptive_precision: float  # 95 % half-width of the mean, percent
    detect: float | None  # the drop one night is asked to catch, percent (None: none asked)
    max_temp: float  # a board above this (°C) measures invalid results
    udp_duration: int  # seconds per UDP packet-rate run (a sweep runs one per thread count)
    storage_mib: int  # MiB written and read per block size in the storage sweep
    board: str  # the virtual lab's boards: both (pi and qpi), a namespace, or a QEMU machine
    board_image: str  # the image on the QEMU board's card at lab up
    qemu_accel: str  # how QEMU runs the board: tcg (anywhere) or kvm (where it works)
    places: int  # virtual places pinet1..pinetN to spread over; 0 = one per xdist worker
    coordinator: str  # labgrid coordinator (HOST:PORT) to reserve places from; "" = none
    place_tags: tuple[str, ...]  # KEY=VALUE tags a reserved place must carry
    place_wait: int  # seconds a take waits for a place another run holds
    boards: tuple[str, ...]  # boards to measure; () = every board of the inventory
    image: tuple[str, ...]  # catalogue images to flash and measure in turn; () = as found
    repeat: int  # every board test this many times
    out_of_service_after: int  # failed nightly health checks in a row that take a board out; 0 never
    return_when: str  # "returned" (pinet lab return) or "healthy" (also a passing health check)
    allow_skips: bool  # opt-out of "never green on nothing" (docs/nightly.md)
    lab_source: str  # how the lab was named: --lg-env, LG_ENV, ini ...

    def lab_spec(self) -> LabSpec:
        """The virtual lab this run builds and uses."""
        from ..virtlab.topology import lab_spec

        return lab_spec(
            self.virtual_lab,
            board=self.board,
            image=self.board_image if self.board in ("qemu", "both") else "",
            accel=self.qemu_accel,
        )

    def detect_with(self, lab_detect: float | None) -> float | None:
        """The drop one night is asked to catch: ``--pinet-detect`` (and its environment
        variable and ini key), else the lab's own (the env file's ``pinet: detect:``)."""
        return self.detect if self.detect is not None else lab_detect

    def settle_rule(self, lab_detect: float | None = None) -> SettleRule | None:
        """The adaptive-duration rule, or None for fixed-duration runs; ``lab_detect``: the
        env file's detect target, used when the run asks for none."""
        from ..traffic.adaptive import SettleRule

        if not self.adaptive or self.adaptive_min >= self.duration:
            return None
        precision = self.adaptive_precision
        detect = self.detect_with(lab_detect)
        if detect is not None:
            from ..judge.detection import night_precision_for

            # Narrow enough that one night's own scatter lets the band catch the drop asked.
            precision = min(precision, night_precision_for(detect, self.baseline_window))
        return SettleRule(self.adaptive_min, precision)

    @property
    def lab_files(self) -> tuple[Path, ...]:
        """The env files (one per place) of a real lab; empty for the virtual lab."""
        return () if self.virtual else tuple(Path(part) for part in self.lab.split(","))

    @property
    def virtual(self) -> bool:
        """True when the run uses the built-in namespace lab."""
        return self.lab == VIRTUAL
