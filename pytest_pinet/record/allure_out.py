"""Allure output derived from Measurements: labels, attachments, metrics, run-level files.

allure-pytest writes the test results; this module adds what it cannot know: labels from
the lab's facts (board, kernel, OS, adapter) so trends can be filtered across them,
attachments a lab engineer reads (per-stream table, per-second chart, IRQ and CPU tables),
Allure 3 performance metrics (Mbit/s per context, one value per context per run, so the
report shows throughput trends), and the run-level environment, executor and categories
files, written once by the xdist controller.
"""

from __future__ import annotations

import json
import os
import re
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..judge.detection import DetectionPower
from ..model import Measurement
from ..redaction import mask, mask_data
from .metric_sets import context_label, perf_entry, samples, system_of
from .plots import png_of

CATEGORIES = [
    # New and persisting regressions apart (judge/verdict.py words them so): what broke
    # tonight first, then what is still red from earlier nights until someone accepts it.
    {
        "name": "Regression against baseline, new tonight",
        "matchedStatuses": ["failed"],
        "messageRegex": "(?s).*regression against baseline \\(new tonight\\).*",
    },
    {
        "name": "Regression against baseline, persisting (not accepted)",
        "matchedStatuses": ["failed"],
        "messageRegex": "(?s).*regression against baseline \\(persisting\\).*",
    },
    {  # a lab's own verdict hook may word a regression without saying which
        "name": "Regression against baseline",
        "matchedStatuses": ["failed"],
        "messageRegex": "(?s).*regression against baseline.*",
    },
    {"name": "Below threshold", "matchedStatuses": ["failed"], "messageRegex": "(?s).*below threshold.*"},
    {
        "name": "Undecided (interval holds the line)",
        "matchedStatuses": ["skipped"],
        "messageRegex": "(?s).*undecided: .*",
    },
    {"name": "Lab fault", "matchedStatuses": ["broken", "failed"], "messageRegex": "(?s).*lab fault.*"},
    {
        "name": "Unsupported on this board",
        "matchedStatuses": ["skipped"],
        "messageRegex": "(?s).*unsupported.*",
    },
]


# Labels already on a test's result, by test id: a test that measures several times (both
# directions, a sweep, a second attempt) carries each label once, and its tree position is
# the first measurement's.
_LABELLED: dict[str, set[str]] = {}


def _running(test_id: str) -> str:
    """The test whose result is being written: pytest names it in PYTEST_CURRENT_TEST (a
    measurement's own test id may be anything its maker chose)."""
    current = os.environ.get("PYTEST_CURRENT_TEST", "")
    return current.rsplit(" ", 1)[0] if current else test_id


def _label_once(test_id: str, name: str, value: str) -> None:
    import allure

    done = _LABELLED.setdefault(_running(test_id), set())
    if name not in done:
        done.add(name)
        allure.dynamic.label(name, value)


def label_measurement(measurement: Measurement) -> None:
    """Labels and links on the running test's Allure result (no-op without allure-pytest)."""
    try:
        import allure
    except ImportError:
        return
    c = measurement.context
    test = measurement.test_id
    if "epic" in _LABELLED.get(_running(test), set()):
        return  # labelled by an earlier measurement of this test
    # Board, adapter and scenario are parameters: they keep one history per board and adapter
    # when several labs report into one place. Measured values never are.
    for name, value in (("board", c.board), ("adapter", c.adapter), ("scenario", c.scenario)):
        allure.dynamic.parameter(name, value)
    if c.image:
        allure.dynamic.parameter("image", c.image)
    if c.limited_by:  # what its path can carry, and which part says so (excluded: not an identity)
        allure.dynamic.parameter(
            "path limit", f"{measurement.limit_mbps:.1f} Mbit/s, set by the {c.limited_by}", excluded=True
        )
    # The report's tree: board, then what it ran (image, else kernel), then adapter or link,
    # then suite (allurerc groupBy).
    for name, value in (
        ("epic", "network regression"),
        ("feature", c.scenario),
        ("story", f"{c.duplex} duplex"),
        ("system", system_of(measurement)),
        ("link", c.adapter or c.link),
        ("suite", c.scenario.split("-")[0] if c.scenario.startswith("udp") else c.scenario),
        ("board", c.board),
        ("image", c.image),
        ("kernel", c.kernel),
        ("os", c.os),
        ("adapter", c.adapter),
        ("driver", c.driver),
        ("lab", c.lab),
    ):
        if value:
            _label_once(test, name, value)
    for name, value in (("board", c.board), ("kernel", c.kernel), ("os", c.os), ("adapter", c.adapter)):
        if value:
            allure.dynamic.tag(f"{name}:{value}")


