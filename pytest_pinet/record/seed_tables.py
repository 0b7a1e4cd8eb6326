"""The seeds' tables from a run's measurements: routing fairness per qdisc, Down/Up per target,
UDP packet rates per mode and thread count, and disk MiB/s per block size.

The seed compared qdiscs with two tables: per-stream goodput of a 10-stream download, and
download against upload at 100/250/500 Mbit/s and unlimited.  The same tables, from the
results file, end the terminal summary of every run that routed traffic.
"""

from __future__ import annotations

from typing import Any

from ..judge.fairness import jain_fairness


def _last_per_cell(rows: list[dict[str, Any]], duplex: str) -> dict[tuple[str, float, str], dict[str, Any]]:
    """The last measurement of each (qdisc, target, direction): a re-measure replaces the first."""
    cells: dict[tuple[str, float, str], dict[str, Any]] = {}
    for row in rows:
        context = row.get("context", {})
        if context.get("scenario") != "routing" or context.get("duplex") != duplex:
            continue
        key = (
            str(context.get("qdisc", "")),
            float(context.get("rate_target_mbps") or 0),
            str(context.get("direction")),
        )
        cells[key] = row
    return cells


def _ms(value: Any) -> str:
    return f"{float(value):.1f}" if isinstance(value, int | float) else "-"


def latency_cells(row: dict[str, Any]) -> str:
    """Idle RTT median, RTT under load p50/p99 and probe loss of a row, or why there are none."""
    latency = (row.get("detail") or {}).get("latency")
    if not latency:
        return "latency not probed"
    if latency.get("not_measured"):
        return f"latency not measured: {latency['not_measured']}"
    idle, load = latency.get("idle") or {}, latency.get("load") or {}
    loss = load.get("loss_pct")
    lost = "-" if loss is None else f"{loss:.1f}"
    return (
        f"idle {_ms(idle.get('median_ms'))} ms, under load p50 {_ms(load.get('median_ms'))} "
        f"p99 {_ms(load.get('p99_ms'))} ms, loss {lost} % ({latency.get('tool')})"
    )


def routing_tables(rows: list[dict[str, Any]]) -> list[str]:
    """Lines of both tables; empty when the run routed nothing."""
    lines: list[str] = []
    download = _last_per_cell(rows, "half")
    if download:
        lines += [
            "routing: download through the board",
            f"  {'qdisc':12} {'Mbit/s':>8} {'Jain':>6} {'min/max':>8}  streams",
        ]
        for (qdisc, _target, _direction), row in sorted(download.items()):
            streams = [float(v) for v in (row.get("detail") or {}).get("per_stream_mbps") or []]
            jain = jain_fairness(streams)
            ratio = min(streams) / max(streams) if streams and max(streams) > 0 else None
            lines.append(
                f"  {qdisc:12} {float(row['goodput_mbps']):8.1f} "
                f"{'-' if jain is None else f'{jain:.3f}':>6} {'-' if ratio is None else f'{ratio:.2f}':>8}  "
                + " ".join(f"{v:.0f}" for v in streams)
            )
    full = _last_per_cell(rows, "full")
    if full:
        qdiscs = sorted({q for q, _t, _d in full})
        targets = sorted({t for _q, t, _d in full}, key=lambda t: (t == 0, t))
        lines.append("routing: download while the LAN peer uploads (Down / Up actual, Mbit/s)")
        lines.append(f"  {'upload':>9} " + " ".join(f"{q:>17}" for q in qdiscs))
        for target in targets:
            cells = []
            for qdisc in qdiscs:
                down = full.get((qdisc, target, "download"))
                up = full.get((qdisc, target, "upload"))
                cells.append(
                    f"{float(down['goodput_mbps']):8.1f}/{float(up['goodput_mbps']):<8.1f}"
                    if down and up
                    else f"{'-':>17}"
                )
            lines.append(f"  {f'{target:g}' if target else 'unlimited':>9} " + " ".join(cells))
    return lines


def routing_latency_table(rows: list[dict[str, Any]]) -> list[str]:
    """Round-trip time through the board per qdisc and upload target: idle, under load p50/p99."""
    lines: list[str] = []
    download = _last_per_cell(rows, "half")
    if download:
        lines.append("routing: round-trip time through the board, idle and under the download")
        lines += [f"  {qdisc:12} {latency_cells(row)}" for (qdisc, _t, _d), row in sorted(download.items())]
    full = _last_per_cell(rows, "full")
    if full:
        lines.append("routing: round-trip time while the LAN peer uploads")
        for (qdisc, target, direction), row in sorted(full.items()):
            if direction == "download":
                upload = f"{target:g}" if target else "unlimited"
                lines.append(f"  {qdisc:12} up {upload:>9}  {latency_cells(row)}")
    return lines


