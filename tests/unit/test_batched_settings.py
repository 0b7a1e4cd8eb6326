"""Several settings files read or written in one round trip (host/tunables.py): on a QEMU
board every command costs 0.2 s, and RPS and XPS over four queues were 29 commands each."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import cast

from pytest_pinet.host.cpu_tunables import QueueMask
from pytest_pinet.host.platform import LINUX
from pytest_pinet.host.remote import CommandResult, RemoteHost
from pytest_pinet.host.tunables import read_settings, write_settings


class CountingShell:
    """This machine's own shell where a tunable expects a host, counting the round trips."""

    name = "local"
    sudo = False
    platform = LINUX

    def __init__(self, queues: Path | None = None) -> None:
        self.calls = 0
        self.queues = queues

    def run_shell(self, script: str, *, timeout: float = 60.0, root: bool = False) -> CommandResult:
        self.calls += 1
        sysfs = "/sys/class/net/eth9/queues"
        if self.queues is not None:  # the interface's queue directory lives in tmp here
            script = script.replace(sysfs, str(self.queues))
        done = subprocess.run(
            ["sh", "-c", script], capture_output=True, text=True, timeout=timeout, check=False
        )
        out = done.stdout.replace(str(self.queues), sysfs) if self.queues is not None else done.stdout
        return CommandResult(script, done.returncode, out, done.stderr)

    def run(self, argv: list[str], *, timeout: float = 60.0, root: bool = False) -> CommandResult:
        return self.run_shell(" ".join(str(a) for a in argv), timeout=timeout, root=root)

    def check(self, argv: list[str], *, timeout: float = 60.0, root: bool = False) -> str:
        return self.run(argv, timeout=timeout, root=root).stdout


def test_many_files_are_read_in_one_round_trip_and_a_missing_one_is_none(tmp_path):
    shell = CountingShell()
    host = cast(RemoteHost, shell)
    (tmp_path / "a").write_text("f\n")
    (tmp_path / "b b").write_text("00000000,00000003\n")
    paths = [str(tmp_path / "a"), str(tmp_path / "b b"), str(tmp_path / "gone")]
    assert read_settings(host, paths) == {paths[0]: "f", paths[1]: "00000000,00000003", paths[2]: None}
    assert shell.calls == 1


def test_many_files_are_written_in_one_round_trip_and_a_refusal_names_its_error(tmp_path):
    shell = CountingShell()
    host = cast(RemoteHost, shell)
    ok, refused = tmp_path / "ok", tmp_path / "dir"
    refused.mkdir()  # writing a directory fails, as a queue file refusing a mask does
    written = write_settings(host, {str(ok): "3", str(refused): "3"})
    assert ok.read_text() == "3\n" and written[str(ok)] == (True, "")
    assert written[str(refused)][0] is False and "directory" in written[str(refused)][1].lower()
    assert shell.calls == 2  # the batch, then the refused file alone for its error


def test_rps_on_four_queues_costs_a_fixed_number_of_round_trips(tmp_path):
    for queue in range(4):
        (tmp_path / f"rx-{queue}").mkdir()
        (tmp_path / f"rx-{queue}" / "rps_cpus").write_text("0\n")
    shell = CountingShell(tmp_path)
    host = cast(RemoteHost, shell)
    tunable = QueueMask("rps", "eth9", (0, 1))
    saved = tunable.read(host)
    tunable.apply(host)
    assert tunable.is_applied(host)
    assert all((tmp_path / f"rx-{q}" / "rps_cpus").read_text() == "3\n" for q in range(4))
    tunable.restore(host, saved)
    assert all((tmp_path / f"rx-{q}" / "rps_cpus").read_text() == "0\n" for q in range(4))
    # read 2, apply 3, read back 2, restore 1: 8 round trips, against 31 one file at a time
    assert shell.calls == 8, shell.calls
