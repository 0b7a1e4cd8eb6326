"""The virtual rack's network power switch, and the serial cable from the board to the console
server.

A hardware lab powers each Pi through a PoE or PDU port that labgrid's ``NetworkPowerDriver``
switches over HTTP, and reads its console through a console server (ser2net) wired to the
Pi's UART.  This process is both, for the virtual lab's QEMU board and its namespace hosts:

- an HTTP endpoint speaking labgrid's ``simplerest`` model (``GET /api/poe/{index}/{value}``
  switches a port, ``GET /api/poe/{index}`` reads it as "1" or "0"); port 0 starts and kills
  the QEMU board's process, the other ports switch a namespace host as its power-cycle does;
- the board's UART: a pseudo-terminal that lives as long as the switch, as a console server's
  serial line outlives the board's power.  ser2net opens its tty end; each QEMU process
  connects its serial port to the switch's unix socket, and the switch copies bytes between
  the two.  A board that is off sends nothing, and what is typed at it is lost.
- a control path ``POST /_pinet/fault`` (JSON ``{"mode": ..., "times": N}``) that tests use
  to make the switch fail as real ones do: answer HTTP 500 (``http500``), accept and never
  answer (``silent``), or switch a port on without the board booting (``noboot``).

It runs inside the rack's namespace (``rack.py`` starts it), so ``pinet lab down`` stops it
with the lab's other processes, and with it every QEMU it started.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import socket
import subprocess
import sys
import threading
import time
import tty
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

FAULT_MODES = ("none", "http500", "silent", "noboot")


class Uart:
    """The board's serial line: a pty whose tty end ser2net opens, fed by the running QEMU."""

    def __init__(self, link: Path, sock_path: Path) -> None:
        self.master, self.slave = os.openpty()
        tty.setraw(self.slave)
        os.set_blocking(self.master, False)
        link.unlink(missing_ok=True)
        link.symlink_to(os.ttyname(self.slave))
        sock_path.unlink(missing_ok=True)
        self.server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.server.bind(str(sock_path))
        self.server.listen(1)
        self.board: socket.socket | None = None
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            conn, _ = self.server.accept()
            old, self.board = self.board, conn
            if old is not None:
                old.close()

    def pump(self) -> None:
        """Copy bytes both ways for ever; the board's side only while a QEMU is connected."""
        while True:
            board = self.board
            readers = [self.master] + ([board] if board is not None else [])
            ready, _, _ = select.select(readers, [], [], 0.2)
            if self.master in ready:
                try:
                    data = os.read(self.master, 4096)
                except OSError:
                    data = b""  # nobody has the tty open (ser2net restarting): nothing typed
                if data and board is not None:
                    with contextlib.suppress(OSError):
                        board.sendall(data)
            if board is not None and board in ready:
                try:
                    data = board.recv(4096)
                except OSError:
                    data = b""
                if not data:
                    if self.board is board:
                        self.board = None
                    board.close()
                    continue
                with contextlib.suppress(BlockingIOError, OSError):
                    os.write(self.master, data)  # a full line with no reader drops, as a UART does


class Switch:
    """The ports and their state; what the HTTP handler calls."""

    def __init__(self, config: dict[str, Any]) -> None:
        self.config = config
        self.ports: dict[int, dict[str, Any]] = {int(k): v for k, v in config["ports"].items()}
        self.state: dict[int, bool] = {i: bool(p.get("on_at_start")) for i, p in self.ports.items()}
        self.qemu: dict[int, subprocess.Popen[bytes]] = {}
        self.fault = "none"
        self.fault_times = 0
        self.lock = threading.Lock()
        self.log = Path(config["log"])

    def note(self, line: str) -> None:
        with self.log.open("a", encoding="utf-8") as handle:
            handle.write(f"{time.strftime('%H:%M:%S')} {line}\n")

    def take_fault(self) -> str:
        """The fault this request meets (each counts down ``times``; 0 means until cleared)."""
        with self.lock:
            mode = self.fault
            if mode != "none" and self.fault_times > 0:
                self.fault_times -= 1
                if self.fault_times == 0:
                    self.fault = "none"
            return mode

    def switch(self, index: int, on: bool, fault: str) -> None:
        port = self.ports[index]
        with self.lock:
            if port["kind"] == "qemu":
                self._switch_qemu(index, port, on, boot=fault != "noboot")
            else:
                subprocess.run(port["on" if on else "off"], check=True, timeout=60)
            self.state[index] = on
        self.note(
            f"port {index} ({port['name']}) {'on' if on else 'off'}"
            + (" (no boot)" if fault == "noboot" else "")
        )

    def _switch_qemu(self, index: int, port: dict[str, Any], on: bool, *, boot: bool) -> None:
        running = self.qemu.get(index)
        if not on:
            if running is not None and running.poll() is None:
                running.kill()  # power cut: no shutdown, as a PoE port switching off
                running.wait(timeout=30)
            self.qemu.pop(index, None)
            return
        if running is not None and running.poll() is None:
            return  # already on
        if not boot:
            return  # the port gives power; the board stays dark
        log = open(port["log"], "ab")  # noqa: SIM115 - QEMU's stderr for as long as it runs
        self.qemu[index] = subprocess.Popen(
            port["argv"], stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True
        )
        log.close()


