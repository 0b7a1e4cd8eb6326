"""Round-trip probes over SSH between the two ends of a route: ``irtt`` where both ends have
it, else ``ping`` at a fixed interval (iputils or BSD).

A probe runs like an iperf3 client: a remote ``timeout`` bounds it on the host itself, its
pid file lets pinet stop exactly this probe (SIGINT, so it still reports what it measured),
and an output that holds no series is a lab fault, never an empty figure.  ``timeout`` runs
with ``--foreground`` so the signal reaches the probe once: without it, ``timeout`` passes
SIGINT to the child and then to its whole process group, and irtt, signalled twice, exits 3
("second interrupt") without writing its results (1 stop in 25 on loopback, 0 in 25 with
``--foreground``).  An ``irtt`` server is one per run of load (its idle probe and the probe
beside the load), on a free UDP port, stopped through its own pid file and only if that pid
is still the server pinet started.
"""

from __future__ import annotations

import random
import time
import uuid
from dataclasses import dataclass

from ..errors import LabFault
from ..host.remote import CommandResult, RemoteHost
from ..host.shell import Argv, quote
from .iperf3_runner import client_script, interrupt_script
from .latency_parse import ProbeOutputError, ProbeSeries, parse_irtt, parse_ping, sent_before, sent_from

IRTT, PING = "irtt", "ping"
PING_INTERVAL_S = {"linux": 0.2, "bsd": 1.0}  # unprivileged minimum: iputils 0.2 s, FreeBSD 1 s
IRTT_INTERVAL_S = 0.05  # isochronous UDP: 20 probes a second, 20 bytes each, no load to speak of
# The idle probe's interval: its 20 probes in 0.4 s instead of 1 s, before every measurement
# (0.6 s of each namespace test's 5.9).  50 probes a second of 60-byte packets are still no
# load, and an idle path's round trip does not depend on the probes' spacing.  ping keeps its
# unprivileged minimum.
IRTT_IDLE_INTERVAL_S = 0.02
# How long irtt waits for the last replies: REPLY_WAIT_FACTOR times the slowest round trip it
# has seen, or REPLY_WAIT_S when nothing came back.  A fixed 3 s wait cost every probe 3 s (two
# probes a test: 6 of a namespace test's 14 s) on paths whose RTT is 0.2 ms; three times the
# maximum still waits 6 s behind a 2-second FIFO at 10 Mbit/s.
REPLY_WAIT_S = 3
REPLY_WAIT_FACTOR = 3
IRTT_PORTS = (30000, 39999)


CLOCK_MARK = "clock="


def tools_script() -> str:
    """Prints each probe tool the host has, one a line, and the identity of the kernel whose
    clock it reads (Linux's boot id: namespaces of one machine share it; never fails)."""
    return (
        f'for t in {IRTT} {PING}; do command -v "$t" >/dev/null 2>&1 && echo "$t"; done; '
        f"echo {CLOCK_MARK}$(cat /proc/sys/kernel/random/boot_id 2>/dev/null); true"
    )


# What each host answered, for the session: its tools do not change while it runs, and its
# clock's identity is one kernel's, the same for every end sharing that kernel however often
# it boots. A reflashed card is asked afresh (:func:`forget_probe_tools`).
_TOOLS: dict[RemoteHost, tuple[set[str], str]] = {}


def probe_tools(host: RemoteHost) -> tuple[set[str], str]:
    """The probe tools ``host`` has (``irtt``, ``ping``) and its clock's identity ('' unknown);
    a host that answered is not asked again this session (one that did not, is)."""
    if host in _TOOLS:
        tools, clock = _TOOLS[host]
        return set(tools), clock
    words = host.run_shell(tools_script(), timeout=15).stdout.split()
    clock = next((w.removeprefix(CLOCK_MARK) for w in words if w.startswith(CLOCK_MARK)), "")
    found = set(words) & {IRTT, PING}
    if clock or found:
        _TOOLS[host] = (found, clock)
    return set(found), clock


def forget_probe_tools(host: RemoteHost) -> None:
    """Ask ``host`` for its probe tools afresh: it was reflashed."""
    _TOOLS.pop(host, None)


@dataclass(frozen=True)
class ProbePlan:
    """Which tool probes, from where to where, how often."""

    tool: str
    prober: RemoteHost
    target: RemoteHost
    address: str
    interval_s: float
    same_clock: bool = False  # both ends read one kernel's clock: one-way delays mean something


