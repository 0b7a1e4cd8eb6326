"""Lab faults injected into a real run of the suite on the namespace lab.

Each case runs two half-duplex tests in a pytest subprocess against lab ``pinet71`` and
breaks the lab while the *second* one measures: sshd killed, the board's cable down, the
board hung (every process stopped), the iperf3 server taken by a foreign client (busy) or
stopped (stale), and a power command that fails.  Expected of every case: the fault is a
categorized lab fault kept in the run's facts with its evidence, recovered by a power-cycle
and one retry where a power-cycle can help, the run goes on to its end, and the measurement
taken before the fault is in the results file, the store and the Allure results.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from pytest_pinet.polling import wait_until
from pytest_pinet.virtlab import virtual_lab
from pytest_pinet.virtlab.topology import LabSpec

ROOT = Path(__file__).resolve().parents[2]
# These runs are about fault handling: a floor far below GbE, so that a shared machine's
# slow moment cannot fail a test the fault did not touch.
FAULT_THRESHOLDS = Path(__file__).with_name("fault-thresholds.yaml")
TESTS = [
    "pytest_pinet/suite/test_ethernet.py::test_tcp_half_duplex_goodput[board-pi-board->peer-stock]",
    "pytest_pinet/suite/test_ethernet.py::test_tcp_half_duplex_goodput[board-pi-peer->board-stock]",
]


@pytest.fixture(scope="module")
def fault_lab(root_required, tmp_path_factory) -> Iterator[LabSpec]:
    spec = LabSpec(name="pinet71", state_root=tmp_path_factory.mktemp("faults") / "state")
    virtual_lab.down(spec)
    virtual_lab.up(spec)
    yield spec
    virtual_lab.down(spec)


@pytest.fixture
def healthy_lab(fault_lab: LabSpec) -> Iterator[LabSpec]:
    """The lab, every host switched on again after a case (a failed recovery leaves it dark)."""
    yield fault_lab
    remove_orphaned_run_files()
    for host in fault_lab.hosts:
        netns = fault_lab.netns(host.name)
        for pid in virtual_lab.netns_pids(netns):
            os.kill(pid, signal.SIGCONT)
        virtual_lab.power(fault_lab, host.name, "off")
        virtual_lab.power(fault_lab, host.name, "on")


def remove_orphaned_run_files() -> None:
    """A client or server killed by a fault never ran its own `rm`: a real board's reboot
    would wipe its /tmp, but the namespaces share this machine's."""
    for pid_file in Path("/tmp").glob("pinet-iperf3*.pid"):
        with contextlib.suppress(OSError, ValueError):
            if Path(f"/proc/{int(pid_file.read_text().strip() or 0)}").exists():
                continue
            pid_file.unlink()
            pid_file.with_suffix(".json").unlink(missing_ok=True)
    for log in Path("/tmp").glob("pinet-iperf3-*.json"):
        if not log.with_suffix(".pid").exists():
            log.unlink(missing_ok=True)


def pids_in(netns: str) -> list[tuple[int, str]]:
    """(pid, command line) of processes in ``netns``, read from /proc (fast enough to race)."""
    inode = os.stat(f"/run/netns/{netns}").st_ino
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            if os.stat(f"/proc/{entry}/ns/net").st_ino != inode:
                continue
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode().strip()
        except OSError:
            continue
        found.append((int(entry), cmdline))
    return found


@dataclass
class Injector:
    """Waits until the first test's measurement is recorded and the second one's iperf3 runs
    (``trigger``), then breaks the lab (``action``), once."""

    spec: LabSpec
    results: Path
    trigger: Callable[[LabSpec], bool]
    action: Callable[[LabSpec], str]
    done: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def measurements(self) -> int:
        return sum(len(p.read_text().splitlines()) for p in self.results.glob("*/measurements.jsonl"))

    def run(self, deadline: float) -> None:
        wait_until(lambda: self.measurements() >= 1, timeout=deadline - time.monotonic(), pace=0.05)

        def triggered() -> bool:
            try:
                if self.trigger(self.spec):
                    self.done.append(self.action(self.spec))
                    return True
            except (OSError, LookupError) as exc:  # a process ended while being looked at
                self.errors.append(repr(exc))
            return False

        wait_until(triggered, timeout=deadline - time.monotonic(), pace=0.002)


def client_running(spec: LabSpec) -> bool:
    return any(cmd.startswith("iperf3 -c") for host in ("pi", "pc") for _, cmd in pids_in(spec.netns(host)))


