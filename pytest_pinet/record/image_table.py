"""A run over several images, side by side: per context, each image's figure and its change
against the first image, and whether that change is beyond the noise.

The first image of ``--pinet-image`` is the reference (the known good one, as a nightly
lists it).  One run has no run-to-run history of a new image, so the noise is the one
``pinet compare`` falls back to: three standard errors of the two images' per-second
samples, never less than 1 %; a context without per-second samples (a disk's dd) has an
unknown noise and is never called a change.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..model.context_key import context_key
from .side_by_side import NOT_MEASUREMENTS, label_of, noise_of

# What differs between images by nature, so it is not part of the row's context.
IMAGE_FIELDS = ("image", "kernel", "os")


@dataclass(frozen=True)
class ImageCell:
    """One context on one image."""

    median_mbps: float
    samples: tuple[float, ...]
    delta_pct: float | None = None  # against the first image
    noise_pct: float | None = None
    beyond_noise: bool | None = None  # None: cannot tell


def side_by_side(rows: Sequence[dict[str, Any]]) -> tuple[list[str], dict[str, dict[str, ImageCell]]]:
    """The images in run order, and per context (key without image, kernel, OS) each
    image's cell."""
    images: list[str] = []
    values: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for row in rows:
        context = row.get("context", {})
        image = context.get("image") or ""
        if not image or row.get("verdict") in NOT_MEASUREMENTS or row.get("goodput_mbps") is None:
            continue
        if image not in images:
            images.append(image)
        key = context_key({**context, **{name: "" for name in IMAGE_FIELDS}})
        values.setdefault(key, {}).setdefault(image, []).append(row)
    table: dict[str, dict[str, ImageCell]] = {}
    for key, by_image in values.items():
        cells: dict[str, ImageCell] = {}
        for image, measured in by_image.items():
            samples = tuple(float(v) for r in measured for v in r.get("interval_mbps") or ())
            cells[image] = ImageCell(statistics.median(float(r["goodput_mbps"]) for r in measured), samples)
        first = cells.get(images[0]) if images else None
        for image, cell in list(cells.items()):
            if first is None or image == images[0] or not first.median_mbps:
                continue
            delta = 100.0 * (cell.median_mbps - first.median_mbps) / first.median_mbps
            noise, _ = noise_of((), first.samples, cell.samples)
            beyond = None if noise is None else abs(delta) > noise
            cells[image] = ImageCell(cell.median_mbps, cell.samples, delta, noise, beyond)
        table[key] = cells
    return images, table


def image_table(rows: Sequence[dict[str, Any]]) -> list[str]:
    """The side-by-side table for the end-of-run summary; nothing for a run of one image."""
    images, table = side_by_side(rows)
    if len(images) < 2:
        return []
    width = max(16, *(len(i) + 2 for i in images))
    lines = [
        f"pinet: images side by side (change against {images[0]}; noise: 3 standard errors of the "
        "per-second samples, at least 1 %)",
        f"{'context':52}" + "".join(f"{image:>{width}}" for image in images),
    ]
    for key in sorted(table):
        cells = table[key]
        text = f"{label_of(key)[:52]:52}"
        for image in images:
            cell = cells.get(image)
            if cell is None:
                text += f"{'-':>{width}}"
                continue
            figure = f"{cell.median_mbps:.1f}"
            if cell.delta_pct is not None:
                mark = "!" if cell.beyond_noise else ("?" if cell.beyond_noise is None else "")
                figure += f" {cell.delta_pct:+.1f}%{mark}"
            text += f"{figure:>{width}}"
        lines.append(text)
    beyond = sum(1 for cells in table.values() for c in cells.values() if c.beyond_noise)
    unknown = sum(
        1
        for cells in table.values()
        for c in cells.values()
        if c.delta_pct is not None and c.beyond_noise is None
    )
    lines.append(
        f"{beyond} change(s) beyond noise (marked !)"
        + (f"; {unknown} with unknown noise (marked ?)" if unknown else "")
    )
    return lines
