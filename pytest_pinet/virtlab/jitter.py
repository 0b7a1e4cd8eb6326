"""The virtual lab's noise model: cables whose rate varies run to run and second to second.

The namespace cable is nearly noiseless (ten clean runs measured 941.41-941.49 Mbit/s), so
a sensitivity figure measured on it says little about a Pi or the QEMU board, whose runs
differ by several percent.  With ``pinet lab degrade --jitter PERCENT`` every cable's rate
becomes the (degraded) calibrated rate times ``level x second``: ``level`` is drawn from a
normal distribution of that relative spread and held for ``hold_s`` seconds (a run's luck:
hold it about as long as a run), ``second`` is drawn every second with the same spread (the
jitter within a run); ``--jitter-runs`` and ``--jitter-seconds`` set either part alone.
The rate varies around the calibrated one, above it too: this is a
model of noise, not of a cable.

:class:`NoiseModel` is the model; the bench's sensitivity under noise draws its simulated
nights from it (``bench.noise``), and :func:`main` is the process that applies it to the
lab's cables (started and stopped by ``virtlab.cable_faults.degrade``), one ``tc qdisc change`` per
cable end per second.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ..polling import wait_until
from . import shaping, system

PID_FILE = "jitter.pid"
MIN_FACTOR = 0.5  # a draw far in the tail never stops a cable


@dataclass(frozen=True)
class NoiseModel:
    """A stated relative spread run to run (``spread_pct``) and second to second
    (``second_pct``; None: the same). The two parts apart tell a lab which noise longer runs
    average away (the seconds) and which they cannot (the run's level)."""

    spread_pct: float
    hold_s: float = 10.0
    second_pct: float | None = None

    @property
    def seconds_pct(self) -> float:
        """The second-to-second spread."""
        return self.spread_pct if self.second_pct is None else self.second_pct

    def level(self, rng: random.Random) -> float:
        """One run's factor."""
        return max(MIN_FACTOR, 1.0 + rng.gauss(0.0, self.spread_pct / 100.0))

    def second(self, rng: random.Random) -> float:
        """One second's factor within a run."""
        return max(MIN_FACTOR, 1.0 + rng.gauss(0.0, self.seconds_pct / 100.0))

    def run(self, rate: float, seconds: int, rng: random.Random) -> list[float]:
        """One run's per-second figures of a cable carrying ``rate``."""
        level = self.level(rng)
        return [rate * level * self.second(rng) for _ in range(seconds)]


@dataclass(frozen=True)
class CableEnd:
    """One shaped device: its namespace, name, speed and MTU."""

    netns: str
    device: str
    speed_mbps: int
    mtu: int

    def arg(self) -> str:
        """The end as one command-line word for the jitter process."""
        return f"{self.netns}:{self.device}:{self.speed_mbps}:{self.mtu}"

    @classmethod
    def parse(cls, word: str) -> CableEnd:
        """The inverse of :meth:`arg`."""
        netns, device, speed, mtu = word.split(":")
        return cls(netns, device, int(speed), int(mtu))


def start(state_dir: Path, ends: Sequence[CableEnd], percent: float, model: NoiseModel) -> int:
    """Start the jitter process for ``ends`` (stopping a running one first); return its pid."""
    stop(state_dir)
    argv = [sys.executable, "-m", __name__, "--percent", str(percent), "--spread", str(model.spread_pct)]
    argv += ["--second-spread", str(model.seconds_pct), "--hold", str(model.hold_s)]
    argv += [end.arg() for end in ends]
    log = (state_dir / "jitter.log").open("ab")
    process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True)
    log.close()
    (state_dir / PID_FILE).write_text(str(process.pid), encoding="utf-8")
    return process.pid


def stop(state_dir: Path) -> bool:
    """Stop the jitter process this lab started, if any (by the pid it recorded)."""
    pid_file = state_dir / PID_FILE
    if not pid_file.exists():
        return False
    pid = int(pid_file.read_text(encoding="utf-8").strip() or 0)
    pid_file.unlink()
    if pid <= 0:
        return False
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return False

    def gone() -> bool:
        try:
            os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            pass
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        return False

    # It finishes its current tc call, then exits; one that does not is killed, so no varying
    # rate outlives the command that stopped it.
    if not wait_until(gone, timeout=5.0, pace=0.1):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    return True


def apply(ends: Sequence[CableEnd], percent: float, factor: float) -> None:
    """Every end at the degraded calibrated rate times ``factor``."""
    for end in ends:
        calibration = shaping.DEFAULT_CALIBRATION * (1 - percent / 100.0) * factor
        shaper = shaping.Shaping(end.speed_mbps, end.mtu, calibration=calibration)
        system.run(
            [system.find_tool("tc"), "qdisc", "change", "dev", end.device, "root", *shaper.tc_args()],
            netns=end.netns,
            check=False,
        )


def main(argv: Sequence[str] | None = None) -> int:
    """The jitter process: a new level every ``--hold`` seconds, a new second every second."""
    parser = argparse.ArgumentParser(prog="python -m pytest_pinet.virtlab.jitter")
    parser.add_argument("--percent", type=float, default=0.0)
    parser.add_argument("--spread", type=float, required=True)
    parser.add_argument("--second-spread", type=float, default=None)
    parser.add_argument("--hold", type=float, default=10.0)
    parser.add_argument("ends", nargs="+")
    args = parser.parse_args(argv)
    ends = [CableEnd.parse(word) for word in args.ends]
    model = NoiseModel(args.spread, args.hold, args.second_spread)
    rng = random.Random()  # noqa: S311 - noise, not secrets
    running = True

    def finish(_signal: int, _frame: object) -> None:
        nonlocal running
        running = False

    signal.signal(signal.SIGTERM, finish)
    deadline = 0.0
    level = 1.0
    while running:
        if time.monotonic() >= deadline:
            level, deadline = model.level(rng), time.monotonic() + args.hold
        apply(ends, args.percent, level * model.second(rng))
        time.sleep(1.0)  # pacing that is the point: the second-to-second part changes once a second
    apply(ends, args.percent, 1.0)  # back to the steady (degraded) rate
    return 0


if __name__ == "__main__":
    sys.exit(main())
