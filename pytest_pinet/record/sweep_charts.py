"""Charts of one sweep, as the seeds drew them: rate and CPU per thread count, MiB/s per block size.

Attached to the Allure result of the test that ran the sweep; matplotlib renders offline
(Agg), and a machine without it simply gets no chart.
"""

from __future__ import annotations

import math
from typing import Any

from ..model import DiskDetail, Measurement, UdpDetail
from .plots import png_of


def _pyplot() -> Any:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    return plt


def _or_gap(value: float | None) -> float:
    """A figure to plot: a missing one is a gap in the line (NaN), never a point at 0."""
    return math.nan if value is None else value


def _png(figure: Any, plt: Any) -> bytes:
    return png_of(figure, left=0.11, right=0.88, bottom=0.16, top=0.88)


def udp_chart(runs: list[Measurement]) -> bytes | None:
    """Sent and received Mbit/s (left axis) and the generator's CPU % (right) per thread count."""
    plt = _pyplot()
    if plt is None or not runs:
        return None
    threads = [r.context.streams for r in runs]
    figure, axes = plt.subplots(figsize=(6, 3.2), dpi=100)
    axes.plot(threads, [_or_gap(r.sent_mbps) for r in runs], marker="o", label="sent")
    axes.plot(threads, [r.goodput_mbps for r in runs], marker="s", label="received")
    if runs[0].limit_mbps:
        axes.axhline(runs[0].limit_mbps, color="grey", linestyle="--", linewidth=0.8, label="line rate")
    axes.set_xlabel("threads")
    axes.set_ylabel("Mbit/s (1472-byte payload)")
    cpu = axes.twinx()
    cpu.plot(
        threads,
        [_or_gap(r.detail.generator_cpu_pct if isinstance(r.detail, UdpDetail) else None) for r in runs],
        color="tab:red",
        marker="^",
    )
    cpu.set_ylabel("generator CPU %", color="tab:red")
    context = runs[0].context
    axes.set_title(f"{context.scenario} over {context.link} ({context.board})", fontsize=9)
    axes.legend(fontsize=7, loc="lower right")
    axes.set_xticks(threads)
    return _png(figure, plt)


def storage_chart(runs: list[Measurement]) -> bytes | None:
    """MiB/s against block size (log scale), write and read, for one filesystem."""
    plt = _pyplot()
    if plt is None or not runs:
        return None
    figure, axes = plt.subplots(figsize=(6, 3.2), dpi=100)
    for direction, marker in (("write", "o"), ("read", "s")):
        chosen = [r for r in runs if r.context.direction == direction]
        axes.plot(
            [r.context.block_bytes for r in chosen],
            [r.detail.mib_per_s if isinstance(r.detail, DiskDetail) else math.nan for r in chosen],
            marker=marker,
            label=direction,
        )
    axes.set_xscale("log", base=2)
    axes.set_xlabel("block size (bytes)")
    axes.set_ylabel("MiB/s")
    context = runs[0].context
    axes.set_title(f"{context.filesystem} on {context.link} ({context.board})", fontsize=9)
    axes.legend(fontsize=7)
    return _png(figure, plt)


def attach_chart(png: bytes | None, name: str) -> None:
    """Attach to the running test's Allure result (nothing without allure-pytest)."""
    if png is None and _pyplot() is not None:
        return  # nothing to draw (no runs)
    if png is None:
        try:
            import allure
        except ImportError:
            return
        from .allure_out import NO_CHARTS

        allure.attach(NO_CHARTS, name, allure.attachment_type.TEXT)
        return
    try:
        import allure
    except ImportError:
        return
    allure.attach(png, name, allure.attachment_type.PNG)
