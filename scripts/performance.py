#!/usr/bin/env python3
"""The project's measured run times, kept as data and shown on one generated page.

Every figure (how long the main job, the test command or the unit tier took, on which
machine: CPU model and count, memory, kernel; at which commit) is one line of
``docs/performance.jsonl``; ``docs/performance.md`` is generated from it and never edited by
hand, so a new figure changes the data and the page, and nothing else (the README carries no
figure).

    python3 scripts/performance.py record main-job -- bash scripts/setup.sh && .venv/bin/pinet run
    python3 scripts/performance.py add test-command 1443 --note "fresh clone, final code"
    python3 scripts/performance.py add test-command 1443 --slowest-from ci.log   # and its slowest tests
    python3 scripts/performance.py render     # rewrite the page from the data
    python3 scripts/performance.py check      # exit 1 when the page is not the data's

``record`` runs the command after ``--`` through ``bash -c`` (so ``&&`` works), times it and
keeps the figure with the command's exit status; a failed run is kept too, and shown as
failed. Standard library only: the page is made before any venv exists.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "docs" / "performance.jsonl"
PAGE = ROOT / "docs" / "performance.md"
# What each figure is, and its budget where the project has one (minutes).
WHAT: dict[str, tuple[str, float | None]] = {
    "main-job": ("the main job (README's first command), QEMU images cached", 12.0),
    "main-job-uncached": ("the main job with the QEMU images built inside it", 16.0),
    "test-command": ("the test command (README's second command, what CI runs)", 27.0),
    "ci": ("CI's run of the test command on its own machine", 27.0),
    "unit-tier-one-core": ("pytest tests/unit on one core, nothing but the venv", 1.0),
}
# The history benchmark (pinet bench --history-only): a store of 10 labs x 365 nights, each
# command in its own process; budgets of issue 49 (2 s an answer, 1 s a night).
for _backend in ("sqlite", "postgresql"):
    WHAT |= {
        f"history-regressions-{_backend}": (f"pinet regressions, every lab ({_backend})", 2 / 60),
        f"history-regressions-one-lab-{_backend}": (f"pinet regressions --lab ({_backend})", 2 / 60),
        f"history-trends-one-lab-{_backend}": (f"pinet trends --lab ({_backend})", 2 / 60),
        f"history-morning-page-{_backend}": (f"one lab's morning page ({_backend})", 2 / 60),
        f"history-night-{_backend}": (f"one night stored, judged, standings kept ({_backend})", 1 / 60),
        f"history-first-look-{_backend}": (f"the first look after an upgrade ({_backend})", None),
    }

# The parts of those runs, and what the benchmarks measure, that the docs once quoted with a
# date: a doc now says what holds whatever the day and links here for the figures.
PARTS: dict[str, tuple[str, float | None]] = {
    "qemu-boot-usb-adapter": ("power on until the QEMU board's USB adapter appears", None),
    "qemu-guest-exec": ("one program started in the QEMU guest under TCG", None),
    "qemu-boot-to-ssh": (
        "the QEMU board's boot to SSH after power on under TCG, through labgrid (debian12-k6.1)",
        None,
    ),
    "qemu-udpgen-build": (
        "the UDP generator built on the emulated board in a job (before the images carried it)",
        None,
    ),
    "qemu-images-build": (
        "the QEMU board's three images built from the Debian sources, first run on a machine",
        None,
    ),
    "qemu-lab-up-cached": ("pinet lab up --board qemu, image cached, no boot check", None),
    "qemu-boot-to-ssh-debian13": (
        "the QEMU board's boot to SSH under TCG, through labgrid, debian13 image",
        None,
    ),
    "qemu-boot-to-ssh-debian12-k6.12": (
        "the QEMU board's boot to SSH under TCG, through labgrid, debian12-k6.12 image",
        None,
    ),
    "qemu-boot-kernel": ("the guest kernel's part of a QEMU boot to SSH (debian12-k6.1)", None),
    "qemu-boot-userspace": ("userspace's part of a QEMU boot, until SSH answers (debian12-k6.1)", None),
    "qemu-boot-board-setup": ("pinet-board-setup's run in a QEMU boot", None),
    "qemu-boot-ssh-service": ("ssh.service's start in a QEMU boot", None),
    "qemu-boot-to-ssh-masked-units": (
        "boot to SSH with 13 more units masked in the card (an experiment, not in the images)",
        None,
    ),
    "qemu-boot-to-ssh-mitigations-off": (
        "boot to SSH with mitigations=off on the guest's command line (tried, not used)",
        None,
    ),
    "qemu-guest-fork-exec-200": ("200 fork+exec of /bin/true in the QEMU guest (debian12-k6.1)", None),
    "qemu-guest-fork-exec-200-mitigations-off": (
        "200 fork+exec of /bin/true in the QEMU guest with mitigations=off",
        None,
    ),
    "qemu-console-login": ("serial-console login through ShellDriver after SSH answers", None),
    "qemu-lab-up-boot-check": (
        "pinet lab up --board qemu with the boot check (boot, power-cycle, off)",
        None,
    ),
    "qemu-boot-crng-init": ("power on until the guest kernel's crng init done", None),
    "qemu-boot-to-ssh-host-busy": (
        "the QEMU board's boot to SSH (debian12-k6.1) with both host cores kept busy",
        None,
    ),
    "main-job-pytest": ("the main job's pytest part on the two-board lab", None),
    "main-job-pytest-pi": ("the main job's pytest part on the namespace board pi", None),
    "main-job-pytest-qpi": ("the main job's pytest part on the QEMU board qpi", None),
    "bench-sensitivity-table": ("pinet bench's sensitivity table with the defaults", None),
    "bench-noise-only": ("pinet bench --noise-only at the default 200 trials per setting", None),
    "pytest-start-bare": (
        "a pytest start of two trivial tests, plain: pytest and xdist, pinet and the lab extra's plugins off",
        None,
    ),
    "pytest-start-bare-n2": (
        "a pytest start of two trivial tests, -n 2: pytest and xdist, pinet and the lab extra's plugins off",
        None,
    ),
    "pytest-start-wheel": (
        "a pytest start of two trivial tests, plain: pinet's plugin as pip install pytest-pinet leaves it",
        None,
    ),
    "pytest-start-wheel-n2": (
        "a pytest start of two trivial tests, -n 2: pinet's plugin as pip install pytest-pinet leaves it",
        None,
    ),
    "pytest-start-lab-extra": (
        "a pytest start of two trivial tests, plain: labgrid's and allure-pytest's plugins, pinet's off",
        None,
    ),
    "pytest-start-lab-extra-n2": (
        "a pytest start of two trivial tests, -n 2: labgrid's and allure-pytest's plugins, pinet's off",
        None,
    ),
    "pytest-start-wheel-lab-extra": (
        "a pytest start of two trivial tests, plain: pinet's plugin with the lab extra's, as a lab has it",
        None,
    ),
    "pytest-start-wheel-lab-extra-n2": (
        "a pytest start of two trivial tests, -n 2: pinet's plugin with the lab extra's, as a lab has it",
        None,
    ),
    "pytest-start-wheel-cost": (
        "what pinet's wheel adds to a plain pytest start (wheel over bare, per round)",
        0.1 / 60,
    ),
    "pytest-start-wheel-cost-n2": ("what pinet's wheel adds to a pytest start with -n 2", 0.1 / 60),
    "pytest-start-pinet-beside-extra": (
        "pinet's own share of a plain start beside the lab extra (wheel + extra over extra only)",
        0.1 / 60,
    ),
    "pytest-start-pinet-beside-extra-n2": (
        "pinet's own share of a start with -n 2 beside the lab extra",
        0.1 / 60,
    ),
    "pytest-start-extra-cost": (
        "what the lab extra's plugins add to a plain pytest start (extra only over bare)",
        None,
    ),
    "pytest-start-extra-cost-n2": ("what the lab extra's plugins add to a pytest start with -n 2", None),
    "bench-startup": (
        "pinet bench's start-up: lab up until both ends answer pinned SSH, facts gathered",
        10 / 60,
    ),
    "bench-overhead-per-test": (
        "pinet bench's overhead per test: JUnit wall time minus the iperf3 client's",
        0.5 / 60,
    ),
    "bench-adaptive-fixed": (
        "pinet bench's 6 half-duplex tests with the fixed -t 65 -O 5, suite wall time",
        None,
    ),
    "bench-adaptive": ("pinet bench's 6 half-duplex tests with adaptive duration, suite wall time", None),
    "bench-sensitivity-run": ("one run of pinet bench's sensitivity table, measured and judged", None),
    "ssh-command": ("one SSH command to a namespace lab host", None),
    "bench-full": ("pinet bench with the defaults", None),
    "bench-history-sqlite": ("pinet bench --history-only at full size, SQLite part", None),
    "bench-history-postgresql": ("pinet bench --history-only at full size, PostgreSQL part", None),
    "bench-noise-only-1000": ("pinet bench --noise-only --noise-trials 1000", None),
    "detection-power-blind": (
        "one context's detection power (judge.detection), a blind context, 30 accepted nights",
        None,
    ),
    "detection-power-1pct": ("one context's detection power at 1 % spread, 30 accepted nights", None),
    "detection-power-0.1pct": ("one context's detection power at 0.1 % spread, 30 accepted nights", None),
    "bench-noise-latency": ("the latency part of pinet bench --noise-only (200 trials per setting)", None),
}


def machine() -> str:
    """The machine a figure was taken on, as a reader compares two of them: CPU model and
    count, memory, kernel (``/proc``; what is unreadable is left out)."""
    model = ""
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("model name"):
                model = " ".join(line.split(":", 1)[1].split())
                break
        kib = next(
            int(line.split()[1])
            for line in Path("/proc/meminfo").read_text(encoding="utf-8").splitlines()
            if line.startswith("MemTotal:")
        )
        memory = f"{kib / 1024 / 1024:.0f} GiB"
    except (OSError, StopIteration, ValueError):
        memory = ""
    parts = [f"{model or 'CPU'} x{os.cpu_count()}", memory, f"Linux {os.uname().release}"]
    return ", ".join(part for part in parts if part)


def _commit() -> str:
    done = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False
    )
    return done.stdout.strip() or "unknown"


def load(path: Path = DATA) -> list[dict[str, object]]:
    """Every figure, oldest first; a line that is not a figure stops with its line number."""
    if not path.exists():
        return []
    entries = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            entry = json.loads(line)
            float(entry["seconds"])
            str(entry["what"])
        except (ValueError, KeyError, TypeError) as exc:
            raise SystemExit(f"{path}:{number}: not a figure ({exc})") from None
        entries.append(entry)
    return entries


def _minutes(seconds: float) -> str:
    if seconds < 1:  # a call's cost: milliseconds, so that 0.3 ms does not read as 0.00 s
        return f"{seconds * 1000:.1f} ms"
    if seconds < 60:  # a command's answer, not a job: its own unit, to the hundredth
        return f"{seconds:.2f} s"
    return f"{seconds / 60:.1f} min ({seconds:.0f} s)"


def render(entries: list[dict[str, object]]) -> str:
    """The page: per kind of run its latest figure, the median of its last five green runs
    against its budget, then every figure in the order measured."""
    lines = [
        "# Performance",
        "",
        "<!-- Generated by scripts/performance.py from docs/performance.jsonl: do not edit by hand. -->",
        "",
        "How long the project's own runs take, as measured. The machines are shared and noisy: read the",
        "medians, not one figure. Add a figure with `python3 scripts/performance.py record NAME -- COMMAND`",
        "(or `add NAME SECONDS --note ...` for one measured elsewhere); the page is regenerated.",
        "",
        "| run | latest | median of the last 5 green | budget | figures |",
        "|---|---|---|---|---|",
    ]
    runs = [kind for kind in dict.fromkeys([*WHAT, *(str(e["what"]) for e in entries)]) if kind not in PARTS]
    lines += _summary(entries, runs, WHAT)
    lines += [
        "",
        "## Parts of a run, and what the benchmarks measure",
        "",
        "| part | latest | median of the last 5 green | budget | figures |",
        "|---|---|---|---|---|",
    ]
    lines += _summary(entries, list(PARTS), PARTS)
    lines += _slowest_section(entries)
    lines += ["", "## What each run is", ""]
    lines += [f"- **{kind}**: {text}" for kind, (text, _) in (WHAT | PARTS).items()]
    lines += [
        "",
        "## Every figure",
        "",
        "| date (UTC) | run | time | CPUs | commit | status | machine | note |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for e in entries:
        status = "ok" if e.get("status", 0) == 0 else f"exit {e.get('status')}"
        took = _minutes(float(str(e["seconds"])))
        note = str(e.get("note", "")).replace("|", "/")
        lines.append(
            f"| {e.get('date', '')} | {e['what']} | {took} | {e.get('cpus', '')} "
            f"| {e.get('commit', '')} | {status} | {str(e.get('machine', '')).replace('|', '/')} | {note} |"
        )
    return "\n".join(lines) + "\n"


def _summary(
    entries: list[dict[str, object]], kinds: list[str], described: dict[str, tuple[str, float | None]]
) -> list[str]:
    """One row per kind that has figures: its latest, the median of its last five green
    figures, its budget (minutes) and how many figures it has."""
    rows = []
    for kind in kinds:
        mine = [e for e in entries if e["what"] == kind]
        if not mine:
            continue
        green = [float(str(e["seconds"])) for e in mine if e.get("status", 0) == 0][-5:]
        budget = described.get(kind, ("", None))[1]
        latest = mine[-1]
        over = budget is not None and float(str(latest["seconds"])) > budget * 60
        rows.append(
            f"| {kind} | {_minutes(float(str(latest['seconds'])))}"
            f"{'' if latest.get('status', 0) == 0 else ' FAILED'}{' OVER' if over else ''} "
            f"| {_minutes(statistics.median(green)) if green else '-'} "
            f"| {_minutes(budget * 60) if budget else '-'} | {len(mine)} |"
        )
    return rows


# The summary the repository's test runs print last (tests/slowest_tests.py); a test of this
# script feeds it that module's own output.
SLOWEST = re.compile(
    r"slowest tests \(setup \+ call \+ teardown\): "
    r"the (\d+) slowest ([0-9.]+) s of ([0-9.]+) s for (\d+) tests"
)
SLOWEST_ROW = re.compile(r"^\s*([0-9.]+) s  (\S.*?)(?:  \(cpu ([0-9.]+) s\))?$")


def slowest_from(log: str, source: str) -> dict[str, object]:
    """The slowest tests and the totals a test run printed last in ``log`` (a test that runs
    pytest inside may quote an inner run's summary earlier); a SystemExit naming ``source``
    when it printed none (a run that ended before its summary)."""
    lines = log.splitlines()
    kept: dict[str, object] | None = None
    for index, line in enumerate(lines):
        found = SLOWEST.match(line.strip("= "))
        if found is None:
            continue
        shown = int(found.group(1))
        rows = [SLOWEST_ROW.match(row) for row in lines[index + 1 : index + 1 + shown]]
        if all(rows):
            kept = {
                "slowest": [
                    [float(row.group(1)), row.group(2), *([float(row.group(3))] if row.group(3) else [])]
                    for row in rows
                    if row
                ],
                "tests_seconds": float(found.group(3)),
                "tests": int(found.group(4)),
            }
    if kept is None:
        raise SystemExit(f"{source}: no 'slowest tests' summary in it (did the run reach its end?)")
    return kept


def _slowest_section(entries: list[dict[str, object]]) -> list[str]:
    """Per kind of run, the slowest tests of its latest figure that kept them."""
    lines: list[str] = []
    for kind in dict.fromkeys(str(e["what"]) for e in entries if e.get("slowest")):
        latest = [e for e in entries if e["what"] == kind and e.get("slowest")][-1]
        slowest = [(float(r[0]), str(r[1]), r[2:]) for r in latest["slowest"]]  # type: ignore[attr-defined]
        lines += [
            "",
            f"### {kind} at {latest.get('commit', '')} ({latest.get('date', '')})",
            "",
            f"The {len(slowest)} slowest tests took {_minutes(sum(s for s, _, _ in slowest))} of the "
            f"{_minutes(float(str(latest['tests_seconds'])))} its {latest['tests']} tests took.",
            "",
            "CPU: what the test's process and the processes it waited for used (a lab's daemons",
            "are not counted): near its time, it computes; far below, it waits.",
            "",
            "| test | time | CPU |",
            "|---|---|---|",
        ]
        lines += [
            f"| `{test}` | {_minutes(seconds)} | {_minutes(float(cpu[0])) if cpu else '-'} |"
            for seconds, test, cpu in slowest
        ]
    return ["", "## The slowest tests", *lines] if lines else []


def _append(entry: dict[str, object]) -> None:
    with DATA.open("a", encoding="utf-8") as out:
        out.write(json.dumps(entry, sort_keys=True) + "\n")
    PAGE.write_text(render(load()), encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="scripts/performance.py", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="action", required=True)
    rec = sub.add_parser("record", help="run a command (after --), time it, keep the figure")
    rec.add_argument("what")
    rec.add_argument("--note", default="")
    add = sub.add_parser("add", help="keep a figure measured elsewhere")
    add.add_argument("what")
    add.add_argument("seconds", type=float)
    add.add_argument("--note", default="")
    add.add_argument("--date", default=None, help="YYYY-MM-DD (default today)")
    add.add_argument("--commit", default=None)
    add.add_argument("--cpus", type=int, default=None)
    add.add_argument("--status", type=int, default=0)
    add.add_argument("--machine", default=None, help="where it ran (default: this machine)")
    add.add_argument("--slowest-from", default=None, help="a test run's log: keep its slowest tests too")
    sub.add_parser("render", help="rewrite the page from the data")
    sub.add_parser("check", help="exit 1 when the page is not what the data renders")
    argv = sys.argv[1:] if argv is None else argv
    command = argv[argv.index("--") + 1 :] if "--" in argv else []
    args = parser.parse_args(argv[: argv.index("--")] if "--" in argv else argv)
    if args.action == "render":
        PAGE.write_text(render(load()), encoding="utf-8")
        return 0
    if args.action == "check":
        if not PAGE.exists() or PAGE.read_text(encoding="utf-8") != render(load()):
            print(
                f"{PAGE} is not what {DATA} renders: run python3 scripts/performance.py render",
                file=sys.stderr,
            )
            return 1
        return 0
    entry: dict[str, object] = {
        "what": args.what,
        "cpus": os.cpu_count(),
        "commit": _commit(),
        "machine": getattr(args, "machine", None) or machine(),
    }
    if args.action == "record":
        if not command:
            parser.error("record needs a command after --")
        started = time.monotonic()
        status = subprocess.run(["bash", "-c", " ".join(command)], check=False).returncode
        entry.update(seconds=round(time.monotonic() - started, 1), status=status, note=args.note)
    else:
        entry.update(seconds=args.seconds, status=args.status, note=args.note)
        entry.update({k: v for k, v in (("commit", args.commit), ("cpus", args.cpus)) if v is not None})
        if args.slowest_from:
            log = Path(args.slowest_from).read_text(encoding="utf-8", errors="replace")
            entry.update(slowest_from(log, args.slowest_from))
    entry["date"] = args.date if getattr(args, "date", None) else time.strftime("%Y-%m-%d", time.gmtime())
    _append(entry)
    print(f"{args.what}: {_minutes(float(str(entry['seconds'])))} (status {entry['status']}); {PAGE}")
    return int(str(entry["status"])) if args.action == "record" else 0


if __name__ == "__main__":
    sys.exit(main())
