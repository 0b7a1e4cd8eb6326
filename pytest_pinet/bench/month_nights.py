"""A month of nights on the namespace board: the suite's own verdicts, confirmation and store.

The noise bench (:mod:`.noise`) draws nights from a model; this one takes them, each a whole
pytest run of the suite's half-duplex goodput (both directions, two contexts) on a virtual
lab of its own, judged by the plugin as a lab's night is: the store's history, the spread
prior, confirmation before red (``--pinet-remeasure``'s default).  The cables vary run to
run by a stated spread (``pinet lab degrade --jitter-runs``), so the nights differ as a Pi's
do.  ``clean`` nights make the history; then every cable is ``percent`` slower for
``degraded`` nights (red by the third and still red on the fourth, asks issue 62), then the
cables are restored for ``after`` nights: any red among the clean nights is a false one.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ..errors import PinetError
from ..virtlab import cable_faults, virtual_lab
from ..virtlab.topology import LabSpec

SUITE = """
import pytest


@pytest.mark.parametrize("direction", ["board->peer", "peer->board"])
def test_goodput(pinet_measure_tcp, pinet_judge_goodput, direction):
    pinet_judge_goodput(lambda: [pinet_measure_tcp.half_duplex(direction)])
"""
# A floor every night of the month clears, degraded ones too: red comes from history alone.
THRESHOLDS = {"rules": [{"id": "collapse", "match": {"scenario": "*"}, "min_mbps": 500}]}
LAB_NAME = "pinet62"  # a name no other lab of the bench or the tests takes


@dataclass(frozen=True)
class MonthNight:
    """One night: its number (1-based), the cables' planted slowdown and each context's verdict."""

    night: int
    degraded_pct: float
    verdicts: dict[str, str]  # test id -> the verdict of its final attempt
    attempts: dict[str, int]  # test id -> attempts taken (confirmation)
    goodput: dict[str, float]  # test id -> the final attempt's Mbit/s


@dataclass(frozen=True)
class Month:
    """The month's nights and what they add up to."""

    spread_pct: float
    percent: float
    clean: int
    degraded: int
    after: int
    nights: list[MonthNight] = field(default_factory=list)

    def red_by(self) -> dict[str, int | None]:
        """Each context's first red degraded night (1-based within the degraded ones), or None."""
        found: dict[str, int | None] = {}
        for test in self.nights[0].verdicts if self.nights else {}:
            found[test] = next(
                (
                    n + 1
                    for n, night in enumerate(self._degraded())
                    if "regression" in night.verdicts.get(test, "")
                ),
                None,
            )
        return found

    def still_red_last(self) -> dict[str, bool]:
        """Whether each context is red on the last degraded night."""
        last = self._degraded()[-1] if self._degraded() else None
        return {t: last is not None and "regression" in v for t, v in (last.verdicts if last else {}).items()}

    def false_reds(self) -> int:
        """Regressions called on clean nights (the history's and the ones after the restore)."""
        return sum(
            "regression" in verdict
            for night in self.nights
            if night.degraded_pct == 0
            for verdict in night.verdicts.values()
        )

    def clean_context_nights(self) -> int:
        """Context-nights that were clean and had a baseline to be judged against."""
        return sum(
            verdict not in ("", "no-baseline")
            for night in self.nights
            if night.degraded_pct == 0
            for verdict in night.verdicts.values()
        )

    def _degraded(self) -> list[MonthNight]:
        return [night for night in self.nights if night.degraded_pct > 0]


def month_on_namespace(
    clean: int = 10,
    degraded: int = 4,
    after: int = 10,
    percent: float = 3.0,
    spread_pct: float = 1.0,
    duration: int = 4,
    say: Callable[[str], None] = print,
) -> Month:
    """The month on a virtual lab of its own, built for it and always taken down."""
    month = Month(spread_pct, percent, clean, degraded, after)
    with tempfile.TemporaryDirectory(prefix="pinet-month-") as scratch:
        root = Path(scratch)
        spec = LabSpec(name=LAB_NAME, state_root=root / "state")
        (root / "test_month.py").write_text(SUITE, encoding="utf-8")
        (root / "thresholds.yaml").write_text(json.dumps(THRESHOLDS), encoding="utf-8")
        virtual_lab.down(spec)
        # A CI job stopped mid-month (SIGTERM) takes the lab down too, as Ctrl-C does.
        previous = signal.signal(signal.SIGTERM, _stop)
        virtual_lab.up(spec)
        try:
            plan = [0.0] * clean + [percent] * degraded + [0.0] * after
            for number, slower in enumerate(plan, 1):
                cable_faults.degrade(spec, slower, jitter_pct=spread_pct, seconds_pct=0.0)
                night = _night(root, spec, number, slower, duration)
                month.nights.append(night)
                say(
                    f"month night {number}/{len(plan)} ({slower:g} % slower): "
                    + ", ".join(
                        f"{_short(t)} {v} ({night.attempts[t]} att.)" for t, v in night.verdicts.items()
                    )
                )
        finally:
            virtual_lab.down(spec)
            signal.signal(signal.SIGTERM, previous)
    return month


