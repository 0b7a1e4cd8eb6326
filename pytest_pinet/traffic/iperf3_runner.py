"""Run iperf3 between two lab hosts, both ends started over SSH.

The server side (one one-off server per test on a free port) is ``iperf3_server``.  The client
runs with ``-J``, ended by its duration, by the adaptive rule (SIGINT once the figure has
settled) or by the caller; its output goes through the tolerant parser, and every iperf3-side
failure (server busy, nothing listening, interrupted) becomes a categorized lab fault.
"""

from __future__ import annotations

import logging
import re
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from ..errors import LabFault
from ..host.remote import CommandResult, RemoteHost
from ..host.shell import Argv, checked_interface, quote
from ..model.units import SI_PREFIX
from .adaptive import FIXED, MAX_DURATION, SETTLED, SettleRule
from .iperf3_model import Iperf3Result
from .iperf3_parse import Iperf3OutputError, Iperf3ReportedError, classify_error, parse_iperf3, stderr_error
from .iperf3_server import PORT_RANGE, Iperf3Server
from .receiver_view import receiver_view
from .run_driver import Progress, Watch, drive

log = logging.getLogger(__name__)


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
    # Past duration + omit, how long a client may take (connect: at most 3 s, its last
    # exchange with the server behind a full queue: 2.5 s seen, 1.4 s through the QEMU
    # board's 10 Mbit/s route) before its host's `timeout` ends it: a stall (a hung peer, a
    # cable down) is found this much after the run's planned end.  12 s had left 4 s more
    # of waiting on every stalled run for no answer that ever came later.
    extra_timeout: float = 8.0

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
    ended_by: str = FIXED  # which rule ended the run: fixed, settled or max-duration
    precision_pct: float | None = None  # worst 95 % half-width when the adaptive rule looked


def client_script(argv: Argv, pid_file: str) -> str:
    """Run the client with its pid written to ``pid_file``; the inner shell then becomes
    ``timeout``, which passes SIGINT on to iperf3, and the outer one removes the pid file
    however the client ended."""
    inner = quote(["sh", "-c", 'echo $$ > "$0" && exec "$@"', pid_file, *argv])
    return f"{inner}; rc=$?; {quote(['rm', '-f', pid_file])}; exit $rc"


def interrupt_script(pid_file: str) -> str:
    """SIGINT to the client whose pid is in ``pid_file``: it reports what it measured so far."""
    return f'pid=$({quote(["cat", pid_file])} 2>/dev/null) && kill -INT "$pid"; true'


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
        block = paced_block_bytes(options.bitrate)
        if block is not None:
            argv += ["-l", block]
    return argv


# iperf3 paces ``-b`` in whole writes of 128 KiB for TCP: a 0.1 Mbit/s stream then sends one
# write every 10 s, and a 10 s run of ten such streams sees 0, 1 or 2 writes a second.  A
# paced stream writes 20 ms of its rate at a time instead, 1 to 8 KiB: at 0.1 Mbit/s a
# stream 12 writes a second (with 8 KiB it was 1.5, and ten streams' seconds still moved by
# a write in fifteen, 7 %, so that their runs rarely settled).  Up to 100 Mbit/s a stream:
# at 10 Mbit/s 128 KiB writes came 9 or 10 to a second (94.4 or 104.9 Mbit/s), and the
# virtual lab's 100 Mbit/s upload beside a download still scattered by 4 % after 10 s; with
# 8 KiB writes its 100, 250 and 500 Mbit/s uploads settled within 0.4 % after 3 s.
SLOW_PACED_BPS = 100e6
SLOW_PACED_BLOCK = 8192
SMALLEST_PACED_BLOCK = 1024
PACED_BLOCK_S = 0.02


