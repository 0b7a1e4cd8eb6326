"""The virtual rack: the QEMU board reached the way a hardware Pi is.

``pinet lab up --board qemu --rack --coordinator HOST:PORT`` adds, beside the lab's hosts, a
namespace ``pinetN-rack`` on the management network holding what a hardware lab's rack holds:

- a network power switch (``power_switch.py``, labgrid's ``simplerest`` model): port 0 powers
  the QEMU board, the next ports the namespace hosts;
- a console server: ``ser2net`` on the board's UART, offered as RFC 2217 on TCP port 4001;

and, on this machine, a ``labgrid-exporter`` publishing the power ports, the console, the SD
card (the lab's mux emulation) and every host's ``NetworkService`` as one place to the
coordinator.  The env file the run uses (``rack/places/pinetN.yaml``) has the shape of
``lab/rpi-lab.yaml``: ``NetworkPowerDriver``, ``SerialDriver``, ``ShellDriver`` and the
SD mux drivers over a ``RemotePlace``, so a test run reaches the board only through the place
it acquired.

``pinet lab down`` needs no record of this: the switch, ser2net and QEMU run in the lab's
namespaces and die with them; the exporter is stopped by the pid file in the state directory.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from ..errors import PinetError
from ..lab.coordinator import Client, client_program
from ..polling import wait_until
from . import envfile, qemu_board, system
from .coordinator_export import env_through_place, exporter_config, register_places
from .topology import LabSpec

RACK = "rack"
SWITCH_PORT = 80
CONSOLE_PORT = 4001
TAGS = ("pinet=rack",)


def rack_dir(spec: LabSpec) -> Path:
    """The rack's state: switch config and log, ser2net's config, exporter and env files."""
    return spec.state_dir / RACK


def netns(spec: LabSpec) -> str:
    return spec.netns(RACK)


def address(spec: LabSpec) -> str:
    """The rack's management address (the hosts are .10 and up, this machine .1)."""
    return f"10.203.{spec.index}.2"


def switch_url(spec: LabSpec) -> str:
    """The ``host`` of every NetworkPowerPort (simplerest fills in index and value)."""
    return f"http://{address(spec)}:{SWITCH_PORT}/api/poe/{{index}}/{{value}}"


def exporter_name(spec: LabSpec) -> str:
    return f"{spec.name}-rack"


def env_file(spec: LabSpec) -> Path:
    """The RemotePlace env file of the rack's place (the directory --pinet-lab takes)."""
    return rack_dir(spec) / "places" / f"{spec.name}.yaml"


def port_index(spec: LabSpec, host: str) -> int:
    """The switch port of ``host``: the board on 0, the others in the lab's order."""
    order = [spec.board_host.name] + [h.name for h in spec.hosts if h.role != "board"]
    return order.index(host)


def up(spec: LabSpec, coordinator: str, ip: Any) -> Path:
    """Build the rack of a QEMU lab that is up, register its place; return the run's env file.

    ``ip`` is the lab's ``ip`` runner.
    """
    if not spec.is_qemu:
        raise PinetError("the virtual rack powers a QEMU board: use --board qemu with --rack")
    if not coordinator:
        raise PinetError("the virtual rack publishes through a coordinator: give --coordinator HOST:PORT")
    system.require_tools(("ser2net",))
    if env_file(spec).exists() and listening(spec, CONSOLE_PORT):
        return env_file(spec)  # up already (``pinet lab up`` is idempotent)
    folder = rack_dir(spec)
    folder.mkdir(mode=0o700, exist_ok=True)
    plumb(spec, ip)
    _start_switch(spec)
    _start_ser2net(spec)
    (folder / "exporter.yaml").write_text(
        yaml.safe_dump(
            exporter_config([spec], "virtual rack of {name} on this machine", rack_resources), sort_keys=False
        )
    )
    start_exporter(spec, coordinator)
    _register(spec, coordinator)
    env_file(spec).parent.mkdir(exist_ok=True)
    env_file(spec).write_text(
        "# The virtual rack's place, written by `pinet lab up --rack`: the shape of rpi-lab.yaml.\n"
        + yaml.safe_dump(rack_env(spec), sort_keys=False),
        encoding="utf-8",
    )
    (folder / "coordinator").write_text(coordinator, encoding="utf-8")
    return env_file(spec)