def figure_text(measurement: Measurement) -> str:
    """The measured figure as a test's title starts: "941.2 Mbit/s", "81,204 frames/s"."""
    detail = measurement.detail
    if detail.kind == "udp":
        return f"{detail.received_pps:,.0f} frames/s"
    if detail.kind == "disk":
        return f"{detail.mib_per_s * 1.048576:.1f} MB/s"
    return f"{measurement.goodput_mbps:.1f} Mbit/s"


def figures_title(measurements: Sequence[Measurement]) -> str:
    """A test's figures as its title starts: one or two ("941.2 Mbit/s / 939.8 Mbit/s"), or
    their count and range for a sweep ("38 figures, 0.1-39.2 MB/s")."""
    texts = [figure_text(m) for m in measurements]
    if len(texts) <= 2:
        return " / ".join(texts)
    numbers = [float(t.split()[0].replace(",", "")) for t in texts]
    unit = texts[0].split(" ", 1)[1]
    return f"{len(texts)} figures, {min(numbers):,.1f}-{max(numbers):,.1f} {unit}"


def label_test(test_id: str, board: str, system: str | None) -> None:
    """Board and system labels of a test before it measures: one skipped as unsupported
    still sits under its board (and image) in the report's tree."""
    try:
        import allure  # noqa: F401
    except ImportError:
        return
    _label_once(test_id, "board", board)
    if system:
        _label_once(test_id, "system", system)


def label_rule(test_id: str, rule_id: str) -> None:
    """The threshold rule that judged the test's figures, as a parameter of its result (so the
    report says which floor applied) and a tag to filter by."""
    import allure

    if rule_id and "threshold_rule" not in _LABELLED.get(_running(test_id), set()):
        _label_once(test_id, "threshold_rule", rule_id)
        allure.dynamic.tag(f"rule:{rule_id}")


def label_detection(test_id: str, context: str, power: DetectionPower | None) -> None:
    """What the context's accepted nights let one night catch, as a parameter of the test's
    result (kept out of its history id: the figure moves night by night), and the tag
    ``blind`` when the drop it catches is wider than its margin to the floor."""
    import allure

    if power is None:
        return
    allure.dynamic.parameter(f"can catch ({context})", power.explain(), excluded=True)
    if power.blind and "blind" not in _LABELLED.get(_running(test_id), set()):
        _LABELLED.setdefault(_running(test_id), set()).add("blind")
        allure.dynamic.tag("blind")


def title_test(title: str) -> None:
    """The running test's title in the report (no-op without allure-pytest)."""
    try:
        import allure
    except ImportError:
        return
    allure.dynamic.title(title)


def attach_measurement(measurement: Measurement) -> None:
    """Evidence attachments on the running test's Allure result."""
    try:
        import allure
    except ImportError:
        return
    label_measurement(measurement)  # once per test: later measurements of it add nothing
    name = measurement.context.direction
    allure.attach(
        json.dumps(mask_data(measurement.summary()), indent=2),
        f"{name}: measurement",
        allure.attachment_type.JSON,
    )
    allure.attach(
        mask(measurement.raw.get("client", "")), f"{name}: iperf3 client -J", allure.attachment_type.JSON
    )
    allure.attach(per_stream_table(measurement), f"{name}: per-stream goodput", allure.attachment_type.CSV)
    allure.attach(observer_table(measurement), f"{name}: interrupts and CPU", allure.attachment_type.TEXT)
    chart = per_second_chart(measurement)
    if chart:
        allure.attach(chart, f"{name}: goodput per second", allure.attachment_type.PNG)
    else:
        allure.attach(NO_CHARTS, f"{name}: goodput per second", allure.attachment_type.TEXT)


NO_CHARTS = (
    "no chart drawn: matplotlib is not installed (the charts extra: pytest-pinet[charts]); "
    "the figures are in the measurement attachment"
)


def per_stream_table(measurement: Measurement) -> str:
    """CSV of per-stream goodput with each stream's share."""
    total = sum(measurement.per_stream_mbps) or 1.0
    rows = ["stream,mbps,share_percent"]
    rows += [f"{n},{v:.2f},{100 * v / total:.1f}" for n, v in enumerate(measurement.per_stream_mbps, 1)]
    return "\n".join(rows) + "\n"


