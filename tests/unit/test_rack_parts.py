"""The virtual rack's parts without a lab: the env and exporter files against rpi-lab.yaml's
shape, and a stalled boot asked on its console (the power switch as a process of its own is
tests/integration/test_power_switch_process.py's)."""

from __future__ import annotations

from typing import Any

import yaml

from pytest_pinet.lab.strategy import STALLED_BOOT_QUESTION, PinetBoardStrategy
from pytest_pinet.virtlab import envfile, qemu_board, rack
from pytest_pinet.virtlab.coordinator_export import exporter_config
from tests.fixture_paths import EXAMPLE_ENV

from .test_qemu_parts import _image
from .test_qemu_parts import spec as spec  # the QEMU lab plan, as a fixture here too


def _rpi_lab() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(EXAMPLE_ENV.read_text())
    return data


def test_the_rack_env_has_the_hardware_lab_s_drivers_and_resources(spec, tmp_path):
    (spec.state_dir / "known_hosts").write_text("")
    envfile.write_env_file(spec, {"usb-disk": qemu_board.USB_DISK_DEVICE}, _image(tmp_path))
    env = rack.rack_env(spec)
    pi4 = _rpi_lab()["targets"]["pi4"]
    qpi = env["targets"]["qpi"]
    assert qpi["resources"] == {"RemotePlace": {"name": "pinet3"}}
    # Power and console as rpi-lab.yaml's Pi; the card's mux is the lab's emulation of its USB-SD-Mux.
    hardware = set(pi4["drivers"]) - {"USBSDMuxDriver", "USBStorageDriver"}
    assert hardware <= set(qpi["drivers"]) and "QEMUDriver" not in qpi["drivers"]
    assert {"PinetSDMuxDriver", "PinetSDCardDriver", "ShellDriver"} <= set(qpi["drivers"])
    assert qpi["drivers"]["NetworkPowerDriver"]["bindings"] == {"port": "qpi-power"}
    peers = [h.name for h in spec.hosts if h.role != "board"]
    for peer in peers:
        power = {"NetworkPowerDriver": {"delay": 2.0, "bindings": {"port": f"{peer}-power"}}}
        assert env["targets"][peer]["drivers"] == power
    assert "tools" not in env and env["pinet"]["lab"] == "pinet3"
    (group,) = exporter_config([spec], resources=rack.rack_resources).values()
    classes = {name: entry["cls"] for name, entry in group.items() if isinstance(entry, dict)}
    assert set(pi4["resources"]) - {"USBSDMuxDevice"} <= set(classes.values())
    assert classes["qpi-sd-card"] == "PinetSDCard"
    ports = {name: entry["index"] for name, entry in group.items() if name.endswith("-power")}
    assert ports == {"qpi-power": "0", **{f"{peer}-power": str(n) for n, peer in enumerate(peers, 1)}}
    assert group["qpi-power"]["host"] == "http://10.203.3.2:80/api/poe/{index}/{value}"
    assert "accepter: telnet(rfc2217),tcp,10.203.3.2,4001" in rack.ser2net_config(spec)


class _Shell:
    """A console shell as labgrid's ShellDriver answers: lines out, lines err, exit code."""

    def __init__(self, fails: bool = False) -> None:
        self.login_timeout = 300
        self.fails = fails
        self.asked: list[tuple[str, int]] = []

    def run(self, command: str, timeout: int = 30) -> tuple[list[str], list[str], int]:
        self.asked.append((command, self.login_timeout))
        if self.fails:
            raise TimeoutError("no login prompt")
        return (
            ["JOB UNIT                       TYPE  STATE", "7  ssh.service              start waiting"],
            [],
            0,
        )


def _stalled(console: str, shell: Any) -> Any:
    from types import SimpleNamespace

    return SimpleNamespace(
        shell=shell,
        console_log=console,
        target=SimpleNamespace(activate=lambda _driver: None),
        _drain_console=lambda: None,
    )


def test_a_stalled_boot_is_asked_on_its_console_what_systemd_waits_for():
    """A QEMU board came up with its network and no sshd, and the next cycle overwrote the
    only clue: the console is asked, with a short login bound, and the bound restored."""
    shell = _Shell()
    said = PinetBoardStrategy._stalled_boot_says(_stalled("Booting from ROM...\r\n", shell))
    assert "systemd on the console" in said and "ssh.service" in said and "start waiting" in said
    assert shell.asked == [(STALLED_BOOT_QUESTION, 10)] and shell.login_timeout == 300
    failing = _Shell(fails=True)
    said = PinetBoardStrategy._stalled_boot_says(_stalled("Booting from ROM...\r\n", failing))
    assert "console shell: none (TimeoutError: no login prompt)" in said and failing.login_timeout == 300


def test_a_silent_console_is_not_asked():
    shell = _Shell()
    said = PinetBoardStrategy._stalled_boot_says(_stalled("", shell))
    assert "not asked" in said and shell.asked == []
    assert PinetBoardStrategy._stalled_boot_says(_stalled("text", None)) == ""
