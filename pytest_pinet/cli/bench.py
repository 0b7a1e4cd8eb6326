"""``pinet bench``: start-up, fidelity, sensitivity, overhead and adaptive-duration figures on a
bench lab of its own."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from ..errors import ConfigError

# Reaches a lab through labgrid: without the lab extra it stops at once, naming the extra.
NEEDS_LAB = True


def register(sub: Any) -> None:
    """``pinet bench``."""
    bench = sub.add_parser(
        "bench",
        help="start-up, fidelity, sensitivity, overhead and adaptive-duration figures (JSON and a table)",
    )
    bench.add_argument("--startups", type=int, default=3)
    bench.add_argument(
        "--pytest-startups",
        type=int,
        default=5,
        help="pytest starts per plugin set for the start-up cost of pinet installed (0: skip; no lab needed)",
    )
    bench.add_argument("--fidelity-runs", type=int, default=3, help="runs per direction")
    bench.add_argument(
        "--overhead-repeats", type=int, default=3, help="tests per direction in the overhead batch"
    )
    bench.add_argument("--duration", type=int, default=20, help="seconds per fidelity run")
    bench.add_argument(
        "--adaptive-repeats",
        type=int,
        default=2,
        help="tests per direction in the fixed and adaptive batches (0 = skip that figure)",
    )
    bench.add_argument("--fixed-duration", type=int, default=65, help="seconds of the fixed method (-t)")
    bench.add_argument(
        "--sensitivity-runs",
        type=int,
        default=10,
        help="clean runs, and runs per planted degradation (0.5, 1, 2, 3 %%), judged (0 = skip)",
    )
    bench.add_argument(
        "--sensitivity-history", type=int, default=10, help="clean runs that make the baseline history"
    )
    bench.add_argument("--sensitivity-duration", type=int, default=6, help="seconds per sensitivity run")
    bench.add_argument(
        "--noise-trials",
        type=int,
        default=200,
        help="simulated trials per setting of the sensitivity under noise (0 = skip; no lab needed)",
    )
    bench.add_argument(
        "--noise-only",
        action="store_true",
        help="only the sensitivity under noise, goodput and latency (no lab, about two minutes)",
    )
    bench.add_argument(
        "--history-only",
        action="store_true",
        help="only the history benchmark: a store of many labs' nights, its commands timed (no lab)",
    )
    bench.add_argument(
        "--history-nights", type=int, default=365, help="nights of each lab in the history store"
    )
    bench.add_argument("--history-labs", type=int, default=10, help="labs sharing the history store")
    bench.add_argument("--history-steps", type=int, default=3, help="sizes the store is timed at as it grows")
    bench.add_argument(
        "--history-repeats", type=int, default=3, help="runs of each command per size (median)"
    )
    bench.add_argument(
        "--history-backends",
        default="sqlite,postgresql",
        help="stores to build: sqlite (a file in --history-dir), postgresql (a throwaway server; root)",
    )
    bench.add_argument(
        "--history-dir", default=None, help="where the SQLite store is built (default: a temporary one)"
    )
    bench.add_argument(
        "--month-only",
        action="store_true",
        help="only a month of nights on a namespace board of its own: clean, every cable slower, "
        "clean again, judged by the suite (root; about ten minutes)",
    )
    bench.add_argument(
        "--month-spread", type=float, default=1.0, help="the cables' run-to-run spread, percent"
    )
    bench.add_argument(
        "--month-percent", type=float, default=3.0, help="how much slower the degraded nights are"
    )
    bench.set_defaults(func=cmd_bench)


def cmd_bench(args: argparse.Namespace) -> int:
    """Start-up, fidelity, overhead and adaptive-duration figures on a bench lab of its own."""
    from ..bench.all_figures import format_table, run_bench, to_json

    if args.history_only:
        return _history(args)
    if args.month_only:
        return _month(args)
    noise = _noise(args.noise_trials) if args.noise_trials > 0 else None
    if args.noise_only:
        if noise is None:
            raise ConfigError("--noise-only", "needs --noise-trials above 0")
        print(json.dumps({"noise": noise}, indent=2))
        print("\n".join(_noise_lines(noise)))
        return 0
    data = run_bench(
        args.startups,
        args.fidelity_runs,
        args.overhead_repeats,
        args.duration,
        args.adaptive_repeats,
        args.fixed_duration,
        args.sensitivity_runs,
        args.sensitivity_history,
        args.sensitivity_duration,
        pytest_startups=args.pytest_startups,
    )
    if noise is not None:
        data["details"]["noise"] = noise
    print(to_json(data))
    print(format_table(data))
    if noise is not None:
        print("\n".join(_noise_lines(noise)))
    return 0 if all(f["met"] is not False for f in data["figures"]) else 1


def _month(args: argparse.Namespace) -> int:
    """The month on the namespace board; exit 1 unless every context is red by the third
    degraded night, still red on the last, and no clean night is red."""
    from ..bench.month_nights import format_month, month_json, month_on_namespace

    month = month_on_namespace(percent=args.month_percent, spread_pct=args.month_spread, say=_progress)
    print(json.dumps({"month": month_json(month)}, indent=2))
    print("\n".join(format_month(month)))
    caught = all(n is not None and n <= 3 for n in month.red_by().values())
    return 0 if caught and all(month.still_red_last().values()) and month.false_reds() == 0 else 1


def _history(args: argparse.Namespace) -> int:
    """The history benchmark on each backend asked for; exit 1 when a verdict check failed."""
    import tempfile
    from contextlib import ExitStack
    from pathlib import Path

    from ..bench.history_bench import format_history, history_bench, to_json
    from ..bench.history_store import HistoryPlan
    from ..bench.scratch_postgres import scratch_postgres, why_not

    backends = [b.strip() for b in args.history_backends.split(",") if b.strip()]
    unknown = sorted(set(backends) - {"sqlite", "postgresql"})
    if unknown:
        raise ConfigError("--history-backends", f"unknown {', '.join(unknown)} (sqlite, postgresql)")
    plan = HistoryPlan(nights=args.history_nights, labs=args.history_labs)
    results = []
    with ExitStack() as stack:
        for backend in backends:
            if backend == "sqlite":
                where = (
                    Path(args.history_dir)
                    if args.history_dir
                    else Path(stack.enter_context(tempfile.TemporaryDirectory()))
                )
                url = f"sqlite:///{where / 'history.sqlite'}"
            else:
                reason = why_not()
                if reason is not None:
                    print(f"postgresql: not measured: {reason}", file=sys.stderr)
                    continue
                url = stack.enter_context(scratch_postgres())
            results.append(
                history_bench(url, backend, plan, args.history_steps, args.history_repeats, _progress)
            )
    print(to_json(results))
    for result in results:
        print("\n".join(format_history(result)))
    ok = all(r["verdicts"]["planted_red"] == r["verdicts"]["planted"] for r in results)
    return 0 if ok and results else 1


def _progress(line: str) -> None:
    """A phase of a long bench, as it happens (stderr: stdout is the JSON and the table)."""
    print(line, file=sys.stderr, flush=True)


def _noise(trials: int) -> dict[str, Any]:
    """The goodput verdict's sensitivity under noise, and the latency verdict's under probe
    noise (its ``latency`` key): both simulated, no lab needed."""
    from ..bench.detect_target import detect_target
    from ..bench.latency_noise import latency_sensitivity
    from ..bench.noise import noise_sensitivity

    noise = noise_sensitivity(trials, say=print)
    noise["latency"] = latency_sensitivity(trials, say=print)
    noise["detect_target"] = detect_target(trials, say=print)
    return noise


def _noise_lines(noise: dict[str, Any]) -> list[str]:
    from ..bench.detect_target import format_detect_target
    from ..bench.latency_noise import format_latency_noise
    from ..bench.noise import format_noise

    lines = format_noise(noise) + format_latency_noise(noise["latency"])
    # A recording made before the target's check has none.
    return lines + (format_detect_target(noise["detect_target"]) if "detect_target" in noise else [])
