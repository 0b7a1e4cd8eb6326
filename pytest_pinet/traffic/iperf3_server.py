"""The server end of an iperf3 run, started over SSH.

One server per test, on a port found free on the server host, started with ``-1`` (serve one
test, then exit) and ``--idle-timeout`` (an aborted client cannot wedge it), with a pid file
so that teardown stops exactly this server and nothing another user started.
"""

from __future__ import annotations

import random
import re
import uuid
from weakref import WeakKeyDictionary

from ..errors import LabFault
from ..host.remote import RemoteHost
from ..host.shell import Argv, quote

PORT_RANGE = (20000, 29999)
VERSION = re.compile(r"iperf\s+(\d+)\.(\d+)")

_VERSIONS: WeakKeyDictionary[RemoteHost, tuple[int, int]] = WeakKeyDictionary()


def iperf3_version(host: RemoteHost) -> tuple[int, int]:
    """(major, minor) of iperf3 on ``host``, asked once per connection object until a reflash
    forgets it (``forget_iperf3_version``).

    A missing iperf3 is a lab fault.  Caching saves one SSH round trip per server start.
    """
    if host in _VERSIONS:
        return _VERSIONS[host]
    result = host.run(["iperf3", "--version"], timeout=15)
    match = VERSION.search(result.stdout + result.stderr)
    if not result.ok or match is None:
        raise LabFault("tool-missing", f"{host.name}: iperf3 is not installed or does not run")
    _VERSIONS[host] = (int(match.group(1)), int(match.group(2)))
    return _VERSIONS[host]


def forget_iperf3_version(host: RemoteHost) -> None:
    """Ask ``host`` its iperf3 version afresh on next use: it was reflashed, and another image
    may carry another iperf3 (whose flags differ across 3.11)."""
    _VERSIONS.pop(host, None)


def server_start_script(port: int, argv: Argv, log_file: str) -> str:
    """Start a one-off server unless ``port`` is taken (exit 4), then wait until it listens
    (exit 0) or give up printing its log (exit 3): one round trip per attempt."""
    listening = f"{quote(['ss', '-Htln', f'sport = :{int(port)}'])} | {quote(['grep', '-q', '.'])}"
    return (
        f"{listening} && exit 4; {quote(argv)} || exit 3; for i in $(seq 100); do "
        f"{listening} && exit 0; sleep 0.05; done; {quote(['cat', log_file])}; exit 3"
    )


# How long a ``-1`` server may take to exit on its own after its client stopped.  The client's
# last word to the server crosses the path under test: behind a full 1000-packet FIFO at 10
# Mbit/s with an upload beside it, a QEMU board's server was still running 2.5 s after its
# client, its report unwritten, and the run's receiver figure was lost.
SERVER_EXIT_WAIT_S = 8


def server_stop_script(port: int, pid_file: str, log_file: str, wait_s: float = SERVER_EXIT_WAIT_S) -> str:
    """Wait up to ``wait_s`` for the server to exit on its own (it does as soon as its
    client's last word arrives), print its report, kill it if it is still the server pinet
    started (never a process that reused the pid), remove its files."""
    pattern = quote(["grep", "-q", "--", f"^iperf3 -s -1 -p {int(port)} "])
    mine = f'ps -o args= -p "$pid" | {pattern}'
    tries = max(1, round(wait_s * 20))  # one look every 0.05 s
    return (
        f"pid=$({quote(['cat', pid_file])} 2>/dev/null); "
        f'if [ -n "$pid" ]; then for i in $(seq {int(tries)}); do {mine} || break; '
        "sleep 0.05; done; fi; "
        f"{quote(['cat', log_file])} 2>/dev/null; "
        f'[ -n "$pid" ] && {mine} && kill "$pid"; '
        f"{quote(['rm', '-f', pid_file, log_file])}; true"
    )


class Iperf3Server:
    """One one-off iperf3 server on a free port of ``host``."""

    def __init__(self, host: RemoteHost, idle_timeout: int = 30) -> None:
        self.host = host
        self.idle_timeout = idle_timeout
        tag = uuid.uuid4().hex[:12]
        # On the remote host; the random tag keeps names unguessable and unique per server.
        self.pid_file = f"/tmp/pinet-iperf3-{tag}.pid"  # noqa: S108
        self.log_file = f"/tmp/pinet-iperf3-{tag}.json"  # noqa: S108
        self.port = 0
        self.command = ""
        self.server_json = ""

    def start(self, attempts: int = 4) -> int:
        """Start on a free port and wait until it listens; return the port.

        One SSH round trip per attempt: the port probe, the start and the wait for the
        listening socket are one script.  A port taken meanwhile (exit 4) or a server that
        never listened (exit 3) costs another attempt on another port.
        """
        version = iperf3_version(self.host)
        tried: set[int] = set()
        last = ""
        for _ in range(attempts):
            port = _pick_port(tried)
            argv: list[str | int] = [
                "iperf3",
                "-s",
                "-1",
                "-p",
                port,
                "-D",
                "-I",
                self.pid_file,
                "--logfile",
                self.log_file,
                "-J",
            ]
            if version >= (3, 11):
                argv += ["--idle-timeout", self.idle_timeout]
            self.command = quote(argv)
            result = self.host.run_shell(server_start_script(port, argv, self.log_file), timeout=20)
            if result.ok:
                self.port = port
                return port
            tried.add(port)
            if result.exit_code != 4:
                last = (result.stderr or result.stdout).strip()
                self.port = port
                self.stop()
        raise LabFault(
            "iperf3-server", f"{self.host.name}: iperf3 server did not start: {last[:300]}", self.host.name
        )

    def stop(self, client_ended: bool = True) -> str:
        """Stop this server, never another, and remove its files; return its JSON report.

        One round trip: wait for the ``-1`` server to finish writing and exit on its own (it
        does once its client's last word arrived), read its log, kill it if it still runs
        (a stale server whose client died), remove its files.  ``client_ended`` False: the
        client never ended its test (killed by its timeout after a stall, or never run), so
        no last word is coming and the server is not waited for.  A host that is gone leaves
        nothing to stop, and nothing to read.
        """
        try:
            wait_s = SERVER_EXIT_WAIT_S if client_ended else 0.05
            script = server_stop_script(self.port, self.pid_file, self.log_file, wait_s)
            self.server_json = self.host.run_shell(script, timeout=wait_s + 15, cleanup=True).stdout
        except LabFault:
            pass
        return self.server_json


def _pick_port(busy: set[int]) -> int:
    for _ in range(1000):
        port = random.randint(*PORT_RANGE)  # noqa: S311 - spreading ports, not security
        if port not in busy:
            return port
    raise LabFault("iperf3-server", "no free port in 20000-29999")