def plumb(spec: LabSpec, ip: Any, addresses: list[str] | None = None) -> None:
    """The rack's namespace on the lab's management network, at ``addresses`` (a twin's rack
    answers at each address its env file gives a power device or console server)."""
    ns = netns(spec)
    ip("netns", "add", ns)
    ip("link", "set", "lo", "up", netns=ns)
    veth = spec.mgmt_veth(RACK)
    ip("link", "add", veth, "type", "veth", "peer", "name", "mgmt0", "netns", ns)
    ip("link", "set", veth, "master", spec.bridge)
    ip("link", "set", veth, "up")
    for each in addresses or [address(spec)]:
        ip("addr", "add", f"{each}/24", "dev", "mgmt0", netns=ns)
    ip("link", "set", "mgmt0", "up", netns=ns)


def qemu_argv(spec: LabSpec, uart_socket: Path) -> list[str]:
    """The command line labgrid's QEMUDriver would run, with the serial port on the rack's
    UART instead of the driver's own socket (the switch starts it, not a test run)."""
    from labgrid import Environment

    target = Environment(str(spec.env_file)).get_target(spec.board_host.name)
    driver = target.get_driver("QEMUDriver", activate=False)
    argv: list[str] = driver.get_qemu_base_args()
    return [
        *argv,
        "-monitor",
        "none",
        "-chardev",
        f"socket,id=uart,path={uart_socket}",
        "-serial",
        "chardev:uart",
    ]


def _start_switch(spec: LabSpec) -> None:
    folder = rack_dir(spec)
    ports: dict[str, Any] = {}
    for host in spec.hosts:
        index = port_index(spec, host.name)
        if host.role == "board":
            ports[str(index)] = {
                "name": host.name,
                "kind": "qemu",
                "argv": qemu_argv(spec, folder / "uart.sock"),
                "log": str(qemu_board.log_path(spec)),
            }
        else:
            ports[str(index)] = {
                "name": host.name,
                "kind": "netns",
                "on": _argv(envfile.power_command(spec, host.name, "on")),
                "off": _argv(envfile.power_command(spec, host.name, "off")),
                "on_at_start": True,
            }
    config = {
        "address": address(spec),
        "port": SWITCH_PORT,
        "ports": ports,
        "log": str(folder / "switch.log"),
        "tty_link": str(folder / "console-tty"),
        "uart_socket": str(folder / "uart.sock"),
        "ready": str(folder / "switch.pid"),
    }
    (folder / "switch.json").write_text(json.dumps(config, indent=1), encoding="utf-8")
    argv = [sys.executable, "-m", "pytest_pinet.virtlab.power_switch", str(folder / "switch.json")]
    spawn(spec, argv, folder / "switch.out")
    wait(
        lambda: (folder / "switch.pid").exists() and (folder / "console-tty").exists(), 30, "the power switch"
    )


def _argv(command: str) -> list[str]:
    import shlex

    return shlex.split(command)


def spawn(
    spec: LabSpec, argv: list[str], log: Path, cwd: Path | None = None, env: dict[str, str] | None = None
) -> None:
    """Start ``argv`` in the rack's namespace, detached (down kills it with the namespace)."""
    ip = system.find_tool("ip")
    with log.open("ab") as out:
        subprocess.Popen(
            [ip, "netns", "exec", netns(spec), *argv],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=out,
            start_new_session=True,
            cwd=cwd or rack_dir(spec),
            env=env,
        )


