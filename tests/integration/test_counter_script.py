"""The receiver's counter script (the adaptive rule's per-second view of a run) run here, under
bash and dash: it calls ``ss`` and reads sysfs, real tools the unit tier does not assume."""

from __future__ import annotations

import subprocess

from pytest_pinet.host.platform import LINUX
from pytest_pinet.traffic.adaptive import parse_counter_sample


def test_the_counter_script_runs_here_under_bash_and_dash():
    for shell in ("bash", "sh"):
        out = subprocess.run(
            [shell, "-c", LINUX.receive_counter_script("lo", 20001)], capture_output=True, text=True
        )
        sample = parse_counter_sample(out.stdout)
        assert sample is not None, (shell, out.stdout, out.stderr)
        assert sample.rx_bytes > 0 and sample.clock > 1.7e9