def paced_block_bytes(bitrate: str) -> int | None:
    """The write size for a TCP stream paced at ``bitrate`` (iperf3 syntax), or ``None`` for
    iperf3's own default (fast streams: 128 KiB writes keep the sender's CPU low)."""
    number, unit = bitrate.rstrip("KMG"), bitrate[len(bitrate.rstrip("KMG")) :]
    bits = float(number) * SI_PREFIX[unit]
    if not 0 < bits < SLOW_PACED_BPS:
        return None
    return min(SLOW_PACED_BLOCK, max(SMALLEST_PACED_BLOCK, round(bits / 8 * PACED_BLOCK_S)))


@dataclass(frozen=True)
class AdaptiveStop:
    """Stop early by ``rule``, watching the receiver's ``interface`` byte counter, but never
    while the goodput's 95 % interval contains one of ``decide_mbps`` (the lines its verdict
    compares with): such a run continues to its maximum duration."""

    rule: SettleRule
    interface: str
    decide_mbps: tuple[float, ...] = ()

    def __post_init__(self) -> None:
        checked_interface(self.interface)


# Told once a second while traffic runs: seconds so far, the most the run may take, the
# latest per-second goodput of each watched direction (Mbit/s; empty without sampling), and
# finally once more with ``done`` True (a terminal line is then cleared).


def run_iperf3(
    sender: RemoteHost,
    receiver: RemoteHost,
    receiver_address: str,
    options: Iperf3Options,
    adaptive: AdaptiveStop | None = None,
    progress: Progress | None = None,
) -> Iperf3Run:
    """Send from ``sender`` to ``receiver_address`` (an address of ``receiver``).

    Raises :class:`LabFault` when iperf3 could not measure (busy, unreachable, killed); a run
    that measured and *also* reported an error (interrupted late) is returned, with the
    error in ``result.error``, so its numbers are not lost.  With ``adaptive`` the run may
    end before ``options.duration`` once its rate settled (see :mod:`.adaptive`).
    """
    server = Iperf3Server(receiver, options.idle_timeout)
    server.start()
    client = _Client(sender, server, receiver_address, options)
    try:
        watches = [Watch(receiver, adaptive.interface, server.port, adaptive.decide_mbps)] if adaptive else []
        rule = adaptive.rule if adaptive else None
        ended_by, precision = drive([client], watches, rule, options.omit, progress)
    finally:
        server.stop(client.ended_its_test)
    return client.finish(ended_by, precision[0] if precision else None)


def run_iperf3_both_ways(
    board: RemoteHost,
    peer: RemoteHost,
    board_address: str,
    peer_address: str,
    board_options: Iperf3Options,
    peer_options: Iperf3Options,
    adaptive: tuple[SettleRule, str, str] | None = None,
    progress: Progress | None = None,
    decide_mbps: tuple[tuple[float, ...], tuple[float, ...]] = ((), ()),
) -> tuple[Iperf3Run, Iperf3Run]:
    """Full duplex: both ends send at once; returns (board->peer, peer->board).

    Both servers are started first, then both clients together, so the two directions
    overlap for the whole run instead of one starting after the other's setup.  With
    ``adaptive`` = (rule, board interface, peer interface) both stop together once *both*
    directions settled: stopping one alone would change what the other measures.
    ``decide_mbps`` are the lines each direction's verdict compares with (board->peer,
    peer->board), as in :class:`AdaptiveStop`.
    """
    to_peer = Iperf3Server(peer, board_options.idle_timeout)
    to_board = Iperf3Server(board, peer_options.idle_timeout)
    clients: list[_Client] = []
    try:
        with ThreadPoolExecutor(max_workers=2) as pool:
            for started in [pool.submit(to_peer.start), pool.submit(to_board.start)]:
                started.result()
        forward = _Client(board, to_peer, peer_address, board_options)
        backward = _Client(peer, to_board, board_address, peer_options)
        clients = [forward, backward]
        rule = adaptive[0] if adaptive else None
        watches = (
            [
                Watch(peer, adaptive[2], to_peer.port, decide_mbps[0]),
                Watch(board, adaptive[1], to_board.port, decide_mbps[1]),
            ]
            if adaptive
            else []
        )
        ended_by, precision = drive([forward, backward], watches, rule, board_options.omit, progress)
    finally:
        ended = [c.ended_its_test for c in clients] if clients else [False, False]
        with ThreadPoolExecutor(max_workers=2) as pool:
            list(pool.map(Iperf3Server.stop, (to_peer, to_board), ended))
    each = precision or [None, None]
    return forward.finish(ended_by, each[0]), backward.finish(ended_by, each[1])