def after_warmup(check: Callable[[LabSpec], bool], seconds: float = 2.0) -> Callable[[LabSpec], bool]:
    """``check`` first true, then ``seconds`` later: the fault lands mid-measurement."""
    seen: list[float] = []

    def trigger(spec: LabSpec) -> bool:
        if not seen and check(spec):
            seen.append(time.monotonic())
        return bool(seen) and time.monotonic() - seen[0] >= seconds

    return trigger


def kill_sshd(spec: LabSpec) -> str:
    killed = [pid for pid, cmd in pids_in(spec.netns("pi")) if cmd.startswith("sshd")]
    for pid in killed:
        os.kill(pid, signal.SIGKILL)
    return f"killed {len(killed)} sshd processes of pi"


def cable_down(spec: LabSpec) -> str:
    subprocess.run(["ip", "-n", spec.netns("pi"), "link", "set", "eth0", "down"], check=True)
    return "pi eth0 down"


def hang_board(spec: LabSpec) -> str:
    stopped = [pid for pid, _ in pids_in(spec.netns("pi"))]
    for pid in stopped:
        os.kill(pid, signal.SIGSTOP)
    return f"stopped all {len(stopped)} processes of pi"


def iperf3_servers(spec: LabSpec) -> dict[int, tuple[str, int]]:
    """pid -> (netns, port) of every running `iperf3 -s -1` of the run."""
    found = {}
    for host in ("pi", "pc"):
        for pid, cmd in pids_in(spec.netns(host)):
            parts = cmd.split()
            if parts[:3] == ["iperf3", "-s", "-1"] and "-p" in parts:
                found[pid] = (spec.netns(host), int(parts[parts.index("-p") + 1]))
    return found


class NewServer:
    """Trigger: a server started after the first test's (whose server may still be exiting)."""

    def __init__(self) -> None:
        self.earlier: set[int] | None = None
        self.found: tuple[str, int] | None = None

    def __call__(self, spec: LabSpec) -> bool:
        servers = iperf3_servers(spec)
        if self.earlier is None:
            self.earlier = set(servers)
        fresh = [where for pid, where in servers.items() if pid not in self.earlier]
        self.found = fresh[0] if fresh else None
        return self.found is not None


# The foreign client's shell: told the port, it connects, again while refused (the server's
# process is seen before it listens), every 10 ms for up to 2 s.
GRAB = """read port || exit 0
tries=0
until iperf3 -c "$1" -p "$port" -t 30 >"$2" 2>&1 || ! grep -q "Connection refused" "$2"; do
    tries=$((tries + 1))
    [ "$tries" -ge 200 ] && exit 0
    sleep 0.01
done
"""


class ServerGrabber:
    """A foreign iperf3 client, ready in both namespaces before the run, that takes the run's
    fresh server the moment it listens.

    The run's own client follows its server by one SSH round trip; a client started then by
    ``ip netns exec`` (a mount namespace, /sys, then iperf3) lost that race on a loaded CI
    machine.  Each waiting shell is already inside its namespace and only runs iperf3 once
    told the port.  The server is seen by its process, which may not listen yet: a refused
    connection is tried again, every 10 ms for up to 2 s (on a slower machine one foreign
    client was refused and the run went by unfaulted).  Its output says whether it won: a
    client that never connected, or met the run's client first ("busy"), lost, and the case
    is then tried again, not judged.
    """

    def __init__(self, spec: LabSpec, logs: Path, trigger: NewServer) -> None:
        self.spec = spec
        self.logs = logs
        self.trigger = trigger
        self.waiting: dict[str, subprocess.Popen[str]] = {}
        self.used = ""

    def __enter__(self) -> ServerGrabber:
        for host, peer_side in (("pi", "pc"), ("pc", "pi")):
            # The shell in ``host``'s namespace reaches the server on the other end of the link.
            address = self.spec.link_address(self.spec.links[0], "peer" if peer_side == "pc" else "board")
            log = self.logs / f"grabber-{host}.log"
            self.waiting[self.spec.netns(peer_side)] = subprocess.Popen(
                ["ip", "netns", "exec", self.spec.netns(host), "sh", "-c", GRAB, "grab", address, str(log)],
                stdin=subprocess.PIPE,
                text=True,
                start_new_session=True,  # its iperf3 is killed with it (__exit__)
            )
        return self

    def __call__(self, spec: LabSpec) -> str:
        """Send the new server's port to the shell on the other side of its namespace."""
        assert self.trigger.found is not None
        netns, port = self.trigger.found
        shell = self.waiting[netns]
        assert shell.stdin is not None
        shell.stdin.write(f"{port}\n")
        shell.stdin.flush()
        self.used = netns
        return f"foreign client took the server in {netns} on port {port}"

    def lost(self) -> bool:
        """The foreign client never took the server: refused until the run's had it, or it
        met the run's own client already there ("busy")."""
        logs = " ".join(p.read_text() for p in self.logs.glob("grabber-*.log"))
        return "busy" in logs or "connected to" not in logs

    def __exit__(self, *exc: object) -> None:
        for shell in self.waiting.values():
            with contextlib.suppress(OSError, ValueError):
                if shell.stdin is not None:
                    shell.stdin.close()
            with contextlib.suppress(OSError):
                os.killpg(shell.pid, signal.SIGKILL)
            shell.wait(timeout=10)