def ser2net_config(spec: LabSpec) -> str:
    """One connection: RFC 2217 on the rack's address, the board's UART behind it."""
    tty = rack_dir(spec) / "console-tty"
    return (
        "%YAML 1.1\n---\n"
        f"connection: &{spec.board_host.name}\n"
        f"  accepter: telnet(rfc2217),tcp,{address(spec)},{CONSOLE_PORT}\n"
        f"  connector: serialdev,{tty},115200n81,local\n"
        "  options:\n"
        "    kickolduser: true\n"
    )


def _start_ser2net(spec: LabSpec) -> None:
    folder = rack_dir(spec)
    (folder / "ser2net.yaml").write_text(ser2net_config(spec), encoding="utf-8")
    (folder / "ser2net.pid").unlink(missing_ok=True)
    argv = [
        system.find_tool("ser2net"),
        "-n",
        "-c",
        str(folder / "ser2net.yaml"),
        "-P",
        str(folder / "ser2net.pid"),
    ]
    spawn(spec, argv, folder / "ser2net.log")
    wait(lambda: listening(spec, CONSOLE_PORT), 15, "ser2net to listen")


def restart_ser2net(spec: LabSpec) -> None:
    """Kill ser2net and start it again: every console connection through it drops."""
    pid = _read_pid(rack_dir(spec) / "ser2net.pid")
    if pid:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        wait(lambda: not listening(spec, CONSOLE_PORT), 10, "ser2net to stop")
    _start_ser2net(spec)


def listening(spec: LabSpec, port: int, at: str = "", udp: bool = False) -> bool:
    """Whether something in the rack's namespace listens on TCP (or UDP) ``port`` of ``at``
    (default: the rack's address)."""
    flags = "-Hlun" if udp else "-Hltn"
    done = system.run(["ss", flags, f"sport = :{port}"], netns=netns(spec), check=False)
    return f"{at or address(spec)}:{port}" in done.stdout


def rack_resources(spec: LabSpec) -> dict[str, Any]:
    """What the rack's exporter group holds beside each host's NetworkService: a power port per
    host, the board's console and its SD card (what a hardware lab's exporter publishes)."""
    board = spec.board_host.name
    group: dict[str, Any] = {}
    for host in spec.hosts:
        group[f"{host.name}-power"] = {
            "cls": "NetworkPowerPort",
            "model": "simplerest",
            "host": switch_url(spec),
            "index": str(port_index(spec, host.name)),
        }
    group[f"{board}-console"] = {
        "cls": "NetworkSerialPort",
        "host": address(spec),
        "port": CONSOLE_PORT,
        "speed": 115200,
    }
    group[f"{board}-sd-card"] = {"cls": "PinetSDCard", "path": str(qemu_board.card_path(spec))}
    return group


def rack_env(spec: LabSpec) -> dict[str, Any]:
    """The run's env: the QEMU lab's, with each target's resources its RemotePlace and power
    and console through the rack's network resources (rpi-lab.yaml's drivers)."""
    local = env_through_place(spec, "pinet lab up --board qemu --rack")
    board = spec.board_host.name
    for name, target in local["targets"].items():
        power = {"delay": 2.0, "bindings": {"port": f"{name}-power"}}
        if name == board:
            drivers = {
                "NetworkPowerDriver": power,
                "SerialDriver": {},
                "PinetSDMuxDriver": {},
                "PinetSDCardDriver": {},
                "ShellDriver": target["drivers"]["ShellDriver"],
            }
        else:
            drivers = {"NetworkPowerDriver": power}
        target["drivers"] = drivers
    local.pop("tools", None)  # nothing of QEMU on the run's side: the switch starts it
    return dict(local)


def start_exporter(spec: LabSpec, coordinator: str) -> None:
    """``labgrid-exporter`` for the rack's group, on this machine, its pid kept for down."""
    folder = rack_dir(spec)
    exporter = Path(client_program()).with_name("labgrid-exporter")
    argv = [str(exporter), "-c", coordinator, "-n", exporter_name(spec), "--hostname", "127.0.0.1"]
    with (folder / "exporter.log").open("ab") as log:
        process = subprocess.Popen(
            [*argv, str(folder / "exporter.yaml")],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            start_new_session=True,
        )
    (folder / "exporter.pid").write_text(str(process.pid), encoding="utf-8")