class Handler(BaseHTTPRequestHandler):
    """simplerest: GET /api/poe/{index}/{value} switches, GET /api/poe/{index} reads; and
    gude24 (a PDU's web page): GET /ov.html?cmd=1&p={index}&s={value} switches, and every
    answer lists each port's state as ``<meta http-equiv="powerstate" content="Power Port
    N,V">``, which labgrid's gude24 model reads."""

    switch: Switch

    def log_message(self, format: str, *args: Any) -> None:
        self.switch.note(format % args)

    def _answer(self, code: int, body: str) -> None:
        data = body.encode()
        self.send_response(code)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        if self.path.startswith("/ov.html"):
            self._gude24()
            return
        parts = self.path.strip("/").split("/")
        if parts[:2] != ["api", "poe"] or len(parts) not in (3, 4) or not parts[2].isdigit():
            self._answer(404, "no such path\n")
            return
        index = int(parts[2])
        if index not in self.switch.ports:
            self._answer(404, f"no port {index}\n")
            return
        fault = self.switch.take_fault()
        if fault == "silent":
            self.switch.note(f"port {index}: request taken, never answered (fault silent)")
            time.sleep(3600)  # pacing that is the point: the planted fault is a switch that never answers
            return
        if fault == "http500":
            self.switch.note(f"port {index}: answered 500 (fault http500)")
            self._answer(500, "switch firmware error\n")
            return
        if len(parts) == 3 or parts[3] == "":
            self._answer(200, "1" if self.switch.state[index] else "0")
            return
        if parts[3] not in ("0", "1"):
            self._answer(400, "value must be 0 or 1\n")
            return
        try:
            self.switch.switch(index, parts[3] == "1", fault)
        except (OSError, subprocess.SubprocessError) as exc:
            self._answer(500, f"port {index}: {exc}\n")
            return
        self._answer(200, parts[3])

    def _gude24(self) -> None:
        query = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(self.path).query))
        if query.get("cmd") == "1":
            index, value = int(query.get("p", "0") or 0), query.get("s", "")
            if index not in self.switch.ports or value not in ("0", "1"):
                self._answer(400, f"no port {index} or no state {value!r}\n")
                return
            try:
                self.switch.switch(index, value == "1", self.switch.take_fault())
            except (OSError, subprocess.SubprocessError) as exc:
                self._answer(500, f"port {index}: {exc}\n")
                return
        states = "\n".join(
            f'<meta http-equiv="powerstate" content="Power Port {i},{int(on)}">'
            for i, on in sorted(self.switch.state.items())
        )
        self._answer(200, f"<html><head>\n{states}\n</head><body>virtual PDU</body></html>\n")

    def do_POST(self) -> None:
        if self.path != "/_pinet/fault":
            self._answer(404, "no such path\n")
            return
        length = int(self.headers.get("Content-Length", "0"))
        try:
            data = json.loads(self.rfile.read(length) or b"{}")
            mode = str(data.get("mode", "none"))
            times = int(data.get("times", 0))
        except (ValueError, AttributeError):
            self._answer(400, "body must be JSON {mode, times}\n")
            return
        if mode not in FAULT_MODES:
            self._answer(400, f"mode must be one of {', '.join(FAULT_MODES)}\n")
            return
        with self.switch.lock:
            self.switch.fault, self.switch.fault_times = mode, times
        self.switch.note(f"fault set: {mode} x{times or 'until cleared'}")
        self._answer(200, mode)


def serve(config_path: Path) -> None:
    """Run the switch and the UART until killed."""
    config = json.loads(config_path.read_text(encoding="utf-8"))
    switch = Switch(config)
    # The boards' UARTs (a twin of a lab with several boards has one each; a PDU none).
    wires = config.get("uarts", [config])
    for wire in wires:
        uart = Uart(Path(wire["tty_link"]), Path(wire["uart_socket"]))
        threading.Thread(target=uart.pump, daemon=True).start()
    handler = type("BoundHandler", (Handler,), {"switch": switch})
    server = ThreadingHTTPServer((config["address"], int(config["port"])), handler)
    server.daemon_threads = True

    def stop(*_: Any) -> None:
        for process in switch.qemu.values():
            with contextlib.suppress(OSError):
                process.kill()
        os._exit(0)

    signal.signal(signal.SIGTERM, stop)
    for index, port in switch.ports.items():
        if port["kind"] == "qemu" and port.get("on_at_start"):
            switch.switch(index, True, "none")  # a board plugged in boots when the rack does
    Path(config["ready"]).write_text(str(os.getpid()), encoding="utf-8")
    server.serve_forever()


if __name__ == "__main__":
    serve(Path(sys.argv[1]))
