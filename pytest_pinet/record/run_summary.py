"""The end-of-run summary as lines of text: measurements, the hosts' load, the boards, faults.

Built from the run's results file, so it covers every xdist worker's measurements, and free
of pytest, so any command can print it.
"""

from __future__ import annotations

from typing import Any

from ..errors import doc
from ..judge.path_limit import path_limit

# A machine's steal worth a word on the load line (percent of all its cores' time): below it,
# the hypervisor's share is the noise of any virtual machine.
STEAL_SHOWN = 1.0


def latest_health(facts: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The last ``health`` fact of each subject (a re-check after a power-cycle replaces the
    earlier one), unhealthy subjects first."""
    last: dict[str, dict[str, Any]] = {}
    for fact in facts:
        if fact.get("kind") == "health":
            last.pop(str(fact.get("subject")), None)
            last[str(fact.get("subject"))] = fact
    return dict(sorted(last.items(), key=lambda item: bool(item[1].get("healthy"))))


def failed_checks(fact: dict[str, Any]) -> list[str]:
    """``pc eth0 speed: expected 1000 Mbit/s, found 100 Mbit/s (link-negotiation)`` per failed check."""
    return [
        f"{f.get('host')} {f.get('check')}: expected {f.get('expected')}, found {f.get('found')} "
        f"({f.get('category')})"
        for f in fact.get("findings") or []
        if isinstance(f, dict) and f.get("verdict") == "FAULT"
    ]


def left_out(facts: list[dict[str, Any]]) -> dict[str, str]:
    """What the night left out of service (record/board_service.py), by name (``pi5``, ``pi5
    link eth``), each with its line; every worker that met one said so, and what a passing
    check returned is not left out."""
    back = {(f.get("board"), f.get("subject")) for f in facts if f.get("kind") == "back-in-service"}
    found = {
        str(f.get("name")): str(f.get("line"))
        for f in facts
        if f.get("kind") == "out-of-service" and (f.get("board"), f.get("subject")) not in back
    }
    return dict(sorted(found.items()))


def health_lines(facts: list[dict[str, Any]]) -> list[str]:
    """The boards and links the health check found unfit first, each with its failed checks
    (their tests ended as lab faults, unmeasured), then the healthy ones in one line."""
    latest = latest_health(facts)
    lines = []
    for subject, fact in latest.items():
        if not fact.get("healthy"):
            lines.append(f"UNHEALTHY {subject}: not measured ({fact.get('action', 'none')})")
            lines += [f"  {check}" for check in failed_checks(fact)]
    healthy = [
        subject + (" (cured)" if fact.get("cured") else "")
        for subject, fact in latest.items()
        if fact.get("healthy")
    ]
    if healthy:
        lines.append(f"healthy: {', '.join(healthy)}")
    return lines


def lab_fault_lines(facts: list[dict[str, Any]]) -> list[str]:
    """The run's lab faults: one line each, then the count by category and outcome."""
    faults = [fact for fact in facts if fact.get("kind") == "lab-fault"]
    if not faults:
        return []
    lines = []
    for fault in faults:
        test = str(fault.get("test_id", "")).rsplit("::", 1)[-1]
        outcome = "recovered" if fault.get("recovered") else "NOT recovered"
        lines.append(f"lab fault: {fault.get('category')} on {fault.get('host') or '?'} in {test}: {outcome}")
    recovered = sum(1 for fault in faults if fault.get("recovered"))
    categories = sorted({str(fault.get("category")) for fault in faults})
    lines.append(
        f"lab faults: {len(faults)} ({', '.join(categories)}); recovered by power-cycle and retry: "
        f"{recovered}; these are the lab's, not regressions of the boards"
    )
    return lines


def no_baseline_lines(facts: list[dict[str, Any]], store: str, needed: int) -> list[str]:
    """Said once: how many contexts had no baseline yet, and where baselines come from."""
    contexts = {str(fact.get("context")) for fact in facts if fact.get("kind") == "no-baseline"}
    if not contexts:
        return []
    return [
        f"pinet: {len(contexts)} context{'s' if len(contexts) != 1 else ''} had no baseline yet (fewer than "
        f"{needed} earlier results in {store}): judged by thresholds only. Baselines come from that "
        f"store's history; keep it between runs ({doc('nightly.md')})."
    ]


def cannot_detect_lines(facts: list[dict[str, Any]]) -> list[str]:
    """``--pinet-detect``: the contexts blind for one night to the drop asked, and why."""
    found = {str(f.get("context")): f for f in facts if f.get("kind") == "cannot-detect"}
    if not found:
        return []
    detect = next(iter(found.values())).get("detect")
    lines = [
        f"pinet: {len(found)} context{'s' if len(found) != 1 else ''} cannot catch a {detect} % drop in "
        f"one night (--pinet-detect; {doc('results-and-reports.md')}, what a context can catch):"
    ]
    return lines + [
        f"  {fact.get('test_id')} [{key}]: {fact.get('why')}" for key, fact in sorted(found.items())
    ]


def _ended(row: dict[str, Any]) -> str:
    """How long a run measured and what ended it: "7 s settled", "20 s fixed"."""
    seconds = row.get("measured_s")
    return f"{seconds:.0f} s {row.get('ended_by', 'fixed')}" if isinstance(seconds, int | float) else ""


def measurement_lines(rows: list[dict[str, Any]]) -> list[str]:
    """Table of goodputs, the hosts' load during each run, and the boards' facts."""
    lines = []
    lines.append(
        f"{'test':34} {'profile':20} {'direction':12} {'duplex':6} {'Mbit/s':>8} {'limit':>7} {'set by':11} "
        f"{'retr':>6} {'measured':>14}"
    )
    seen_observations = set()
    load_lines = []
    boards = {}
    limits: dict[tuple[str, str], str] = {}
    for row in rows:
        context = row.get("context", {})
        name = str(row["test_id"]).rsplit("::", 1)[-1].split("[", 1)[0]
        retr = (row.get("detail") or {}).get("retransmits")
        part = str(context.get("limited_by") or "-")
        lines.append(
            f"{name[:34]:34} {context.get('profile', ''):20} {context.get('direction', ''):12} "
            f"{context.get('duplex', ''):6} {float(row['goodput_mbps']):8.1f} "
            f"{float(row['limit_mbps']):7.1f} {part:11} {'-' if retr is None else retr:>6} {_ended(row):>14}"
        )
        if context.get("limited_by"):
            limits.setdefault((str(context.get("board", "")), part), path_limit(context).why)
        run_key = str(row["test_id"]).split("#", 1)[0]
        if run_key not in seen_observations:
            seen_observations.add(run_key)
            for obs in row.get("observations") or []:
                cores = [c for c in obs.get("cpu", []) if c["cpu"] != "cpu"]
                busiest = max(cores, key=lambda c: c["busy"]) if cores else None
                whole: dict[str, Any] = next((c for c in obs.get("cpu", []) if c["cpu"] == "cpu"), {})
                steal = float(whole.get("steal", 0.0))  # older rows have none: nothing to say
                nic = obs.get("nic", {})
                load_lines.append(
                    f"  {run_key.rsplit('::', 1)[-1][:52]:52} {obs['host']}:{obs['interface']:6} "
                    + (
                        f"{busiest['cpu']} {busiest['busy']:3.0f}% (softirq {busiest['softirq']:2.0f}%) "
                        if busiest
                        else ""
                    )
                    + (f"steal {steal:.0f}% " if steal >= STEAL_SHOWN else "")
                    + f"rx {nic.get('rx_packets', 0):>8} tx {nic.get('tx_packets', 0):>8} pkts, "
                    + f"drops {nic.get('rx_dropped', 0) + nic.get('tx_dropped', 0)}"
                )
        facts = row.get("facts")
        if isinstance(facts, dict) and isinstance(facts.get("board"), dict):
            board = facts["board"]
            boards[board.get("host")] = (
                f"board {board.get('host')}: {board.get('os_name') or '?'}, kernel {board.get('kernel')}, "
                f"{board.get('cpus')} CPUs, {board.get('iperf3_version') or 'iperf3 ?'}"
            )
    if load_lines:
        lines.append("load during the runs (busiest core, the machine's steal, NIC packets):")
        lines += load_lines
    lines += boards.values()
    lines += [
        f"board {board}: paths limited by {part}, e.g. {why}" for (board, part), why in sorted(limits.items())
    ]
    return lines
