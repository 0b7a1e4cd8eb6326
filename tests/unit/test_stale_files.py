"""``pinet lab down`` sweeps the irtt pid files hung hosts left in the shared /tmp, and only
those whose server is gone (virtlab/stale_files.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from pytest_pinet.virtlab.stale_files import sweep_irtt_pid_files


def test_only_the_files_of_servers_that_are_gone_are_removed(tmp_path: Path) -> None:
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", "irtt", "server"])
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        (tmp_path / "pinet-irtt-aaaaaaaaaaaa.pid").write_text(f"{live.pid}\n")
        (tmp_path / "pinet-irtt-bbbbbbbbbbbb.pid").write_text("999999999\n")  # no such process
        (tmp_path / "pinet-irtt-cccccccccccc.pid").write_text(f"{other.pid}\n")  # a reused pid
        (tmp_path / "pinet-irtt-dddddddddddd.pid").write_text("")  # cut short as it was written
        (tmp_path / "unrelated.pid").write_text("999999999\n")
        removed = sweep_irtt_pid_files(tmp_path)
        assert removed == [
            "pinet-irtt-bbbbbbbbbbbb.pid",
            "pinet-irtt-cccccccccccc.pid",
            "pinet-irtt-dddddddddddd.pid",
        ]
        assert sorted(p.name for p in tmp_path.iterdir()) == ["pinet-irtt-aaaaaaaaaaaa.pid", "unrelated.pid"]
        assert sweep_irtt_pid_files(tmp_path) == []
    finally:
        live.kill()
        other.kill()
        live.wait()
        other.wait()
    assert sweep_irtt_pid_files(tmp_path) == ["pinet-irtt-aaaaaaaaaaaa.pid"]