def choose_probe(prober: RemoteHost, target: RemoteHost, address: str) -> ProbePlan | str:
    """irtt when both ends have it, else ping on the prober; else why neither can run."""
    mine, my_clock = probe_tools(prober)
    theirs, their_clock = probe_tools(target) if IRTT in mine else (set(), "")
    if IRTT in mine and IRTT in theirs:
        same_clock = bool(my_clock) and my_clock == their_clock
        return ProbePlan(IRTT, prober, target, address, IRTT_INTERVAL_S, same_clock)
    if PING in mine:
        flavour = "linux" if prober.platform.name == "linux" else "bsd"
        return ProbePlan(PING, prober, target, address, PING_INTERVAL_S[flavour])
    return f"neither irtt nor ping is installed on {prober.name}"


def ping_argv(address: str, count: int, interval_s: float) -> Argv:
    """``count`` echo requests ``interval_s`` apart, numeric output; the same flags mean the
    same on iputils and the BSDs (``-W`` is seconds on iputils, milliseconds on FreeBSD, and
    only bounds the wait for the last reply, so it is left out)."""
    return ["ping", "-n", "-c", count, "-i", f"{interval_s:g}", address]


def irtt_argv(address: str, port: int, seconds: float, interval_s: float, output: str) -> Argv:
    """An irtt client run of ``seconds``, its JSON written to the file ``output`` (``.json``:
    not gzipped), nothing printed.  To a file, not to stdout: interrupted by SIGINT, irtt
    writes the file with every probe so far, while ``-o -`` prints nothing at all."""
    return [
        "irtt", "client", "-Q", "-i", f"{int(interval_s * 1000)}ms", "-d", f"{seconds:g}s",
        f"--wait={REPLY_WAIT_FACTOR}x{REPLY_WAIT_S}s", "-o", output, f"{address}:{port}",
    ]  # fmt: skip


def irtt_script(bounded: Argv, pid_file: str, output: str) -> str:
    """Run the irtt client as :func:`client_script` does, then print its JSON file and remove
    it, keeping the client's exit status."""
    run = client_script(bounded, pid_file)
    return f"( {run} ); rc=$?; cat {quote([output])} 2>/dev/null; {quote(['rm', '-f', output])}; exit $rc"


class IrttServer:
    """One irtt server on a free UDP port of the target, for the probes of one run."""

    def __init__(self, host: RemoteHost, address: str, lifetime_s: float) -> None:
        self.host = host
        self.address = address
        self.lifetime_s = lifetime_s
        self.pid_file = f"/tmp/pinet-irtt-{uuid.uuid4().hex[:12]}.pid"  # noqa: S108 - remote, unguessable
        self.port = 0

    def _argv(self, port: int) -> Argv:
        return ["timeout", int(self.lifetime_s), "irtt", "server", "-b", f"{self.address}:{port}"]

    def start(self, attempts: int = 4) -> int:
        """Start on a free port and wait until it listens; return the port."""
        last = ""
        for _ in range(attempts):
            port = random.randint(*IRTT_PORTS)  # noqa: S311 - spreading ports, not security
            listening = f"{quote(['ss', '-Huln', f'sport = :{port}'])} | {quote(['grep', '-q', '.'])}"
            start = quote(["sh", "-c", 'echo $$ > "$0" && exec "$@"', self.pid_file, *self._argv(port)])
            script = (
                f"{listening} && exit 4; ({start}) >/dev/null 2>&1 </dev/null & "
                f"for i in $(seq 100); do {listening} && exit 0; sleep 0.05; done; exit 3"
            )
            result = self.host.run_shell(script, timeout=20)
            if result.ok:
                self.port = port
                return port
            last = f"exit {result.exit_code} on port {port}"
            self.port = port
            self.stop()
        name = self.host.name
        raise LabFault("latency-probe", f"{name}: irtt server did not start ({last})", name)

    def stop(self) -> None:
        """Stop this server, only while its pid is still the ``timeout ... irtt server`` pinet
        started, and remove its pid file.  A host that is gone leaves nothing to stop."""
        mine = quote(["grep", "-q", "--", f"irtt server -b {self.address}:{self.port}"])
        script = (
            f"pid=$({quote(['cat', self.pid_file])} 2>/dev/null); "
            f'[ -n "$pid" ] && ps -o args= -p "$pid" | {mine} && kill "$pid"; '
            f"{quote(['rm', '-f', self.pid_file])}; true"
        )
        try:
            self.host.run_shell(script, timeout=15, cleanup=True)
        except LabFault:
            pass


