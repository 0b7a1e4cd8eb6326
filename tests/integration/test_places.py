"""One place per xdist worker: virtual places, and places reserved from a real labgrid
coordinator with a real exporter, released on every way out (end, Ctrl-C, a killed worker)
and across a coordinator restart."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from pytest_pinet.lab.coordinator import Client, client_program
from pytest_pinet.polling import wait_until
from pytest_pinet.virtlab import virtual_lab
from pytest_pinet.virtlab.topology import LabSpec

ROOT = Path(__file__).resolve().parents[2]
SUITE = "pytest_pinet/suite/test_ethernet.py::test_tcp_half_duplex_goodput"


def _facts(results: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for p in results.glob("2*/facts.jsonl") for line in p.read_text().splitlines()]


def _measurements(results: Path) -> list[dict[str, Any]]:
    return [
        json.loads(line) for p in results.glob("2*/measurements.jsonl") for line in p.read_text().splitlines()
    ]


def _taken(results: Path) -> list[dict[str, Any]]:
    return [f for f in _facts(results) if f["kind"] == "place" and f["event"] == "taken"]


def _pytest(*args: str, results: Path, env: dict[str, str]) -> subprocess.Popen[str]:
    argv = [
        sys.executable,
        "-m",
        "pytest",
        SUITE,
        "-n",
        "2",
        "--pinet-results",
        str(results),
        "--pinet-duration",
        "5",
        # Two workers measure GbE at once on a machine of two CPUs: goodput is not what
        # these runs check, so the floor only catches a collapse.
        "--pinet-thresholds",
        str(Path(__file__).with_name("fault-thresholds.yaml")),
        "-p",
        "no:cacheprovider",
        "-q",
        *args,
    ]
    return subprocess.Popen(
        argv,
        cwd=ROOT,
        env={**os.environ, **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        # A run started in the background by a shell inherits SIGINT ignored, and Python then
        # never turns Ctrl-C into KeyboardInterrupt: give the run the default disposition.
        preexec_fn=_default_sigint,
    )


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _skip_under_xdist() -> None:
    # Namespace names are machine-wide: an outer `pytest -n N` run's workers use places
    # pinet1..pinetN themselves, which these tests build, use and remove.
    if os.environ.get("PYTEST_XDIST_WORKER"):
        pytest.skip("builds places pinet1 and pinet2, which this xdist run's own workers use")


def _wait_for(condition, timeout: float, what: str) -> None:
    wait_until(
        condition,
        timeout=timeout,
        pace=0.2,
        on_timeout=lambda: AssertionError(f"timed out waiting for {what}"),
    )


@pytest.fixture
def state_root(root_required, tmp_path) -> Iterator[Path]:
    _skip_under_xdist()
    root = tmp_path / "state"
    yield root
    for number in (1, 2):
        virtual_lab.down(LabSpec(name=f"pinet{number}", state_root=root))


def test_each_xdist_worker_gets_its_own_virtual_place(state_root, tmp_path):
    results = tmp_path / "results"
    run = _pytest(results=results, env={"PINET_STATE_DIR": str(state_root)})
    out, _ = run.communicate(timeout=600)
    assert run.returncode == 0, out[-3000:]
    taken = _taken(results)
    assert sorted(f["worker"] for f in taken) == ["gw0", "gw1"]
    assert sorted(f["place"] for f in taken) == ["pinet1", "pinet2"]
    # Each place's measurements came from one worker's place; every place was built, used
    # and torn down by the run.
    labs = {m["context"]["lab"] for m in _measurements(results)}
    assert labs <= {"pinet1", "pinet2"} and labs
    assert not virtual_lab.namespaces("pinet1-") and not virtual_lab.namespaces("pinet2-")
    assert not any(state_root.glob("*.lock"))


# --- a real labgrid coordinator and exporter offering two virtual places ---------------------


@dataclass
class Coordinator:
    """labgrid-coordinator with its state in ``workdir``, and an exporter kept running."""

    address: str
    workdir: Path
    places_dir: Path
    process: subprocess.Popen[bytes] | None = None
    exporter: subprocess.Popen[bytes] | None = None
    stopping: bool = False

    def start(self) -> None:
        coordinator = Path(client_program()).with_name("labgrid-coordinator")
        self.process = subprocess.Popen(
            [str(coordinator), "-l", self.address],
            cwd=self.workdir,
            stdout=subprocess.DEVNULL,
            stderr=(self.workdir / "coordinator.log").open("ab"),
        )
        host, port = self.address.split(":")
        _wait_for(lambda: _listening(host, int(port)), 30, "the coordinator to listen")

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def keep_exporter(self) -> None:
        """The exporter exits when its coordinator goes away; restart it, as systemd would."""
        exporter = Path(client_program()).with_name("labgrid-exporter")
        argv = [str(exporter), "-c", self.address, "-n", "pinet", "--hostname", "127.0.0.1"]
        while not self.stopping:
            self.exporter = subprocess.Popen(
                [*argv, str(self.places_dir.parent / "exporter.yaml")],
                stdout=subprocess.DEVNULL,
                stderr=(self.workdir / "exporter.log").open("ab"),
            )
            self.exporter.wait()
            time.sleep(0.5)  # pacing: a restarting exporter's backoff, as a service manager's

    def resources(self) -> int:
        out = Client(self.address, patience=0).run(["resources"], check=False)
        return len([line for line in out.splitlines() if "NetworkService" in line])

    def held(self) -> str:
        client = Client(self.address, patience=30)
        return client.run(["who"], check=False) + client.run(["reservations"], check=False)


def _listening(host: str, port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex((host, port)) == 0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def coordinator(root_required, tmp_path_factory) -> Iterator[Coordinator]:
    _skip_under_xdist()
    base = tmp_path_factory.mktemp("coordinator")
    state = base / "state"
    specs = [LabSpec(name=f"pinet{n}", state_root=state) for n in (1, 2)]
    for spec in specs:
        virtual_lab.down(spec)
        virtual_lab.up(spec)
    (base / "coordinator").mkdir()
    service = Coordinator(f"127.0.0.1:{_free_port()}", base / "coordinator", base / "export" / "places")
    service.start()
    keeper = threading.Thread(target=service.keep_exporter, daemon=True)
    try:
        pinet = [sys.executable, "-m", "pytest_pinet.cli", "lab", "export", "--places", "2"]
        subprocess.run(
            [
                *pinet,
                "--state-root",
                str(state),
                "--out",
                str(base / "export"),
                "--coordinator",
                service.address,
            ],
            check=True,
            cwd=ROOT,
            capture_output=True,
        )
        keeper.start()
        _wait_for(lambda: service.resources() == 6, 60, "the exporter's six NetworkServices")
        yield service
    finally:
        service.stopping = True
        if service.exporter is not None:
            service.exporter.terminate()
        service.stop()
        keeper.join(timeout=10)
        for spec in specs:
            virtual_lab.down(spec)


def _coordinated(coordinator: Coordinator, results: Path, *extra: str) -> subprocess.Popen[str]:
    return _pytest(
        "--pinet-coordinator",
        coordinator.address,
        "--pinet-place-tags",
        "pinet=virtual",
        "--pinet-lab",
        str(coordinator.places_dir),
        *extra,
        results=results,
        env={},
    )


# Two workers reserving two places, measuring and giving both back: the rehearsal's night
# through a coordinator does that on the lab's own install (test_rehearsal.py).


def test_a_killed_worker_s_place_is_released_by_the_controller(coordinator, tmp_path):
    results = tmp_path / "results"
    run = _coordinated(coordinator, results, "--max-worker-restart", "0")
    _wait_for(lambda: len(_taken(results)) == 2, 120, "both workers to take a place")
    victim = next(f for f in _taken(results) if f["worker"] == "gw1")
    os.kill(victim["pid"], signal.SIGKILL)
    out, _ = run.communicate(timeout=600)
    assert "crashed" in out or "worker 'gw1'" in out or "gw1" in out, out[-3000:]
    leftovers = [f for f in _facts(results) if f["kind"] == "place" and f["event"] == "released-leftover"]
    assert [f["place"] for f in leftovers] == [victim["place"]]
    held = coordinator.held()
    assert "pinet1" not in held and "pinet2" not in held, held


def test_ctrl_c_releases_every_place(coordinator, tmp_path):
    results = tmp_path / "results"
    run = _coordinated(coordinator, results)
    _wait_for(lambda: len(_taken(results)) == 2, 120, "both workers to take a place")
    run.send_signal(signal.SIGINT)
    out, _ = run.communicate(timeout=300)
    assert run.returncode != 0  # interrupted
    held = coordinator.held()
    assert "pinet1" not in held and "pinet2" not in held, held + out[-2000:]


def test_coordinator_restart_mid_run_is_a_recorded_lab_fault(coordinator, tmp_path):
    # The coordinator saves its places every 15 s and forgets acquisitions on restart.
    _wait_for(
        lambda: (
            (coordinator.workdir / "places.yaml").exists()
            and "pinet2" in (coordinator.workdir / "places.yaml").read_text()
        ),
        60,
        "the coordinator to save its places",
    )
    results = tmp_path / "results"
    run = _coordinated(coordinator, results)
    _wait_for(lambda: len(_taken(results)) == 2 and _measurements(results), 180, "a first measurement")
    coordinator.stop()
    coordinator.start()
    out, _ = run.communicate(timeout=600)
    assert run.returncode == 0, out[-3000:]  # the tests themselves do not depend on it
    faults = [f for f in _facts(results) if f["kind"] == "lab-fault"]
    assert faults and {f["category"] for f in faults} == {"coordinator"}, faults
    assert len(_measurements(results)) == 2  # both passing tests measured; nothing lost
    _wait_for(lambda: coordinator.resources() == 6, 60, "the exporter to come back")
    held = coordinator.held()
    assert "pinet1" not in held and "pinet2" not in held, held
