"""Thermal guard: a figure taken while the board throttled says nothing about the software.

The seed's passively cooled Pi reached about 85 °C within five minutes of routing and its
firmware lowered the clock.  A result measured like that is neither a pass nor a
regression: it is invalid, with the evidence (temperatures, the firmware's throttle flags)
kept beside it, and it never enters a baseline.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..model import Observation

# Raspberry Pi firmware flags of `vcgencmd get_throttled`: bits 0-3 are "now", 16-19 "since boot".
NOW_FLAGS = {
    0x1: "under-voltage",
    0x2: "ARM frequency capped",
    0x4: "throttled",
    0x8: "soft temperature limit",
}
SINCE_SHIFT = 16
DEFAULT_MAX_TEMPERATURE_C = 80.0


def thermal_evidence(
    observations: Iterable[Observation], host: str, max_temperature_c: float = DEFAULT_MAX_TEMPERATURE_C
) -> str | None:
    """Why the run on ``host`` is invalid, or ``None`` when nothing says so.

    Invalid when the board was above ``max_temperature_c`` before or after the run, when a
    "now" flag was set at either end, or when a "since boot" flag appeared during the run.
    """
    reasons: list[str] = []
    for obs in observations:
        if obs.host != host:
            continue
        for moment, value in zip(("before", "after"), obs.temperature_c, strict=False):
            if isinstance(value, int | float) and value > max_temperature_c:
                reasons.append(f"{value:.1f} °C {moment} the run (bound {max_temperature_c:.1f} °C)")
        before, after = obs.throttled
        for moment, value in (("before", before), ("after", after)):
            if isinstance(value, int):
                reasons += [f"{name} {moment} the run" for bit, name in NOW_FLAGS.items() if value & bit]
        if isinstance(before, int) and isinstance(after, int):
            appeared = (after & ~before) >> SINCE_SHIFT
            reasons += [
                f"{name} occurred during the run" for bit, name in NOW_FLAGS.items() if appeared & bit
            ]
    unique = list(dict.fromkeys(reasons))
    return f"{host}: " + "; ".join(unique) if unique else None
