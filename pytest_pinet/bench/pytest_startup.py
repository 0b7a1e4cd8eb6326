"""What having pytest-pinet installed costs a pytest run that does not use it.

pinet is installed into environments that run other projects' tests; each of their pytest
starts loads every installed plugin.  This bench times a project of two trivial tests, with
and without ``-n 2``, under four plugin sets, interleaved so that a busy moment of the
machine hits all of them alike:

- *bare*: pytest and xdist only (``-p no:`` for pinet and for the plugins of its ``lab`` extra,
  labgrid's and allure-pytest's), what the project had before pinet came;
- *wheel*: pinet's plugin as ``pip install pytest-pinet`` leaves it (the target: under 100 ms
  per start above *bare*, and its ratio to *bare*);
- *lab extra only*: labgrid's and allure-pytest's plugins, pinet's off: what those packages
  cost every pytest start of an environment where they are installed, pinet or not;
- *wheel + lab extra*: everything, as a lab has it; minus the previous set it is pinet's own
  share there (also under 100 ms).

Nothing here needs a lab.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

TARGET_MS = 100.0
# Plugins of the test extra (hypothesis) are not what a user of the wheel has: off everywhere.
ALWAYS_OFF = ("-p", "no:hypothesispytest", "-p", "no:cacheprovider")
LAB_EXTRA_PLUGINS = ("labgrid", "allure_pytest")
_NO_LAB_EXTRA = tuple(arg for name in LAB_EXTRA_PLUGINS for arg in ("-p", f"no:{name}"))
PLUGIN_SETS: dict[str, tuple[str, ...]] = {
    "bare": ("-p", "no:pinet", *_NO_LAB_EXTRA),
    "wheel": _NO_LAB_EXTRA,
    "lab extra only": ("-p", "no:pinet"),
    "wheel + lab extra": (),
}
PROJECT = {
    "pytest.ini": "[pytest]\n",  # its own rootdir: no conftest of this repository
    "test_theirs.py": "def test_one():\n    assert 1\n\n\ndef test_two():\n    assert 2\n",
}


@dataclass
class StartupCost:
    """Wall seconds of each pytest start, by plugin set and by worker count."""

    seconds: dict[tuple[str, int], list[float]] = field(default_factory=dict)

    def median_ms(self, plugins: str, workers: int) -> float:
        """The median start of one plugin set, in milliseconds."""
        return statistics.median(self.seconds[plugins, workers]) * 1000

    def added_samples_ms(self, plugins: str, base: str, workers: int) -> list[float]:
        """What ``plugins`` adds to a start over ``base``, round by round (each round's starts
        were taken one after the other, so a busy moment of the machine hits both)."""
        pairs = zip(self.seconds[plugins, workers], self.seconds[base, workers], strict=True)
        return [(with_them - without) * 1000 for with_them, without in pairs]

    def added_ms(self, plugins: str, base: str, workers: int) -> float:
        """The median of :meth:`added_samples_ms`."""
        return statistics.median(self.added_samples_ms(plugins, base, workers))

    def ratio(self, plugins: str, workers: int) -> float:
        """A start with ``plugins`` against a bare one."""
        return self.median_ms(plugins, workers) / self.median_ms("bare", workers)


def _start(project: Path, plugins: tuple[str, ...], workers: int) -> float:
    """One pytest start of the project, timed from launch to exit; it must pass."""
    argv = [sys.executable, "-m", "pytest", "-q", *ALWAYS_OFF, *plugins]
    if workers:
        argv += ["-n", str(workers)]
    # Compiled modules, as pip leaves an installed package (PYTHONDONTWRITEBYTECODE would make
    # every start compile an editable checkout's sources again, a cost no user of the wheel pays).
    env = {name: value for name, value in os.environ.items() if name != "PYTHONDONTWRITEBYTECODE"}
    started = time.monotonic()
    done = subprocess.run(argv, cwd=project, env=env, capture_output=True, text=True, timeout=300)
    took = time.monotonic() - started
    if done.returncode != 0:
        raise RuntimeError(f"the start-up project failed under {' '.join(argv[3:])}: {done.stdout[-800:]}")
    return took


def measure_startup(runs: int, say: Callable[[str], None]) -> StartupCost:
    """``runs`` starts of each plugin set, plain and with ``-n 2``, interleaved."""
    cost = StartupCost()
    with tempfile.TemporaryDirectory(prefix="pinet-bench-startup-") as tmp:
        project = Path(tmp)
        for name, text in PROJECT.items():
            (project / name).write_text(text)
        for plugins in PLUGIN_SETS:  # a first start of each fills the OS's caches; not counted
            _start(project, PLUGIN_SETS[plugins], 0)
        for number in range(runs):
            say(f"pytest start-up {number + 1} of {runs}: {', '.join(PLUGIN_SETS)}; plain and -n 2")
            for workers in (0, 2):
                for plugins, args in PLUGIN_SETS.items():
                    cost.seconds.setdefault((plugins, workers), []).append(_start(project, args, workers))
    return cost


def startup_lines(cost: StartupCost) -> list[tuple[str, list[float], str, bool | None]]:
    """(name, samples in ms, target, met) of every start-up figure, for the bench's table."""
    lines: list[tuple[str, list[float], str, bool | None]] = []
    target = f"< {TARGET_MS:.0f} ms"
    for workers in (0, 2):
        label = "pytest start" + (f" -n {workers}" if workers else "")
        bare = cost.median_ms("bare", workers)
        wheel = cost.added_samples_ms("wheel", "bare", workers)
        own = cost.added_samples_ms("wheel + lab extra", "lab extra only", workers)
        extra = cost.added_samples_ms("lab extra only", "bare", workers)
        lines += [
            (
                f"{label}: the wheel vs bare pytest ({bare:.0f} ms), "
                f"ratio {cost.ratio('wheel', workers):.2f}",
                wheel,
                target,
                statistics.median(wheel) < TARGET_MS,
            ),
            (
                f"{label}: pinet's own share beside its lab extra's plugins",
                own,
                target,
                statistics.median(own) < TARGET_MS,
            ),
            (
                f"{label}: labgrid's and allure-pytest's plugins (the lab extra), ratio "
                f"{cost.ratio('lab extra only', workers):.2f}, pinet or not",
                extra,
                "reported",
                None,
            ),
        ]
    return lines
