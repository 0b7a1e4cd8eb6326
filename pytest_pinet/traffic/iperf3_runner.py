"""Run iperf3 between two lab hosts, both ends started over SSH.

One server per test, on a port found free on the server host, started with ``-1`` (serve one
test, then exit) and ``--idle-timeout`` (an aborted client cannot wedge it), with a pid file
so that teardown stops exactly this server and nothing another user started.  The client runs
with ``-J``; its output goes through the tolerant parser, and every iperf3-side failure
(server busy, nothing listening, interrupted) becomes a categorized lab fault.
"""

from __future__ import annotations

import random
import re
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from ..errors import LabFault
from ..lab.remote import RemoteHost, quote
from .iperf3_model import Iperf3Result
from .iperf3_parse import Iperf3OutputError, Iperf3ReportedError, parse_iperf3

PORT_RANGE = (20000, 29999)
VERSION = re.compile(r"iperf\s+(\d+)\.(\d+)")


@dataclass(frozen=True)
class Iperf3Options:
    """What to ask of iperf3.  ``duration`` and ``omit`` are seconds."""

    streams: int = 10
    duration: int = 10
    omit: int = 2
    udp: bool = False
    bitrate: str | None = None  # per stream, iperf3 syntax ("40M"); None = unlimited for TCP
    congestion: str | None = None  # TCP congestion control of the sender (-C); None = host default
    idle_timeout: int = 30
    connect_timeout_ms: int = 3000
    extra_timeout: float = 20.0

    def __post_init__(self) -> None:
        if not 1 <= self.streams <= 128:
            raise ValueError(f"streams must be 1..128, got {self.streams}")
        if self.duration < 1 or self.omit < 0:
            raise ValueError(f"duration must be >= 1 and omit >= 0, got {self.duration}/{self.omit}")
        if self.congestion is not None and not re.fullmatch(r"[a-z0-9_]{1,16}", self.congestion):
            raise ValueError(f"congestion control {self.congestion!r} is not a valid name")
        if self.bitrate is not None and not re.fullmatch(r"[0-9]+(\.[0-9]+)?[KMG]?", self.bitrate):
            raise ValueError(f"bitrate {self.bitrate!r} is not an iperf3 rate like 40M")


@dataclass(frozen=True)
class Iperf3Run:
    """A finished run: the parsed result plus what is needed to show and reproduce it."""

    result: Iperf3Result
    client_json: str
    server_json: str
    client_command: str
    server_command: str
    client_host: str
    server_host: str
    started: float
    finished: float
    notes: tuple[str, ...] = field(default=())


def iperf3_version(host: RemoteHost) -> tuple[int, int]:
    """(major, minor) of iperf3 on ``host``; a missing iperf3 is a lab fault."""
    result = host.run(["iperf3", "--version"], timeout=15)
    match = VERSION.search(result.stdout + result.stderr)
    if not result.ok or match is None:
        raise LabFault("tool-missing", f"{host.name}: iperf3 is not installed or does not run")
    return int(match.group(1)), int(match.group(2))


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

    def start(self, attempts: int = 4) -> int:
        """Start on a free port and wait until it listens; return the port."""
        version = iperf3_version(self.host)
        busy = self._listening_ports()
        last = ""
        for _ in range(attempts):
            port = _pick_port(busy)
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
            wait = quote(["ss", "-Htln", f"sport = :{port}"])
            script = (
                f"{self.command} && for i in $(seq 100); do "
                f"{wait} | grep -q . && exit 0; sleep 0.05; done; exit 3"
            )
            result = self.host.run_shell(script, timeout=20)
            if result.ok:
                self.port = port
                return port
            last = (result.stderr or result.stdout).strip() or self._read_log()
            busy.add(port)
            self.stop()
        raise LabFault("iperf3-server", f"{self.host.name}: iperf3 server did not start: {last[:300]}")

    def _listening_ports(self) -> set[int]:
        out = self.host.run(["ss", "-Htln"], timeout=15).stdout
        ports = set()
        for line in out.splitlines():
            fields = line.split()
            if len(fields) >= 4 and ":" in fields[3]:
                tail = fields[3].rsplit(":", 1)[1]
                if tail.isdigit():
                    ports.add(int(tail))
        return ports

    def _read_log(self) -> str:
        return self.host.run(["cat", self.log_file], timeout=15).stdout

    def collect(self) -> str:
        """The server's own JSON report (empty if it wrote none)."""
        return self._read_log()

    def stop(self) -> None:
        """Stop this server if it still runs and remove its files; never touches others."""
        pid_file = quote([self.pid_file])
        script = (
            f"pid=$(cat {pid_file} 2>/dev/null) && "
            f'ps -o args= -p "$pid" | grep -q -- \'^iperf3 -s -1 -p {self.port} \' && kill "$pid"; '
            f"rm -f {pid_file} {quote([self.log_file])}; true"
        )
        try:
            self.host.run_shell(script, timeout=15)
        except LabFault:
            pass  # host gone: nothing left to stop on it


