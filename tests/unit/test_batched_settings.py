"""Several settings files read or written in one round trip (host/tunables.py): on a QEMU
board every command costs 0.2 s, and RPS and XPS over four queues were 29 commands each."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any, cast

import pytest

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

    def run_shell(
        self, script: str, *, timeout: float = 60.0, root: bool = False, cleanup: bool = False
    ) -> CommandResult:
        self.calls += 1
        sysfs = "/sys/class/net/eth9/queues"
        if self.queues is not None:  # the interface's queue directory lives in tmp here
            script = script.replace(sysfs, str(self.queues))
        done = subprocess.run(
            ["sh", "-c", script], capture_output=True, text=True, timeout=timeout, check=False
        )
        out = done.stdout.replace(str(self.queues), sysfs) if self.queues is not None else done.stdout
        return CommandResult(script, done.returncode, out, done.stderr)

    def run(
        self, argv: list[str], *, timeout: float = 60.0, root: bool = False, cleanup: bool = False
    ) -> CommandResult:
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


FAKE_TC = """#!/bin/sh
# tc for one shaped interface, eth9: a tbf root whose child is kept in a file.
child={state}
case "$*" in
"-d qdisc show dev eth9 root") echo "qdisc tbf 8002: root refcnt 2 rate 9844Kbit burst 125000b/1 mpu 83b limit 77909b" ;;
"qdisc show dev eth9") echo "qdisc tbf 8002: root refcnt 2 rate 9844Kbit burst 125000b lat 50ms"
  echo "qdisc $(cat "$child") 8003: parent 8002:1 limit 127p" ;;
"qdisc replace dev eth9 parent 8002:1 "*) shift 6
  case "$1" in bfifo|sfq) echo "$1" > "$child" ;; *) echo "Error: Specified qdisc kind is unknown." >&2; exit 2 ;; esac ;;
