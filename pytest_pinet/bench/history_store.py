"""A year of nightlies from many labs, made from one real night: the store the history
benchmark times.

One night the main job measured (``data/main-job-night.json.gz``: 220 measurements as stored,
their JSON as measured) is copied night after night into labs of their own: each copy of a
context gets a night-to-night factor drawn from a normal spread (every second of its run and
every probe of its latency moved by it, the run's own shape kept), and a planted drop lowers
chosen contexts for the last nights. The rows are written as the store holds any other
(same columns, same JSON), so every history command reads them as it reads a lab's.
"""

from __future__ import annotations

import gzip
import json
import random
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from ..model.context_key import ContextKey
from ..record.store import ResultsStore
from ..record.store_schema import IMPORTED_COLUMNS

RECORDED_NIGHT = Path(__file__).parent / "data" / "main-job-night.json.gz"
DAY_S = 86400.0
SUITE_VERSION = "bench-history"


@dataclass(frozen=True)
class HistoryPlan:
    """The synthetic store: how many nights of how many labs, their noise and the planted drop."""

    nights: int = 365
    labs: int = 10
    noise_pct: float = 0.3  # night-to-night spread of every context, percent (one sigma)
    drop_pct: float = 3.0  # the planted drop, percent lower
    drop_contexts: int = 20  # per lab
    drop_nights: int = 10  # the last nights, dropped
    seed: int = 1

    def lab(self, index: int) -> str:
        """The name of lab ``index`` (``lab01`` ...)."""
        return f"lab{index + 1:02d}"

    @property
    def lab_names(self) -> list[str]:
        """Every lab of the store, in order."""
        return [self.lab(n) for n in range(self.labs)]


def recorded_night(path: Path = RECORDED_NIGHT) -> list[dict[str, Any]]:
    """The rows of one stored night (a JSON list of the ``measurements`` table's rows, as
    ``sqlite3 -json`` writes them), checked: each holds every imported column."""
    try:
        opener = gzip.open if path.suffix == ".gz" else open
        with opener(path, "rt", encoding="utf-8") as stream:
            rows = json.load(stream)
    except (OSError, ValueError) as exc:
        raise ConfigError(str(path), f"not a stored night: {exc}") from None
    if not isinstance(rows, list) or not rows:
        raise ConfigError(str(path), "not a stored night: expected a non-empty JSON list of rows")
    for n, row in enumerate(rows):
        missing = [c for c in IMPORTED_COLUMNS if not isinstance(row, dict) or c not in row]
        if missing:
            raise ConfigError(str(path), f"row {n} lacks {', '.join(missing)}")
    return rows


def night_of_store(url: str, run_id: str | None = None) -> list[dict[str, Any]]:
    """The rows of one night of a store (its newest when ``run_id`` is None), to build from."""
    store = ResultsStore(url)
    try:
        runs = [r["run_id"] for r in store.runs() if r["measurements"]]
        if not runs:
            raise ConfigError(url, "the store holds no measured night to build from")
        chosen = run_id or runs[-1]
        if chosen not in runs:
            raise ConfigError(chosen, f"no measured run of that id in {url}")
        return store.rows_of_run(chosen)
    finally:
        store.close()


def planted_keys(night: Sequence[Mapping[str, Any]], plan: HistoryPlan) -> set[str]:
    """The base night's contexts the drop is planted in (the same ones in every lab): drawn
    from the goodput contexts, so the choice does not follow the suite's order."""
    keys = sorted({str(row["context_key"]) for row in night})
    draw = random.Random(plan.seed)  # noqa: S311 - a reproducible choice, not a secret
    return set(draw.sample(keys, min(plan.drop_contexts, len(keys))))


def lab_key(key: str, lab: str) -> str:
    """Context ``key`` of the recorded night as lab ``lab``'s."""
    parsed = ContextKey.parse(key)
    return str(ContextKey(tuple((name, lab if name == "lab" else value) for name, value in parsed.pairs)))