def _pick_port(busy: set[int]) -> int:
    for _ in range(1000):
        port = random.randint(*PORT_RANGE)  # noqa: S311 - spreading ports, not security
        if port not in busy:
            return port
    raise LabFault("iperf3-server", "no free port in 20000-29999")


def client_argv(server_address: str, port: int, options: Iperf3Options) -> list[str | int]:
    """The client command; the sender is always the client, so direction = who runs this."""
    argv: list[str | int] = [
        "iperf3",
        "-c",
        server_address,
        "-p",
        port,
        "-P",
        options.streams,
        "-t",
        options.duration,
        "-O",
        options.omit,
        "-J",
        "--connect-timeout",
        options.connect_timeout_ms,
    ]
    if options.congestion and not options.udp:
        argv += ["-C", options.congestion]
    if options.udp:
        argv += ["-u", "-b", options.bitrate or "0"]
    elif options.bitrate:
        argv += ["-b", options.bitrate]
    return argv


def run_iperf3(
    sender: RemoteHost,
    receiver: RemoteHost,
    receiver_address: str,
    options: Iperf3Options,
) -> Iperf3Run:
    """Send from ``sender`` to ``receiver_address`` (an address of ``receiver``).

    Raises :class:`LabFault` when iperf3 could not measure (busy, unreachable, killed); a run
    that measured and *also* reported an error (interrupted late) is returned, with the
    error in ``result.error``, so its numbers are not lost.
    """
    server = Iperf3Server(receiver, options.idle_timeout)
    server.start()
    try:
        return _client_run(sender, server, receiver_address, options)
    finally:
        server.stop()


def run_iperf3_both_ways(
    board: RemoteHost,
    peer: RemoteHost,
    board_address: str,
    peer_address: str,
    board_options: Iperf3Options,
    peer_options: Iperf3Options,
) -> tuple[Iperf3Run, Iperf3Run]:
    """Full duplex: both ends send at once; returns (board->peer, peer->board).

    Both servers are started first, then both clients together, so the two directions
    overlap for the whole run instead of one starting after the other's setup.
    """
    to_peer = Iperf3Server(peer, board_options.idle_timeout)
    to_board = Iperf3Server(board, peer_options.idle_timeout)
    try:
        to_peer.start()
        to_board.start()
        with ThreadPoolExecutor(max_workers=2) as pool:
            forward = pool.submit(_client_run, board, to_peer, peer_address, board_options)
            backward = pool.submit(_client_run, peer, to_board, board_address, peer_options)
            return forward.result(), backward.result()
    finally:
        to_peer.stop()
        to_board.stop()


def _client_run(
    sender: RemoteHost, server: Iperf3Server, receiver_address: str, options: Iperf3Options
) -> Iperf3Run:
    limit = options.duration + options.omit + options.extra_timeout
    # The remote `timeout` ends a hung client on the host itself: an SSH-side timeout alone
    # would leave it running there.
    argv = ["timeout", "--kill-after=5", int(limit), *client_argv(receiver_address, server.port, options)]
    command = quote(argv)
    started = time.time()
    outcome = sender.run(argv, timeout=limit + 10)
    finished = time.time()
    server_json = server.collect()
    source = f"iperf3 client on {sender.name} ({command})"
    try:
        result = parse_iperf3(outcome.stdout, source)
    except Iperf3ReportedError as exc:
        raise LabFault(f"iperf3-{exc.category}", str(exc)) from None
    except Iperf3OutputError as exc:
        detail = outcome.stderr.strip()[:300]
        raise LabFault("iperf3-output", f"{exc}{'; stderr: ' + detail if detail else ''}") from None
    return Iperf3Run(
        result=result,
        client_json=outcome.stdout,
        server_json=server_json,
        client_command=command,
        server_command=server.command,
        client_host=sender.name,
        server_host=server.host.name,
        started=started,
        finished=finished,
    )
