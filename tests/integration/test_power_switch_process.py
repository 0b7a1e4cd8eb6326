"""The virtual rack's power switch as a real process on loopback, driven by labgrid's own
simplerest backend: its ports, its UART, its faults and the strategy's bound on a switch that
never answers (processes of their own: the integration tier; the rack's plans and files are
tests/unit/test_rack_parts.py's)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests
import yaml
from labgrid import Environment
from labgrid.driver.power import simplerest

from pytest_pinet.errors import LabFault
from pytest_pinet.lab.strategy import PinetBoardStrategy
from pytest_pinet.polling import wait_until
from pytest_pinet.virtlab import power_switch, rack

ROOT = Path(__file__).resolve().parents[2]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Rack:
    """A switch process on loopback: port 0 a "board" (a sleep standing for QEMU), port 1 a
    host whose on and off commands touch and remove a file."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}/api/poe/{{index}}/{{value}}"
        self.host_file = folder / "host-on"
        config = {
            "address": "127.0.0.1",
            "port": self.port,
            "ports": {
                "0": {"name": "qpi", "kind": "qemu", "argv": ["sleep", "600"], "log": str(folder / "q.log")},
                "1": {
                    "name": "pc",
                    "kind": "netns",
                    "on": ["touch", str(self.host_file)],
                    "off": ["rm", "-f", str(self.host_file)],
                    "on_at_start": True,
                },
            },
            "log": str(folder / "switch.log"),
            "tty_link": str(folder / "console-tty"),
            "uart_socket": str(folder / "uart.sock"),
            "ready": str(folder / "switch.pid"),
        }
        (folder / "switch.json").write_text(json.dumps(config))
        self.process = subprocess.Popen(
            [sys.executable, "-m", power_switch.__name__, str(folder / "switch.json")], cwd=ROOT
        )

        def listening() -> bool:
            if not (folder / "switch.pid").exists():
                return False
            with socket.socket() as s:
                return s.connect_ex(("127.0.0.1", self.port)) == 0

        wait_until(
            listening, timeout=20, pace=0.05, on_timeout=lambda: AssertionError("the switch did not start")
        )

    def fault(self, mode: str, times: int = 0) -> None:
        answer = requests.post(
            f"http://127.0.0.1:{self.port}/_pinet/fault", json={"mode": mode, "times": times}, timeout=5
        )
        answer.raise_for_status()

    def board_processes(self) -> list[int]:
        out = subprocess.run(["pgrep", "-P", str(self.process.pid), "sleep"], capture_output=True, text=True)
        return [int(p) for p in out.stdout.split()]


@pytest.fixture
def switch(tmp_path) -> Iterator[Rack]:
    made = Rack(tmp_path)
    yield made
    made.process.terminate()
    made.process.wait(timeout=10)


def test_simplerest_switches_the_board_and_a_host(switch):
    assert simplerest.power_get(switch.url, None, 0) is False  # the board starts dark
    assert simplerest.power_get(switch.url, None, 1) is True  # the hosts start powered
    simplerest.power_set(switch.url, None, 0, True)
    assert simplerest.power_get(switch.url, None, 0) is True
    (board,) = switch.board_processes()
    simplerest.power_set(switch.url, None, 0, False)
    assert not Path(f"/proc/{board}").exists() or Path(f"/proc/{board}/stat").read_text().split()[2] == "Z"
    simplerest.power_set(switch.url, None, 1, False)
    assert not switch.host_file.exists()
    simplerest.power_set(switch.url, None, 1, True)
    assert switch.host_file.exists()
    with pytest.raises(requests.HTTPError, match="404"):
        simplerest.power_set(switch.url, None, 7, True)


def test_faults_answer_500_then_recover_and_noboot_leaves_the_board_dark(switch):
    switch.fault("http500", times=1)
    with pytest.raises(requests.HTTPError, match="500"):
        simplerest.power_set(switch.url, None, 0, True)
    simplerest.power_set(switch.url, None, 0, False)  # one 500 only
    switch.fault("noboot")
    simplerest.power_set(switch.url, None, 0, True)
    assert simplerest.power_get(switch.url, None, 0) is True and switch.board_processes() == []
    switch.fault("none")
    answer = requests.post(f"http://127.0.0.1:{switch.port}/_pinet/fault", json={"mode": "melt"}, timeout=5)
    assert answer.status_code == 400 and "mode must be one of" in answer.text


def test_the_uart_carries_bytes_between_the_board_and_the_console_tty(switch):
    tty = os.open(os.readlink(switch.folder / "console-tty"), os.O_RDWR | os.O_NOCTTY)
    try:
        with socket.socket(socket.AF_UNIX) as board:
            board.connect(str(switch.folder / "uart.sock"))
            # The board's first line waits in the socket until the switch takes the connection;
            # once it is on the tty the switch has the board, so what is typed next reaches it.
            board.sendall(b"Linux version 6.1\r\n")
            got = b""
            deadline = time.monotonic() + 5
            while b"6.1" not in got and time.monotonic() < deadline:
                got += os.read(tty, 100)
            assert b"Linux version 6.1" in got
            os.write(tty, b"root\n")
            board.settimeout(5)
            assert board.recv(100) == b"root\n"
    finally:
        os.close(tty)


def _strategy_on(switch: Rack, tmp_path: Path) -> PinetBoardStrategy:
    env = tmp_path / "env.yaml"
    board = {
        "resources": {
            "NetworkService": {"address": "127.0.0.1", "username": "root", "port": 9},
            "NetworkPowerPort": {"model": "simplerest", "host": switch.url, "index": "1"},
        },
        "drivers": {"NetworkPowerDriver": {"delay": 0.0}},
    }
    env.write_text(yaml.safe_dump({"targets": {"board": board}}))
    target = Environment(config_file=str(env)).get_target("board")
    strategy = PinetBoardStrategy(target, "pinet-strategy")
    strategy.power_timeout = 2.0
    return strategy


def test_a_switch_that_fails_or_never_answers_is_a_power_switch_fault(switch, tmp_path):
    strategy = _strategy_on(switch, tmp_path)
    switch.fault("http500", times=1)
    with pytest.raises(LabFault) as fault:
        strategy.transition("off")
    assert fault.value.category == "power-switch" and "500" in str(fault.value)
    assert fault.value.host == "board"
    strategy.transition("off")
    assert not switch.host_file.exists()
    switch.fault("silent", times=1)
    started = time.monotonic()
    with pytest.raises(LabFault) as fault:
        strategy.transition("on")
    assert fault.value.category == "power-switch" and "no answer within 2 s" in str(fault.value)
    assert time.monotonic() - started < 5
    switch.process.kill()
    switch.process.wait()
    with pytest.raises(LabFault) as fault:
        strategy.transition("on")
    assert fault.value.category == "power-switch" and "ConnectionError" in str(fault.value)


def test_a_stopped_process_that_is_nobody_s_to_reap_counts_as_gone():
    """An exporter a test restarted is that test's child: stopped, it stays a zombie until
    the test reaps it, and ``pinet lab down`` (another process) waited out 10 s for it."""
    _alive = rack._alive
    child = subprocess.Popen(["sleep", "30"])
    try:
        assert _alive(child.pid)
        child.kill()
        assert wait_until(lambda: not _alive(child.pid), timeout=5, pace=0.02)
        assert Path(f"/proc/{child.pid}").exists()  # not yet reaped: a zombie, not gone
    finally:
        child.kill()
        child.wait()
    assert not _alive(child.pid) and not _alive(0)