def _scaled(values: Any, factor: float) -> Any:
    if not isinstance(values, list):
        return values
    return [round(v * factor, 3) if isinstance(v, int | float) else v for v in values]


def _night_rows(
    night: Sequence[Mapping[str, Any]],
    plan: HistoryPlan,
    lab: str,
    run_id: str,
    at: float,
    dropped: bool,
    planted: set[str],
    rng: random.Random,
) -> list[dict[str, Any]]:
    first = min(float(row["started"]) for row in night)
    factors: dict[str, tuple[float, float]] = {}
    rows = []
    for base in night:
        key = str(base["context_key"])
        if key not in factors:
            level = 1.0 + rng.gauss(0.0, plan.noise_pct / 100.0)
            if dropped and key in planted:
                level *= 1.0 - plan.drop_pct / 100.0
            factors[key] = (level, 1.0 + rng.gauss(0.0, plan.noise_pct / 100.0))
        level, delay = factors[key]
        data = json.loads(base["data"])
        data["goodput_mbps"] = round(float(base["goodput_mbps"]) * level, 3)
        data["interval_mbps"] = _scaled(data.get("interval_mbps"), level)
        data.setdefault("context", {})["lab"] = lab
        latency = (data.get("detail") or {}).get("latency")
        if isinstance(latency, dict):
            latency["load_rtt_ms"] = _scaled(latency.get("load_rtt_ms"), delay)
        offset = float(base["started"]) - first
        row = {column: base[column] for column in IMPORTED_COLUMNS}
        row.update(
            run_id=run_id,
            lab=lab,
            context_key=lab_key(key, lab),
            started=at + offset,
            finished=at + offset + float(base["finished"]) - float(base["started"]),
            goodput_mbps=data["goodput_mbps"],
            suite_version=SUITE_VERSION,
            data=json.dumps(data, sort_keys=True),
        )
        rows.append(row)
    return rows


def run_id_of(lab: str, at: float) -> str:
    """A night's run id: its start and its lab, unique across labs."""
    return f"{time.strftime('%Y%m%dT%H%M%S', time.gmtime(at))}-{lab}"


def night_start(plan: HistoryPlan, lab_index: int, night: int, first_day: float) -> float:
    """When night ``night`` of lab ``lab_index`` starts (labs a few minutes apart)."""
    return first_day + night * DAY_S + 2 * 3600 + lab_index * 300


def nights(
    night: Sequence[Mapping[str, Any]], plan: HistoryPlan, start: int, stop: int, first_day: float
) -> Iterator[tuple[str, str, float, list[dict[str, Any]]]]:
    """Nights ``start`` to ``stop - 1`` of every lab: (lab, run id, start, rows). The same
    night of the same plan is always the same rows (its own seeded draw)."""
    planted = planted_keys(night, plan)
    for n in range(start, stop):
        for index, lab in enumerate(plan.lab_names):
            rng = random.Random(f"{plan.seed}:{lab}:{n}")  # noqa: S311 - simulated noise
            at = night_start(plan, index, n, first_day)
            run_id = run_id_of(lab, at)
            dropped = n >= plan.nights - plan.drop_nights
            yield lab, run_id, at, _night_rows(night, plan, lab, run_id, at, dropped, planted, rng)


def first_day_of(plan: HistoryPlan, now: float | None = None) -> float:
    """Midnight (UTC) of the store's first night: the last night is the most recent one."""
    today = (now if now is not None else time.time()) // DAY_S * DAY_S
    return today - plan.nights * DAY_S


def fill(
    store: ResultsStore,
    night: Sequence[Mapping[str, Any]],
    plan: HistoryPlan,
    start: int,
    stop: int,
    first_day: float,
) -> int:
    """Write nights ``start`` to ``stop - 1`` of every lab into ``store``; return the rows written."""
    written = 0
    for lab, run_id, at, rows in nights(night, plan, start, stop, first_day):
        store.add_run(run_id, lab, SUITE_VERSION, note="synthetic (pinet bench --history)", started=at)
        store.add_rows(rows)
        written += len(rows)
    return written