class _Client:
    """One iperf3 client run on the sender, stoppable with SIGINT through its pid file."""

    def __init__(
        self, sender: RemoteHost, server: Iperf3Server, receiver_address: str, options: Iperf3Options
    ) -> None:
        self.sender = sender
        self.server = server
        self.options = options
        self.limit = options.duration + options.omit + options.extra_timeout
        # The remote `timeout` ends a hung client on the host itself: an SSH-side timeout
        # alone would leave it running there.
        argv = [
            "timeout",
            "--kill-after=5",
            int(self.limit),
            *client_argv(receiver_address, server.port, options),
        ]
        self.command = quote(argv)
        self.pid_file = f"/tmp/pinet-iperf3c-{uuid.uuid4().hex[:12]}.pid"  # noqa: S108
        # The inner shell writes its pid, then becomes `timeout`, which passes SIGINT on to
        # iperf3; the outer shell removes the pid file however the client ended.
        self.script = client_script(argv, self.pid_file)
        self.outcome: CommandResult | None = None
        self.started = 0.0
        self.finished = 0.0
        self.stalled = False  # stopped because its receiver stood still (a lab fault)

    @property
    def ended_its_test(self) -> bool:
        """False when the client never finished its test with the server: it never ran, its
        host's `timeout` killed it (exit 124, or 137 after --kill-after), or it was stopped
        on a stall (a server behind a dead cable hears no last word).  Its server then gets
        no last word to exit on, and waiting for it only delays the lab fault."""
        return not self.stalled and self.outcome is not None and self.outcome.exit_code not in (124, 137)

    def run(self) -> None:
        """Run to the end (blocking); the outcome is kept for :meth:`finish`."""
        self.started = time.time()
        try:
            self.outcome = self.sender.run_shell(self.script, timeout=self.limit + 10)
        finally:
            self.finished = time.time()

    def interrupt(self) -> None:
        """Ask iperf3 to stop now; it reports what it measured so far."""
        self.sender.run_shell(interrupt_script(self.pid_file), timeout=15)

    def _receiver_lost(self, source: str, result: Iperf3Result, why: LabFault) -> LabFault:
        """The fault of a run stopped after settling whose receiver's report is unusable.

        The sender's count is what it handed to its socket, not what arrived: a QEMU board's
        paced pfifo_fast download once read 15.6 Mbit/s that way through its 10 Mbit/s cable,
        while the receiver's interface counted 9.8 every second.  So the figure is the lab's
        loss (recoverable: the run is taken again), and both outputs stay with the fault.
        """
        sent = f"{result.sent.mbps:.1f} Mbit/s" if result.sent is not None else "nothing"
        fault = LabFault(
            "iperf3-output",
            f"{source} was stopped after settling, but {why}; the sender's count ({sent} handed to "
            "its socket) is not what arrived, so no goodput is recorded",
            self.server.host.name,
        )
        fault.evidence["iperf3 client output"] = self.outcome.stdout[-20000:] if self.outcome else ""
        fault.evidence["iperf3 server output"] = self.server.server_json[-20000:]
        return fault

    def finish(self, ended_by: str, precision: float | None) -> Iperf3Run:
        """Parse what the client printed, with the receiver's view when it was stopped early."""
        if self.outcome is None:
            raise LabFault(
                "iperf3-output", f"iperf3 client on {self.sender.name} did not run", self.sender.name
            )
        source = f"iperf3 client on {self.sender.name} ({self.command})"
        try:
            result = parse_iperf3(self.outcome.stdout, source, self.outcome.stderr)
        except Iperf3ReportedError as exc:
            hint = ""
            if exc.category == "connect":
                # A default-deny firewall on the server's host is the usual first-night cause.
                low, high = PORT_RANGE
                hint = (
                    f" (the iperf3 server pinet started on {self.server.host.name} listens on TCP "
                    f"{self.server.port}: a firewall there must accept TCP {low}-{high}, "
                    'docs/hardware-lab.md, "A peer\'s firewall")'
                )
            raise LabFault(f"iperf3-{exc.category}", f"{exc}{hint}", self.sender.name) from None
        except Iperf3OutputError as exc:
            detail = self.outcome.stderr.strip()[:300]
            raise LabFault(
                "iperf3-output", f"{exc}{'; stderr: ' + detail if detail else ''}", self.sender.name
            ) from None
        notes: tuple[str, ...] = ()
        if ended_by != SETTLED and result.error is None and not self.outcome.ok:
            # Totals, yet iperf3 failed: its JSON and its exit status disagree, so neither
            # is trusted (stderr says why, when iperf3 said anything).
            reason = stderr_error(self.outcome.stderr) or self.outcome.stderr.strip()[:300] or "no message"
            fault = LabFault(
                f"iperf3-{classify_error(reason)}",
                f"{source} exited with status {self.outcome.exit_code} after writing totals: {reason}",
                self.sender.name,
            )
            fault.evidence["iperf3 client output"] = self.outcome.stdout[-20000:]
            raise fault
        if ended_by != SETTLED and result.error is not None:
            # Nobody here stopped it: a signal (the remote `timeout` after a stall, a dying
            # host) cut the run short.  Its figures cover a stall, not the link: a lab fault,
            # never a goodput to judge.
            fault = LabFault(
                f"iperf3-{classify_error(result.error)}",
                f"{source} ended with {result.error!r} instead of running its {self.options.duration} s "
                f"(after {self.finished - self.started:.0f} s)",
                self.sender.name,
            )
            fault.evidence["iperf3 client output (cut short)"] = self.outcome.stdout[-20000:]
            raise fault
        short = _short_of(result, self.options)
        if ended_by != SETTLED and short is not None:
            fault = LabFault("iperf3-short", f"{source} {short}", self.sender.name)
            fault.evidence["iperf3 client output"] = self.outcome.stdout[-20000:]
            raise fault
        if ended_by == SETTLED:
            if result.error is None:
                ended_by = MAX_DURATION  # the stop came as the run ended by itself
            else:
                notes = (f"stopped after settling: 95 % half-width {precision:.2f} % of the mean",)
                try:
                    result = receiver_view(result, self.server.server_json, source)
                except LabFault as exc:
                    raise self._receiver_lost(source, result, exc) from None
        return Iperf3Run(
            result=result,
            client_json=self.outcome.stdout,
            server_json=self.server.server_json,
            client_command=self.command,
            server_command=self.server.command,
            client_host=self.sender.name,
            server_host=self.server.host.name,
            started=self.started,
            finished=self.finished,
            notes=notes,
            ended_by=ended_by,
            precision_pct=precision,
        )


# A run that measured less than this share of its duration did not run as asked.
SHORT_SHARE = 0.5


def _short_of(result: Iperf3Result, options: Iperf3Options) -> str | None:
    """Why a run that ended by itself measured too little to stand for its duration (None:
    it did not). iperf3 ends a run at warm-up plus duration from its start: on a host too
    starved to keep its timers (a QEMU board's sender at 99 % CPU on a busy machine) the
    warm-up ended 1.5 s late and the run measured 0.54 s of its 2, and the receiver's first
    second, lined up with those, read 9 Mbit/s of a 178 Mbit/s transfer: a board below its
    floor that was only a clock."""
    sent = result.sent.seconds if result.sent is not None else None
    if sent is None or sent <= 0 or sent >= SHORT_SHARE * options.duration:
        return None
    late = [i.seconds for i in result.omitted_intervals]
    warmup = f"; its {options.omit} s warm-up took {sum(late):.2f} s" if late else ""
    return (
        f"measured {sent:.2f} s of the {options.duration} s asked{warmup}: the sending host did not "
        "keep its timers (starved or stalled), so its figures do not stand for the run"
    )