def stop_server(spec: LabSpec) -> str:
    """The run's iperf3 server stops answering mid-run (a stale server)."""
    for host in ("pi", "pc"):
        for pid, cmd in pids_in(spec.netns(host)):
            if cmd.startswith("iperf3 -s -1"):
                os.kill(pid, signal.SIGSTOP)
                return f"stopped iperf3 server {pid} on {host}"
    raise AssertionError("no iperf3 server to stop")


def run_with_fault(spec: LabSpec, tmp: Path, trigger, action, env_file: Path | None = None) -> dict[str, Any]:
    results = tmp / "results"
    allure_dir = tmp / "allure"
    junit = tmp / "junit.xml"
    argv = [
        sys.executable,
        "-m",
        "pytest",
        *TESTS,
        "--pinet-lab",
        str(env_file or spec.env_file),
        "--pinet-results",
        str(results),
        "--pinet-db",
        f"sqlite:///{results / 'pinet.sqlite'}",
        # Adaptive, as a lab runs (an env file is a hardware lab: its defaults are set here):
        # at most 1 + 6 s, a healthy run ends once settled (about 4.5 s); the fault lands 2 s
        # after the client starts, mid-run, and a receiver that stops receiving is found
        # stalled three readings later, by 6.4 s, inside the planned 7 s (a stopped server's
        # sockets fill their buffers first: with 6 s planned, one trial's stall came 0.4 s late).
        "--pinet-duration",
        "6",
        "--pinet-omit",
        "1",
        "--pinet-adaptive-min",
        "3",
        "--pinet-remeasure",
        "0",
        "--pinet-thresholds",
        str(FAULT_THRESHOLDS),
        "--alluredir",
        str(allure_dir),
        "-p",
        "no:cacheprovider",
        "-p",
        "no:randomly",
        f"--junitxml={junit}",
        "-q",
    ]
    injector = Injector(spec, results, trigger, action)
    thread = threading.Thread(target=injector.run, args=(time.monotonic() + 240,), daemon=True)
    thread.start()
    env = {**os.environ, "PINET_STATE_DIR": str(spec.state_root)}
    done = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    thread.join(timeout=5)
    assert injector.done, f"the fault was never injected:\n{done.stdout[-3000:]}"
    (run_dir,) = list(results.glob("2*"))
    facts = [json.loads(line) for line in (run_dir / "facts.jsonl").read_text().splitlines()]
    measurements = [json.loads(line) for line in (run_dir / "measurements.jsonl").read_text().splitlines()]
    with sqlite3.connect(results / "pinet.sqlite") as db:
        stored = db.execute("select test_id, goodput_mbps from measurements").fetchall()
    outcomes = {case.get("name"): case for case in ET.parse(junit).getroot().iter("testcase")}
    allure_results = [json.loads(p.read_text()) for p in allure_dir.glob("*-result.json")]
    return {
        "stdout": done.stdout,
        "faults": [f for f in facts if f["kind"] == "lab-fault"],
        "measurements": measurements,
        "stored": stored,
        "junit": outcomes,
        "allure": allure_results,
        "injected": injector.done[0],
    }