def queue_cells(row: dict[str, Any]) -> str:
    """The deepest backlog sampled and the qdisc drops over the run, or why a host reports
    none (a BSD has no qdisc): never a 0 that was not counted."""
    latency = (row.get("detail") or {}).get("latency") or {}
    if latency.get("backlog_not_reported"):
        return f"queue not reported: {latency['backlog_not_reported']}"
    backlog = [b for b in latency.get("backlog") or () if isinstance(b.get("bytes"), int)]
    deepest = max(backlog, key=lambda b: b["bytes"]) if backlog else None
    cells = [
        f"queue max {deepest['bytes'] / 1000:.0f} kB {deepest['packets']} p"
        if deepest
        else "queue not sampled"
    ]
    drops = [q.get("dropped") for q in (row.get("detail") or {}).get("qdisc") or ()]
    if drops and all(isinstance(d, int) for d in drops):
        cells.append(f"qdisc drops {sum(drops)}")
    return ", ".join(cells)


def link_latency_table(rows: list[dict[str, Any]]) -> list[str]:
    """Round-trip time across each link test's link, idle and under its load, with the queue
    that explains it (the last attempt of each test and direction)."""
    cells: dict[tuple[str, str], dict[str, Any]] = {}
    for row in rows:
        context = row.get("context", {})
        if context.get("scenario") == "routing" or not (row.get("detail") or {}).get("latency"):
            continue
        test = str(row.get("test_id", "")).split("::")[-1].split("#")[0]
        cells[(test, f"{context.get('direction')} {context.get('duplex')}")] = row
    if not cells:
        return []
    lines = ["links: round-trip time across the link, idle and under the test's load"]
    for (test, where), row in sorted(cells.items()):
        lines.append(f"  {test[:48]:48} {where:18} {latency_cells(row)}; {queue_cells(row)}")
    return lines


def udp_table(rows: list[dict[str, Any]]) -> list[str]:
    """The UDP sweep: per OS, mode and path, sent and received rate and CPU per thread count
    (the seed compares one board under Linux, QNX, FreeBSD and NetBSD)."""
    udp = [r for r in rows if str(r.get("context", {}).get("scenario", "")).startswith("udp-")]
    if not udp:
        return []
    lines = [
        "udp: packet rates (1472-byte payload; received = what the receiver's kernel counted)",
        f"  {'os':20} {'mode':9} {'path':9} {'threads':>7} {'sent pps':>9} {'recv pps':>9} "
        f"{'recv Mbit/s':>11} {'loss %':>7} {'gen CPU %':>9} {'sys busy %':>10}",
    ]
    for row in udp:
        c, e = row["context"], row.get("detail") or {}

        def num(key: str, fmt: str, e: dict[str, Any] = e) -> str:
            value = e.get(key)
            return format(value, fmt) if isinstance(value, int | float) else "-"

        lines.append(
            f"  {str(c.get('os') or '?')[:20]:20} {c['scenario'][4:]:9} {c['link']:9} {c['streams']:>7} "
            f"{num('sent_pps', '9.0f')} {num('received_pps', '9.0f')} {float(row['goodput_mbps']):11.1f} "
            f"{num('loss_pct', '7.1f')} "
            f"{num('generator_cpu_pct', '9.0f')} {num('system_busy_pct', '10.0f')}"
        )
    return lines


def storage_table(rows: list[dict[str, Any]]) -> list[str]:
    """The seed's disk table: MiB/s per block size (rows) and filesystem x write/read (columns)."""
    cells: dict[tuple[int, str, str], float] = {}
    for row in rows:
        c = row.get("context", {})
        if c.get("scenario") == "storage":
            mib = (row.get("detail") or {}).get("mib_per_s")
            if isinstance(mib, int | float):
                cells[(int(c["block_bytes"]), str(c["filesystem"]), str(c["direction"]))] = float(mib)
    if not cells:
        return []
    columns = sorted({(fs, d) for _b, fs, d in cells}, key=lambda k: (k[0], k[1] != "write"))
    lines = [
        "storage: MiB/s per block size (write fsynced; read after dropping caches)",
        f"  {'block':>8} " + " ".join(f"{fs + ' ' + d:>11}" for fs, d in columns),
    ]
    for block in sorted({b for b, _fs, _d in cells}):
        values = [cells.get((block, fs, d)) for fs, d in columns]
        lines.append(
            f"  {block:>8} " + " ".join(f"{v:11.1f}" if v is not None else f"{'-':>11}" for v in values)
        )
    return lines