def observer_table(measurement: Measurement) -> str:
    """Per host: the link's interrupts per CPU and each core's busy and softirq share."""
    lines = []
    for obs in measurement.observations:
        lines.append(f"{obs.host}:{obs.interface}")
        for irq, counts in obs.interrupts_per_cpu.items():
            lines.append(f"  IRQ {irq}: " + " ".join(f"CPU{n}={c}" for n, c in enumerate(counts)))
        if not obs.interrupts_per_cpu:
            lines.append("  no interrupts named after the interface (virtual NIC or USB adapter on xhci)")
        for core in obs.cpu:
            lines.append(
                f"  {core.cpu:5} busy {core.busy:5.1f}%  softirq {core.softirq:5.1f}%  "
                f"irq {core.irq:4.1f}%  sys {core.system:5.1f}%  user {core.user:5.1f}%  "
                f"steal {core.steal:4.1f}%"
            )
        lines.append("  NIC: " + ", ".join(f"{k} {v}" for k, v in obs.nic.items()))
    return "\n".join(lines) + "\n"


def per_second_chart(measurement: Measurement) -> bytes | None:
    """PNG of goodput per second against the line-rate limit, and beside it (right axis) the
    RTT of every latency probe under load, where the run has them (None without matplotlib)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    figure, axes = plt.subplots(figsize=(7, 3), dpi=100)
    seconds = list(range(1, len(measurement.interval_mbps) + 1))
    axes.plot(seconds, measurement.interval_mbps, marker="o", linewidth=1, label="goodput")
    axes.axhline(measurement.limit_mbps, color="red", linestyle="--", linewidth=1, label="line-rate limit")
    axes.set_xlabel("second (after warm-up)")
    axes.set_ylabel("Mbit/s")
    axes.set_title(
        f"{measurement.context.board} {measurement.context.direction} ({measurement.context.profile})"
    )
    axes.legend(loc="lower right")
    latency = measurement.tcp.latency if measurement.tcp else None
    if latency is not None and latency.load_rtt_ms and latency.interval_ms:
        # Probes are isochronous: the n-th left n intervals after the warm-up ended.
        step = latency.interval_ms / 1000.0
        points = [(1 + i * step, rtt) for i, rtt in enumerate(latency.load_rtt_ms) if rtt is not None]
        rtt_axes = axes.twinx()
        rtt_axes.plot(
            [t for t, _ in points], [r for _, r in points], color="tab:orange", linewidth=0.8,
            alpha=0.8, label=f"RTT under load ({latency.tool})",
        )  # fmt: skip
        rtt_axes.set_ylabel("RTT ms")
        rtt_axes.set_ylim(bottom=0)
        rtt_axes.legend(loc="upper right")
    return png_of(figure, right=0.9 if latency is not None and latency.load_rtt_ms else 0.97)


def write_metric(alluredir: Path, measurement: Measurement) -> Path:
    """One Allure 3 performance metric file (``*-perf.json``) for this measurement: a sample
    per metric set it has a figure for (see :mod:`.metric_sets`).  The file's name is shown
    as each sample's source on the metrics page, so it names the context."""
    alluredir.mkdir(parents=True, exist_ok=True)
    readable = re.sub(r"[^A-Za-z0-9._-]+", "-", context_label(measurement)).strip("-")[:120]
    path = alluredir / f"{readable}-{uuid.uuid4().hex[:8]}-perf.json"
    entries = [perf_entry(sample, measurement) for sample in samples(measurement)]
    path.write_text(json.dumps(entries), encoding="utf-8")
    return path


def write_run_files(alluredir: Path, environment: dict[str, str], executor: dict[str, Any]) -> None:
    """environment.properties, executor.json and categories.json (controller only, once)."""
    alluredir.mkdir(parents=True, exist_ok=True)
    # The boards and links the health check found unfit come first: they explain the rest.
    ordered = sorted(environment.items(), key=lambda kv: (not kv[0].startswith("unhealthy."), kv[0]))
    lines = [f"{k.replace(' ', '.')}={str(v).replace(chr(10), ' ')}" for k, v in ordered]
    (alluredir / "environment.properties").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (alluredir / "executor.json").write_text(json.dumps(executor, indent=2), encoding="utf-8")
    (alluredir / "categories.json").write_text(json.dumps(CATEGORIES, indent=2), encoding="utf-8")
