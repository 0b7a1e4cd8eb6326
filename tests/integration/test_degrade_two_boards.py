"""``pinet lab degrade`` on the lab ``pinet lab up`` builds by default: the two-board lab, whose
QEMU board's hosts live in a companion lab's namespaces. Every option (and ``--reset``) is run
as a user runs it and each cable of both boards is read back with ``tc`` at the rate it asked
for. It once failed at once: "Cannot open network namespace pinet-qpi"."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_pinet.virtlab import shaping, virtual_lab
from pytest_pinet.virtlab.cable_faults import shaped_ends
from pytest_pinet.virtlab.topology import LabSpec, parts, two_board_lab

pytestmark = [pytest.mark.qemu, pytest.mark.slow]
LAB = "pinet4"


@pytest.fixture(scope="module")
def pair(root_required, tmp_path_factory) -> Iterator[LabSpec]:
    for tool in ("mmdebstrap", "qemu-system-x86_64"):
        if subprocess.run(["which", tool], capture_output=True, check=False).returncode != 0:
            pytest.skip(f"{tool} is not installed (scripts/setup.sh installs it)")
    spec = two_board_lab(LAB, state_root=tmp_path_factory.mktemp("pair") / "state")
    virtual_lab.down(spec)
    virtual_lab.up(spec)
    try:
        yield spec
    finally:
        virtual_lab.down(spec)


def _degrade(spec: LabSpec, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "pytest_pinet.cli", "lab", "degrade", "--lab", LAB, *args],
        env={**os.environ, "PINET_STATE_DIR": str(spec.state_root)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def _cables(spec: LabSpec) -> dict[tuple[str, str], tuple[int, int, int]]:
    """Every shaped cable end of both labs: (lab, host:device) -> (rate kbit, link speed, MTU)."""
    found = {}
    for part in parts(spec):
        for link in part.links:
            # the QEMU board shapes its own port inside the machine; the Pi 3B+'s port is
            # shaped on the USB 2 bus behind it, at what that bus carries
            for host, device, speed in shaped_ends(part, link, link.speed_mbps):
                shown = subprocess.run(
                    ["ip", "netns", "exec", part.netns(host), "tc", "qdisc", "show", "dev", device, "root"],
                    capture_output=True,
                    text=True,
                    check=True,
                    timeout=30,
                )
                rate = re.search(r"rate (\d+(?:\.\d+)?)([KMG]?)bit", shown.stdout)
                assert rate, shown.stdout
                kbit = float(rate.group(1)) * {"": 0.001, "K": 1, "M": 1000, "G": 1_000_000}[rate.group(2)]
                found[(part.name, f"{host}:{device}")] = (round(kbit), speed, link.mtu)
    return found


def _expected(speed: int, mtu: int, percent: float = 0.0) -> int:
    return shaping.Shaping(
        speed, mtu, calibration=shaping.DEFAULT_CALIBRATION * (1 - percent / 100)
    ).rate_kbit


def _noise_argv(state_dir: Path) -> list[str]:
    """The command line of the noise process a lab's state directory names."""
    pid = (state_dir / "jitter.pid").read_text(encoding="utf-8").strip()
    return Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")


def test_every_degrade_option_reaches_both_boards_and_reset_undoes_it(pair):
    calibrated = _cables(pair)
    assert {lab for lab, _ in calibrated} == {LAB, f"{LAB}q"}, calibrated  # both boards' cables
    out = _degrade(pair, "--percent", "3")
    assert f"{LAB}q: " in out and f"{LAB}: " in out
    for (lab, end), (rate, speed, mtu) in _cables(pair).items():
        assert rate == _expected(speed, mtu, 3), (lab, end, rate)
    _degrade(pair, "--jitter", "1", "--percent", "0")
    for part in parts(pair):
        assert (part.state_dir / "jitter.pid").exists(), part.name
    # Each part of the noise alone: the process of each board's lab runs with the spreads asked.
    for runs, seconds in (("1", "0"), ("0", "2")):
        out = _degrade(pair, "--jitter-runs", runs, "--jitter-seconds", seconds, "--percent", "0")
        assert f"jitter {runs} % run to run" in out and f"and {seconds} % second to second" in out, out
        for part in parts(pair):
            argv = _noise_argv(part.state_dir)
            spread, second = argv[argv.index("--spread") + 1], argv[argv.index("--second-spread") + 1]
            assert (float(spread), float(second)) == (float(runs), float(seconds)), (part.name, argv)
    _degrade(pair, "--reset")  # the noise stops on both boards: every cable calibrated again
    assert _cables(pair) == calibrated
    _degrade(pair, "--link-speed", "100", "--link", "qeth")  # the QEMU board's LAN cable
    slowed = {key for key, (rate, _, _) in _cables(pair).items() if rate != calibrated[key][0]}
    assert slowed and all(lab == f"{LAB}q" for lab, _ in slowed), slowed
    assert all(_cables(pair)[key][0] < 200_000 for key in slowed)
    # A bad cable stays bad under the noise process, which shapes every cable each second.
    _degrade(pair, "--jitter", "1", "--percent", "0")
    _degrade(pair, "--link-speed", "100", "--link", "qeth")
    time.sleep(2.5)  # pacing that is the point: two of the noise process's one-second turns
    assert all(_cables(pair)[key][0] < 200_000 for key in slowed), _cables(pair)
    _degrade(pair, "--reset")
    _degrade(pair, "--queue-packets", "4000")
    qlen = subprocess.run(
        ["ip", "netns", "exec", parts(pair)[1].netns("inet"), "ip", "link", "show", "eth0"],
        capture_output=True, text=True, check=True, timeout=30,
    ).stdout  # fmt: skip
    assert "qlen 4000" in qlen, qlen
    _degrade(pair, "--reset")
    _degrade(pair, "--link-speed", "0", "--link", "qeth")
    _degrade(pair, "--queue-packets", "0")
    assert _cables(pair) == calibrated
    for part in parts(pair):
        assert not (part.state_dir / "jitter.pid").exists(), part.name
    assert Path(pair.state_dir).exists()