class Probe:
    """One probe run of ``seconds`` on the prober; :meth:`run` blocks, :meth:`stop` ends it
    early from another thread.  Only the probes sent ``keep_from_s`` or later after the first
    are kept (irtt only, which stamps each probe: a probe started with the load skips the
    load's warm-up this way)."""

    def __init__(
        self,
        plan: ProbePlan,
        seconds: float,
        port: int = 0,
        keep_from_s: float = 0.0,
        interval_s: float | None = None,
    ) -> None:
        self.plan = plan
        self.seconds = seconds
        every = plan.interval_s if interval_s is None else interval_s
        self.keep_from_s = keep_from_s if plan.tool == IRTT else 0.0
        name = f"/tmp/pinet-probe-{uuid.uuid4().hex[:12]}"  # noqa: S108 - remote, unguessable
        self.pid_file = f"{name}.pid"
        if plan.tool == IRTT:
            argv = irtt_argv(plan.address, port, seconds, every, f"{name}.json")
        else:
            argv = ping_argv(plan.address, max(1, round(seconds / every)), every)
        self.limit = seconds + REPLY_WAIT_FACTOR * REPLY_WAIT_S + 10
        self.command = quote(argv)
        bounded: Argv = ["timeout", "--foreground", "--kill-after=5", int(self.limit), *argv]
        self.script = (
            irtt_script(bounded, self.pid_file, f"{name}.json")
            if plan.tool == IRTT
            else client_script(bounded, self.pid_file)
        )
        self.outcome: CommandResult | None = None
        self.stopped_early = False
        self.started = 0.0
        self.stopped_after_s: float | None = None

    def run(self) -> None:
        """Run to its end (or until :meth:`stop`)."""
        self.started = time.monotonic()
        self.outcome = self.plan.prober.run_shell(self.script, timeout=self.limit + 10)

    def stop(self) -> None:
        """End the probe with the load: SIGINT, on which ping prints its summary and irtt
        writes its file.  A probe left to run its planned length after an adaptive run had
        stopped cost each such measurement 4 s of nothing (a namespace half duplex: 13.8 s,
        of which 8 were load).  Only the probes sent before now are kept
        (:func:`.latency_parse.sent_before`): the signal lands a moment later."""
        self.stopped_early = True
        self.stopped_after_s = time.monotonic() - self.started if self.started else 0.0
        self.plan.prober.run_shell(interrupt_script(self.pid_file), timeout=15)

    def series(self) -> ProbeSeries:
        """The probes as a series; a probe that printed none is a lab fault."""
        host = self.plan.prober.name
        if self.outcome is None:
            raise LabFault("latency-probe", f"{self.plan.tool} on {host} did not run", host)
        source = f"{self.plan.tool} on {host} ({self.command})"
        try:
            if self.plan.tool == IRTT:
                series = parse_irtt(self.outcome.stdout, source, self.plan.same_clock)
            else:
                series = parse_ping(self.outcome.stdout, source)
        except ProbeOutputError as exc:
            detail = self.outcome.stderr.strip()[:300]
            fault = LabFault(
                "latency-probe",
                f"{exc}; exit {self.outcome.exit_code}{'; stderr: ' + detail if detail else ''}",
                host,
            )
            fault.evidence["probe output"] = self.outcome.stdout[-20000:]
            raise fault from None
        if self.stopped_after_s is not None and self.plan.tool == IRTT:
            series = sent_before(series, self.stopped_after_s)
        if self.keep_from_s:
            series = sent_from(series, self.keep_from_s)
        return trimmed(series) if self.stopped_early else series


def trimmed(series: ProbeSeries) -> ProbeSeries:
    """A series stopped by pinet without its trailing lost probes: those were still in flight
    when the load ended, and whether they would have come back is unknown."""
    end = len(series.rtt_ms)
    while end and series.rtt_ms[end - 1] is None:
        end -= 1
    return series.cut(0, end)


def idle_interval_s(plan: ProbePlan) -> float:
    """How far apart the idle probe's probes go: :data:`IRTT_IDLE_INTERVAL_S` for irtt,
    the load's interval for ping (its unprivileged minimum already)."""
    return IRTT_IDLE_INTERVAL_S if plan.tool == IRTT else plan.interval_s


def run_probe(plan: ProbePlan, seconds: float, port: int = 0, interval_s: float | None = None) -> ProbeSeries:
    """A probe of ``seconds`` from start to end (the idle probe), ``interval_s`` apart (the
    plan's interval unless given), to the irtt server listening on ``port`` (irtt only)."""
    probe = Probe(plan, seconds, port, interval_s=interval_s)
    probe.run()
    return probe.series()


def sleep_until(deadline: float) -> None:
    """Sleep until ``time.monotonic()`` reaches ``deadline``: pacing that is the point (the
    probe under load starts when the load's warm-up ends, not when a condition holds)."""
    time.sleep(max(0.0, deadline - time.monotonic()))  # pacing that is the point (see above)