*) echo "fake tc: $*" >&2; exit 1 ;;
esac
"""

FAKE_SYSCTL = """#!/bin/sh
# sysctl keeping net.ipv4.ip_forward in a file.
case "$1" in
-w) echo "${{2#*=}}" > {state}; echo "${{2%%=*}} = ${{2#*=}}" ;;
-n) cat {state} ;;
esac
"""


def _fake_tools(tmp_path: Path) -> Path:
    tools = tmp_path / "bin"
    tools.mkdir()
    (tmp_path / "child").write_text("bfifo\n")
    (tmp_path / "forward").write_text("0\n")
    (tools / "tc").write_text(FAKE_TC.format(state=tmp_path / "child"))
    (tools / "sysctl").write_text(FAKE_SYSCTL.format(state=tmp_path / "forward"))
    for tool in tools.iterdir():
        tool.chmod(0o755)
    return tools


def test_a_qdisc_is_set_in_two_round_trips_and_restored_in_one(tmp_path, monkeypatch):
    from pytest_pinet.host.net_tunables import Qdisc
    from pytest_pinet.host.tunables import apply_checked

    monkeypatch.setenv("PATH", f"{_fake_tools(tmp_path)}:{os.environ['PATH']}")
    shell = CountingShell()
    host = cast(RemoteHost, shell)
    qdisc = Qdisc("eth9", ("sfq",))
    saved = apply_checked(qdisc, host)
    # under the shaper, and what goes back is the shaper's own FIFO of its queue's bytes
    assert saved == ["parent", "8002:1", "bfifo", "limit", "77909"]
    assert (tmp_path / "child").read_text().strip() == "sfq"
    assert shell.calls == 2  # where it goes (tc -d), then replace and read back
    qdisc.restore(host, saved)
    assert (tmp_path / "child").read_text().strip() == "bfifo"
    assert shell.calls == 3


def test_a_kernel_without_the_qdisc_is_unsupported_and_keeps_its_fifo(tmp_path, monkeypatch):
    from pytest_pinet.errors import Unsupported
    from pytest_pinet.host.net_tunables import Qdisc
    from pytest_pinet.host.tunables import apply_checked

    monkeypatch.setenv("PATH", f"{_fake_tools(tmp_path)}:{os.environ['PATH']}")
    host = cast(RemoteHost, CountingShell())
    with pytest.raises(Unsupported, match=r"kernel lacks fq_codel .*kind is unknown"):
        apply_checked(Qdisc("eth9", ("fq_codel",)), host)
    assert (tmp_path / "child").read_text().strip() == "bfifo"


def test_forwarding_is_written_and_read_back_in_one_round_trip(tmp_path, monkeypatch):
    from pytest_pinet.host.net_tunables import Sysctl
    from pytest_pinet.host.tunables import apply_checked

    monkeypatch.setenv("PATH", f"{_fake_tools(tmp_path)}:{os.environ['PATH']}")
    shell = CountingShell()
    host = cast(RemoteHost, shell)
    forwarding = Sysctl("net.ipv4.ip_forward", "1")
    saved = apply_checked(forwarding, host)
    assert saved == "0" and (tmp_path / "forward").read_text().strip() == "1"
    assert shell.calls == 2  # the value found, then write and read back
    forwarding.restore(host, saved)
    assert (tmp_path / "forward").read_text().strip() == "0"


def test_two_interfaces_of_one_host_are_snapshotted_in_one_round_trip():
    from pytest_pinet.traffic.observers import take_snapshots

    shell = CountingShell()
    lo, absent = take_snapshots(cast(RemoteHost, shell), ["lo", "pinet-absent0"])
    assert shell.calls == 1
    assert lo.nic["rx_bytes"] >= 0 and lo.stat.startswith("cpu")  # this machine's loopback
    assert "rx_bytes" not in absent.nic and absent.stat.startswith("cpu")  # no interface, no figure


def test_what_a_host_refused_is_refused_at_once_for_the_session_and_asked_again_after_a_reflash(
    tmp_path, monkeypatch
):
    from pytest_pinet.errors import Unsupported
    from pytest_pinet.host.net_tunables import Qdisc, Sysctl
    from pytest_pinet.host.profiles import Profile, apply_steps
    from pytest_pinet.host.tunables import apply_checked, forget_unsupported

    monkeypatch.setenv("PATH", f"{_fake_tools(tmp_path)}:{os.environ['PATH']}")
    shell = CountingShell()
    host = cast(RemoteHost, shell)
    with pytest.raises(Unsupported, match="kernel lacks fq_codel"):
        apply_checked(Qdisc("eth9", ("fq_codel",)), host)
    asked = shell.calls
    with pytest.raises(Unsupported, match="kernel lacks fq_codel"):
        apply_checked(Qdisc("eth9", ("fq_codel",)), host)
    assert shell.calls == asked  # no command: the host said no already
    # A profile holding the refused step fails before its first step is applied.
    steps = [(Sysctl("net.ipv4.ip_forward", "1"), host), (Qdisc("eth9", ("fq_codel",)), host)]
    with pytest.raises(Unsupported):
        apply_steps(Profile("codel", "fair queueing"), steps)
    assert shell.calls == asked and (tmp_path / "forward").read_text().strip() == "0"
    forget_unsupported(host)  # reflashed: another kernel may have it
    with pytest.raises(Unsupported):
        apply_checked(Qdisc("eth9", ("fq_codel",)), host)
    assert shell.calls > asked


def test_a_hosts_probe_tools_are_asked_once_a_session_and_again_after_a_reflash():
    from pytest_pinet.traffic.latency_probe import forget_probe_tools, probe_tools

    shell = CountingShell()
    host = cast(RemoteHost, shell)
    first = probe_tools(host)
    assert first[1]  # this machine's kernel names its clock
    assert probe_tools(host) == first and shell.calls == 1
    forget_probe_tools(host)
    assert probe_tools(host) == first and shell.calls == 2


def test_a_host_without_the_files_a_tunable_reads_is_not_asked_again(tmp_path):
    from pytest_pinet.errors import Unsupported
    from pytest_pinet.host.cpu_tunables import Governor
    from pytest_pinet.host.tunables import apply_checked

    class WithoutCpufreq(CountingShell):
        """This machine's shell, its CPUs in an empty directory: a board without cpufreq."""

        def run_shell(self, script: str, **options: Any) -> CommandResult:
            return super().run_shell(script.replace("/sys/devices/system/cpu", str(tmp_path)), **options)

    shell = WithoutCpufreq()
    host = cast(RemoteHost, shell)
    with pytest.raises(Unsupported, match="no cpufreq"):
        apply_checked(Governor("performance"), host)
    asked = shell.calls
    assert asked >= 1
    with pytest.raises(Unsupported, match="no cpufreq"):  # the next test's profile, the same setting
        apply_checked(Governor("performance"), host)
    assert shell.calls == asked