def assert_nothing_lost(outcome: dict[str, Any], first_test: str) -> None:
    """The measurement taken before the fault is in the results file, the store and Allure."""
    before = [m for m in outcome["measurements"] if m["test_id"].endswith(first_test)]
    assert before and before[0]["goodput_mbps"] > 100
    assert any(test_id.endswith(first_test) for test_id, _ in outcome["stored"])
    assert len(outcome["stored"]) == len(outcome["measurements"])
    reported = [r for r in outcome["allure"] if r["name"].endswith(first_test.split("::")[-1])]
    assert reported and reported[0]["status"] == "passed"


def assert_recovered(outcome: dict[str, Any], categories: set[str]) -> None:
    assert outcome["faults"], outcome["stdout"][-3000:]
    fault = outcome["faults"][0]
    assert fault["category"] in categories, fault
    assert fault["recovered"] is True, fault
    assert "power-cycled" in fault["action"]
    assert fault["evidence"], "no evidence collected"
    # Both tests passed: the faulty one on its retry, and the run went on.
    assert len(outcome["measurements"]) == 2, outcome["stdout"][-3000:]
    assert all(
        case.find("failure") is None and case.find("error") is None for case in outcome["junit"].values()
    )
    evidence = [
        a
        for r in outcome["allure"]
        for a in r.get("attachments", [])
        if a["name"].startswith("lab fault:") and "recovered" in a["name"]
    ]
    assert evidence, "the fault's evidence is not attached to the report"
    assert "lab faults: 1" in outcome["stdout"]


FIRST = TESTS[0].split("::")[-1]


# Which category a fault gets depends on which end notices first (the board's SSH, or the
# peer's iperf3 cut short): each case accepts that family, and only that.
CUT_SHORT = {"iperf3-output", "iperf3-interrupted", "iperf3-iperf3", "iperf3-stalled", "timeout"}
MID_RUN_FAULTS = {
    "sshd-killed": (kill_sshd, {"ssh-dropped", "ssh", "unreachable", "timeout"}),
    "cable-down": (cable_down, {"iperf3-connect", *CUT_SHORT}),
    "board-hung": (hang_board, {"ssh-dropped", "ssh", "unreachable", *CUT_SHORT}),
    "iperf3-server-stale": (stop_server, {"iperf3-control-socket", *CUT_SHORT}),
}


@pytest.mark.parametrize("fault", sorted(MID_RUN_FAULTS))
def test_fault_mid_run_is_recovered(healthy_lab, tmp_path, fault):
    action, categories = MID_RUN_FAULTS[fault]
    outcome = run_with_fault(healthy_lab, tmp_path, after_warmup(client_running), action)
    assert_recovered(outcome, categories)
    assert_nothing_lost(outcome, FIRST)


def test_busy_iperf3_server_is_recovered(healthy_lab, tmp_path):
    for attempt in range(3):
        trigger = NewServer()
        logs = tmp_path / f"attempt-{attempt}"
        logs.mkdir()
        with ServerGrabber(healthy_lab, logs, trigger) as grabber:
            outcome = run_with_fault(healthy_lab, logs, trigger, grabber)
        if not grabber.lost():
            break
        remove_orphaned_run_files()
    else:
        pytest.fail("three times the run's own client reached its server before the foreign one")
    assert_recovered(outcome, {"iperf3-server-busy"})
    assert_nothing_lost(outcome, FIRST)


def test_failing_power_command_ends_as_an_unrecovered_lab_fault(healthy_lab, tmp_path):
    data = yaml.safe_load(healthy_lab.env_file.read_text())
    data["targets"]["pi"]["drivers"]["ExternalPowerDriver"]["cmd_on"] = "sh -c 'echo relay stuck >&2; exit 3'"
    broken_env = tmp_path / "env-broken-power.yaml"
    broken_env.write_text(yaml.safe_dump(data))
    outcome = run_with_fault(healthy_lab, tmp_path, after_warmup(client_running), kill_sshd, broken_env)
    first = outcome["faults"][0]
    assert first["recovered"] is False
    assert first["action"].startswith("power-cycle failed")
    assert "relay stuck" in first["action"] or "exit" in first["action"]
    failed = [case for case in outcome["junit"].values() if case.find("failure") is not None]
    assert len(failed) == 1
    assert "lab fault (recovery-failed)" in failed[0].find("failure").get("message", "")
    assert "not a regression" in failed[0].find("failure").get("message", "")
    broken = [r for r in outcome["allure"] if r["status"] == "broken"]
    assert len(broken) == 1  # Allure shows the lab's failure as broken, not as a failed test
    assert_nothing_lost(outcome, FIRST)