def stop_exporter(state_dir: Path) -> int:
    """Stop the rack's exporter (found by its pid file, checked by its command line)."""
    pid_file = state_dir / RACK / "exporter.pid"
    pid = _read_pid(pid_file)
    if not pid:
        return 0
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        cmdline = b""
    stopped = 0
    if str(state_dir / RACK).encode() in cmdline:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
            stopped = 1

        def gone() -> bool:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, os.WNOHANG)
            return not _alive(pid)

        wait_until(gone, timeout=10, pace=0.05)  # then killed, gone or not
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    pid_file.unlink(missing_ok=True)
    return stopped


def restart_exporter(spec: LabSpec) -> None:
    """Stop the exporter and start it again, as a restart of its service does."""
    coordinator = (rack_dir(spec) / "coordinator").read_text(encoding="utf-8").strip()
    stop_exporter(spec.state_dir)
    start_exporter(spec, coordinator)


def _register(spec: LabSpec, coordinator: str) -> None:
    register_places(Client(coordinator), [spec], exporter_name(spec), TAGS, resources="*")


def set_fault(spec: LabSpec, mode: str, times: int = 0) -> None:
    """Make the power switch fail (``http500``, ``silent``, ``noboot``) or clear it (``none``)."""
    url = f"http://{address(spec)}:{SWITCH_PORT}/_pinet/fault"
    body = json.dumps({"mode": mode, "times": times}).encode()
    request = urllib.request.Request(url, data=body, method="POST")
    with urllib.request.urlopen(request, timeout=10) as answer:  # noqa: S310
        if answer.status != 200:
            raise PinetError(f"the rack's switch refused fault {mode}: HTTP {answer.status}")


def status(spec: LabSpec) -> dict[str, Any] | None:
    """The rack as ``pinet lab status`` shows it, or None when the lab has none: each part
    with whether its process runs, so a rack that lost its switch or console server says
    which before a run meets it as a lab fault."""
    folder = rack_dir(spec)
    if not folder.is_dir():
        return None
    coordinator = folder / "coordinator"
    return {
        "netns": netns(spec),
        "address": address(spec),
        "switch": switch_url(spec).split("/api/")[0],
        "switch_running": _alive(_read_pid(folder / "switch.pid")),
        "console": f"rfc2217://{address(spec)}:{CONSOLE_PORT}",
        "ser2net_running": _alive(_read_pid(folder / "ser2net.pid")),
        "exporter": exporter_name(spec),
        "exporter_running": _alive(_read_pid(folder / "exporter.pid")),
        "coordinator": coordinator.read_text(encoding="utf-8").strip() if coordinator.exists() else None,
        "place": spec.name,
        "env_file": str(env_file(spec)) if env_file(spec).exists() else None,
    }


def _alive(pid: int) -> bool:
    """The process runs: it exists and is not a zombie.  An exporter restarted by a test is
    the test's child; once stopped it stays a zombie until that test reaps it, and ``pinet lab
    down`` (another process) waited 10 s for it to vanish at every rack's end."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return pid > 0 and stat.rpartition(")")[2].split()[:1] != ["Z"]


def _read_pid(path: Path) -> int:
    try:
        return int(path.read_text().strip())
    except (OSError, ValueError):
        return 0


def wait(condition: Callable[[], bool], timeout: float, what: str) -> None:
    """Until ``condition`` holds; a lab error naming ``what`` after ``timeout`` seconds."""

    def timed_out() -> PinetError:
        return PinetError(f"pinet lab up: timed out after {timeout:.0f} s waiting for {what}")

    wait_until(condition, timeout=timeout, pace=0.1, on_timeout=timed_out)
