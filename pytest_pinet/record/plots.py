"""Trend plots across runs, kernels, adapters and OSes, from the results store.

One chart per context (board, link, direction, duplex, profile, qdisc): goodput of every
run in time order, each point coloured by the kernel it ran on and shaped by the OS, so a
shift that came with a kernel or OS change is visible at a glance.  The charts go into the
Allure report as attachments of a "throughput trends" result.
"""

from __future__ import annotations

import io
import json
import time
import uuid
from pathlib import Path
from typing import Any

from ..model.context_key import LABEL_FIELDS, ContextKey
from .store import ResultsStore

MARKERS = "os^sDvP*X"


def context_label(key: str) -> str:
    """The readable part of a context key."""
    return " ".join(ContextKey.parse(key).values(LABEL_FIELDS))


def trend_charts(store: ResultsStore, limit: int = 24) -> list[tuple[str, bytes]]:
    """(title, PNG) per context with at least two runs, newest contexts first."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return []
    charts = []
    for key in store.context_keys():
        history = store.history(key)
        runs: dict[str, list[float]] = {}
        meta: dict[str, tuple[str, str, str]] = {}
        for row in history:
            runs.setdefault(row.run_id, []).append(row.goodput_mbps)
            meta[row.run_id] = (row.kernel or "?", row.os or "?", row.adapter or "?")
        if len(runs) < 2:
            continue
        kernels = sorted({m[0] for m in meta.values()})
        systems = sorted({m[1] for m in meta.values()})
        colours = plt.get_cmap("tab10")
        figure, axes = plt.subplots(figsize=(8, 3.2), dpi=100)
        order = list(runs)
        for index, run_id in enumerate(order):
            kernel, os_name, _adapter = meta[run_id]
            value = max(runs[run_id])  # a re-measured run keeps its best attempt
            axes.scatter(
                [index],
                [value],
                color=colours(kernels.index(kernel) % 10),
                marker=MARKERS[systems.index(os_name) % len(MARKERS)],
                s=40,
                zorder=3,
            )
        axes.plot(range(len(order)), [max(runs[r]) for r in order], color="grey", linewidth=0.8, zorder=2)
        for kernel in kernels:
            axes.scatter([], [], color=colours(kernels.index(kernel) % 10), label=f"kernel {kernel}")
        for os_name in systems:
            axes.scatter(
                [], [], color="black", marker=MARKERS[systems.index(os_name) % len(MARKERS)], label=os_name
            )
        axes.set_xticks(range(len(order)))
        axes.set_xticklabels([r[:15] for r in order], rotation=30, ha="right", fontsize=7)
        axes.set_ylabel("Mbit/s")
        title = context_label(key)
        axes.set_title(title, fontsize=9)
        axes.legend(fontsize=7, loc="lower left")
        charts.append((title, png_of(figure, left=0.08, right=0.98, bottom=0.26, top=0.9)))
        if len(charts) >= limit:
            break
    return charts


def png_of(
    figure: Any, *, left: float = 0.1, right: float = 0.97, bottom: float = 0.16, top: float = 0.88
) -> bytes:
    """A finished matplotlib figure as PNG bytes; the figure is closed (pyplot keeps every
    open figure alive).

    Margins are set, not measured: ``tight_layout`` measured every label of every chart,
    about a fifth of a chart's time, and a night draws a few hundred charts while it
    measures. Each kind of chart gives the margins its labels need (rotated run ids at the
    bottom, a second axis on the right)."""
    import matplotlib.pyplot as plt

    figure.subplots_adjust(left=left, right=right, bottom=bottom, top=top)
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png")
    plt.close(figure)
    return buffer.getvalue()


def write_trends_result(alluredir: Path, charts: list[tuple[str, bytes]], run_id: str) -> Path | None:
    """An Allure result "throughput trends" carrying the charts as attachments."""
    if not charts:
        return None
    alluredir.mkdir(parents=True, exist_ok=True)
    attachments = []
    for title, png in charts:
        source = f"{uuid.uuid4()}-attachment.png"
        (alluredir / source).write_bytes(png)
        attachments.append({"name": title, "source": source, "type": "image/png"})
    now = int(time.time() * 1000)
    result = {
        "uuid": str(uuid.uuid4()),
        "historyId": "pinet-throughput-trends",
        "testCaseId": "pinet-throughput-trends",
        "fullName": "pinet.trends#throughput",
        "name": "throughput trends across runs, kernels, adapters and OSes",
        # Charts, not a test: "unknown" keeps them out of the pass count.
        "status": "unknown",
        "statusDetails": {"message": "charts of the stored history; nothing is judged here"},
        "stage": "finished",
        "start": now,
        "stop": now,
        "labels": [
            {"name": "epic", "value": "network regression"},
            {"name": "feature", "value": "trends"},
            {"name": "suite", "value": "trends"},
        ],
        "parameters": [],
        "attachments": attachments,
        "description": f"Goodput per run from the results store (run {run_id} included).",
    }
    path = alluredir / f"{result['uuid']}-result.json"
    path.write_text(json.dumps(result), encoding="utf-8")
    return path
