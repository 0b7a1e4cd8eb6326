"""What each context can catch, on the morning page and in the commands' JSON.

The figures are judge.detection's, from each context's accepted nights before the night and
the floor its newest verdict held it to: the least sensitive contexts first, and the blind
ones (a drop one night flags is larger than the context's margin to its floor) named apart,
so "0 regressions" can be read for what it is worth.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

from ..judge.detection import DetectionPower


def power_json(power: DetectionPower | None) -> dict[str, Any] | None:
    """A context's detection power for dashboards (None: no baseline yet)."""
    if power is None:
        return None
    shown = {k: v for k, v in asdict(power).items() if k != "accepted"}  # the figures are the store's
    return {**shown, "blind": power.blind}


def _nights(n: int | None) -> str:
    return "-" if n is None else str(n)


def detection_markdown(powers: Sequence[tuple[str, DetectionPower]]) -> list[str]:
    """The morning page's sections: the blind contexts, then every context's power."""
    blind = [(context, p) for context, p in powers if p.blind]
    lines = [
        f"## Blind contexts: {len(blind)} (a drop one night catches is larger than the margin to the floor)",
        "",
    ]
    lines += [
        f"- {context}: one night catches {p.one_night_pct:.1f} %, the floor is "
        f"{p.floor_margin_pct:.1f} % below its level (spread {p.spread_pct:.2f} % over {p.nights} nights)"
        for context, p in blind
    ] or ["None: every context with a floor notices a drop before it reaches its floor."]
    lines += [
        "",
        "## What each context can catch (from its accepted nights; least sensitive first)",
        "",
    ]
    if not powers:
        return [*lines, "No context has the nights a baseline needs yet."]
    lines += [
        "| context | spread | one night catches | 1 % red after | 3 % red after | above floor |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for context, p in sorted(powers, key=lambda cp: -cp[1].one_night_pct):
        floor = "-" if p.floor_margin_pct is None else f"{p.floor_margin_pct:.1f} %"
        lines.append(
            f"| {context}{' (BLIND)' if p.blind else ''} | {p.spread_pct:.2f} % | {p.one_night_pct:.1f} % "
            f"| {_nights(p.nights_to_red.get('1'))} | {_nights(p.nights_to_red.get('3'))} | {floor} |"
        )
    lines.append("")
    lines.append(
        "Nights to red: until a persisting drop is red in 9 of 10 cases under the verdict's rules "
        "('-': not within a month). docs/results-and-reports.md explains each figure."
    )
    return lines