def _stop(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)


def _night(root: Path, spec: LabSpec, number: int, slower: float, duration: int) -> MonthNight:
    results = root / "results"
    before = set(results.glob("2*")) if results.is_dir() else set()
    done = subprocess.run(
        [
            sys.executable, "-m", "pytest", str(root / "test_month.py"), "-q", "-p", "no:cacheprovider",
            "--rootdir", str(root), "--pinet-virtual-lab", spec.name, "--pinet-keep-lab",
            "--pinet-board", "netns",
            "--pinet-results", str(results), "--pinet-db", f"sqlite:///{root / 'store.sqlite'}",
            "--pinet-duration", str(duration), "--pinet-omit", "1",
            "--pinet-thresholds", str(root / "thresholds.yaml"),
        ],
        capture_output=True, text=True, timeout=600, env=_env(spec),
    )  # fmt: skip
    made = [p for p in results.glob("2*") if p not in before]
    if len(made) != 1:
        raise PinetError(f"month night {number} left no results: {done.stdout[-2000:]}{done.stderr[-1000:]}")
    run_dir = made[0]
    rows = [json.loads(line) for line in (run_dir / "measurements.jsonl").read_text().splitlines() if line]
    final: dict[str, dict[str, Any]] = {}
    attempts: dict[str, int] = {}
    for row in rows:
        final[row["test_id"]] = row
        attempts[row["test_id"]] = attempts.get(row["test_id"], 0) + 1
    verdicts = _verdicts(root, run_dir.name)
    return MonthNight(
        number,
        slower,
        {test: verdicts.get(row["id"], "") for test, row in final.items()},
        attempts,
        {test: float(row["goodput_mbps"]) for test, row in final.items()},
    )


def _verdicts(root: Path, run_id: str) -> dict[str, str]:
    """Each stored row's verdict of ``run_id``, by the measurement's id."""
    from ..record.store import ResultsStore

    store = ResultsStore(f"sqlite:///{root / 'store.sqlite'}")
    try:
        return {
            json.loads(row["data"]).get("id", ""): str(row["verdict"] or "")
            for row in store.rows_of_run(run_id)
        }
    finally:
        store.close()


def _env(spec: LabSpec) -> dict[str, str]:
    return {**os.environ, "PINET_STATE_DIR": str(spec.state_root)}


def _short(test_id: str) -> str:
    return test_id.rsplit("[", 1)[-1].rstrip("]")


def format_month(month: Month) -> list[str]:
    """The month, for people: what the issue asks of it, then night by night."""
    red_by = month.red_by()
    still = month.still_red_last()
    judged = month.clean_context_nights()
    lines = [
        f"a month on the namespace board ({month.clean} clean nights, {month.degraded} with every cable "
        f"{month.percent:g} % slower, {month.after} clean after; "
        f"cables {month.spread_pct:g} % apart run to run):",
        *(
            f"  {_short(test)}: red on degraded night {n if n is not None else 'none'}, "
            f"{'still red' if still.get(test) else 'not red'} on the last"
            for test, n in red_by.items()
        ),
        f"  false reds: {month.false_reds()} of {judged} clean context-nights judged against a baseline",
    ]
    for night in month.nights:
        figures = ", ".join(
            f"{_short(t)} {night.goodput[t]:.1f} {night.verdicts[t] or '-'}"
            + (f" ({night.attempts[t]} attempts)" if night.attempts[t] > 1 else "")
            for t in night.verdicts
        )
        lines.append(f"    night {night.night:2d} ({night.degraded_pct:g} % slower): {figures}")
    return lines


def month_json(month: Month) -> dict[str, Any]:
    """The month as data (the bench's JSON)."""
    return {**asdict(month), "red_by": month.red_by(), "false_reds": month.false_reds()}
