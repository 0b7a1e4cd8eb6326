"""The UDP packet-rate generator: built on the host under test, run there, read back as JSON.

The seed measured how many 1472-byte datagrams a board can send with ``sendto``,
``sendmmsg`` and layer-2 raw frames, per thread count, and what CPU it cost. iperf3 cannot
say that (one syscall style, no raw frames), so pinet ships a small C program
(``host_programs/pinet-udpgen.c``). It is compiled on the host during provisioning, cached under
the hash of its source (a changed generator is rebuilt, an unchanged one never), and prints
JSON lines: start, one per interval, end (or error).

What the sender claims is half the story: the receiver's counters say what arrived. They
are read on the peer (the interface's received packets, UDP datagrams to no port) around
the run, and the loss is the difference.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from typing import Any
from weakref import WeakKeyDictionary

from ..errors import LabFault
from ..host.platform import LINUX, Platform
from ..host.remote import RemoteHost
from ..host.shell import checked_interface, quote
from ..host_programs import UDPGEN_SOURCE
from ..model.context import UDP_MODES
from ..model.udp_counters import ReceiverCounters

SOURCE = UDPGEN_SOURCE
MODES = UDP_MODES
CACHE = ".cache/pinet"
MAC = re.compile(r"^[0-9a-f]{2}(:[0-9a-f]{2}){5}$")
_BUILT: WeakKeyDictionary[RemoteHost, str] = WeakKeyDictionary()


def source_hash() -> str:
    """Short hash of the generator's source: the cache key of a built binary."""
    return hashlib.sha256(SOURCE.read_bytes()).hexdigest()[:16]


def built_paths(home: str = "") -> tuple[str, str]:
    """(binary, source) of this generator's build, under ``home`` (the login's home when
    empty: where SSH commands start).  A QEMU board's image carries one built at image time."""
    tag = source_hash()
    return f"{home}{CACHE}/pinet-udpgen-{tag}", f"{home}{CACHE}/pinet-udpgen-{tag}.c"


def build_argv(binary: str, source: str, compiler: str = "cc") -> list[str]:
    """The compiler's command line, the same on a board, in an image's tree and for a lab's
    cross build (``compiler``: qcc for QNX); the source's hash goes in, for ``--version``."""
    return [
        compiler,
        "-O2",
        "-Wall",
        "-pthread",
        f'-DPINET_UDPGEN_SOURCE="{source_hash()}"',
        "-o",
        binary,
        source,
    ]


def version_of(text: str) -> str:
    """The source hash a generator's ``--version`` printed ("" when it printed none)."""
    words = text.split()
    return words[1] if len(words) == 2 and words[0] == "pinet-udpgen" else ""


def ensure_udpgen(host: RemoteHost) -> str:
    """Path of the generator built on ``host``, building it first when missing."""
    if host in _BUILT:
        return _BUILT[host]
    if host.udpgen:  # the lab's own build for this board (a QNX board: cross-compiled)
        said = host.run([host.udpgen, "--version"], timeout=15)
        if version_of(said.stdout) != source_hash():
            found = version_of(said.stdout) or (said.stderr or said.stdout).strip()[:120] or "nothing"
            raise LabFault(
                "tool-missing",
                f"{host.name}: the generator {host.udpgen} (udpgen: in pinet.hosts) is of source "
                f"{found}, this pinet's is {source_hash()}: rebuild it from pytest_pinet/host_programs/"
                f"pinet-udpgen.c with {' '.join(build_argv('pinet-udpgen', 'pinet-udpgen.c', 'qcc'))}",
            )
        _BUILT[host] = host.udpgen
        return host.udpgen
    # In the login user's home (where SSH commands and SFTP start), never a shared /tmp: a
    # binary another user could have planted there would run as the lab's user.
    binary, source = built_paths()
    if not host.run(["test", "-x", binary], timeout=15).ok:
        host.check(["mkdir", "-p", "-m", "700", CACHE], timeout=15)
        host.put(SOURCE, source)
        built = host.run(build_argv(binary, source), timeout=180)
        if not built.ok:
            detail = (built.stderr or built.stdout).strip()[:300]
            hint = "install a C compiler (apt-get install gcc)" if built.exit_code == 127 else detail
            raise LabFault("tool-missing", f"{host.name}: cannot build pinet-udpgen: {hint}")
    _BUILT[host] = binary
    return binary


def forget_udpgen(host: RemoteHost) -> None:
    """Look for the generator on ``host`` afresh on next use: a reflashed card lost it."""
    _BUILT.pop(host, None)


@dataclass(frozen=True)
class UdpGenOptions:
    """What to send; validated here so nothing odd reaches the remote command line."""

    mode: str
    dest: str
    threads: int = 1
    payload: int = 1472
    duration: float = 5.0
    port: int = 9
    interface: str | None = None
    src: str | None = None
    dest_mac: str | None = None

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {self.mode!r}")
        if not 1 <= self.threads <= 64 or not 1 <= self.payload <= 8972 or self.duration <= 0:
            raise ValueError("threads 1..64, payload 1..8972 and a positive duration, please")
        if self.interface is not None:
            checked_interface(self.interface)
        if self.mode == "raw" and (self.interface is None or self.src is None or self.dest_mac is None):
            raise ValueError("raw mode needs interface, src and dest_mac")
        if self.dest_mac is not None and not MAC.match(self.dest_mac):
            raise ValueError(f"not a MAC address: {self.dest_mac!r}")

    def argv(self, binary: str) -> list[str | int | float]:
        """The generator's command line (the receiver counts, so ICMP errors stay out)."""
        argv: list[str | int | float] = [
            binary,
            "--mode",
            self.mode,
            "--dest",
            self.dest,
            "--port",
            self.port,
            "--threads",
            self.threads,
            "--payload",
            self.payload,
            "--duration",
            self.duration,
            "--no-recverr",
        ]
        if self.interface:
            argv += ["--interface", self.interface]
        if self.src:
            argv += ["--src", self.src]
        if self.dest_mac:
            argv += ["--dest-mac", self.dest_mac]
        return argv


@dataclass(frozen=True)
class UdpGenRun:
    """The generator's report: totals, intervals and its CPU use."""

    seconds: float
    packets: int
    bytes: int
    enobufs: int
    errors: int
    proc_cpu_s: float
    sys_busy_pct: float | None
    intervals: tuple[dict[str, Any], ...] = field(default=())
    raw: str = ""

    @property
    def pps(self) -> float:
        """Datagrams per second the sender got out of its syscalls."""
        return self.packets / self.seconds if self.seconds > 0 else 0.0

    @property
    def cpu_percent(self) -> float:
        """The generator's CPU time (user + system) per second of wall time, in percent."""
        return 100.0 * self.proc_cpu_s / self.seconds if self.seconds > 0 else 0.0


def parse_udpgen(text: str, source: str) -> UdpGenRun:
    """Read the JSON lines; an error line, a missing end or garbage is a lab fault naming ``source``."""
    intervals = []
    end: dict[str, Any] | None = None
    for line in text.splitlines():
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            raise LabFault("udpgen-output", f"{source}: not JSON: {line[:120]!r}") from None
        kind = event.get("event") if isinstance(event, dict) else None
        if kind == "error":
            raise LabFault("udpgen", f"{source}: {event.get('message', 'unknown error')}")
        if kind == "interval":
            intervals.append(event)
        elif kind == "end":
            end = event
    if end is None:
        raise LabFault("udpgen-output", f"{source}: no end line (killed or truncated): {text[-200:]!r}")
    busy = [i["sys_busy_pct"] for i in intervals if isinstance(i.get("sys_busy_pct"), int | float)]
    try:
        return UdpGenRun(
            seconds=float(end["seconds"]),
            packets=int(end["packets"]),
            bytes=int(end["bytes"]),
            enobufs=int(end.get("enobufs", 0)),
            errors=int(end.get("errors", 0)) + int(end.get("eagain", 0)),
            proc_cpu_s=float(end.get("proc_user_s", 0.0)) + float(end.get("proc_sys_s", 0.0)),
            sys_busy_pct=sum(busy) / len(busy) if busy else None,
            intervals=tuple(intervals),
            raw=text,
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise LabFault("udpgen-output", f"{source}: end line lacks {exc}") from None


def read_receiver(host: RemoteHost, interface: str) -> tuple[float, ReceiverCounters]:
    """One round trip: the receiver's clock, the interface's received packets and the UDP
    counters, read together."""
    checked_interface(interface)
    # The login shell, as for the TCP sampler: bash's builtin clock where it has one.
    result = host.run_shell(host.platform.udp_receiver_script(interface), timeout=15)
    if not result.ok:
        raise LabFault(
            "command",
            f"{host.name}: receiver counters: exited {result.exit_code}: {result.stderr.strip()[:300]}",
        )
    return parse_receiver(result.stdout, f"receiver counters on {host.name}", host.platform)


def parse_receiver(out: str, source: str, platform: Platform = LINUX) -> tuple[float, ReceiverCounters]:
    """The clock and counters :func:`read_receiver` printed; a lab fault naming ``source``
    when a line is missing or unreadable (a clock without sub-second digits among them)."""
    lines = out.split("\n", 2)
    udp = platform.udp_counters(lines[2] if len(lines) > 2 else "")
    try:
        clock = float(lines[0].strip().replace(",", "."))
    except ValueError:
        clock = -1.0
    if len(lines) < 3 or clock < 0 or not lines[1].strip().isdigit() or not udp:
        raise LabFault("command", f"unreadable {source}: {out[:200]!r}")
    counters = ReceiverCounters(
        int(lines[1]), udp.get("InDatagrams", 0), udp.get("NoPorts", 0), udp.get("RcvbufErrors", 0)
    )
    return clock, counters


def run_udpgen(host: RemoteHost, options: UdpGenOptions) -> UdpGenRun:
    """Build if needed, run for ``options.duration`` under a remote timeout, parse."""
    binary = ensure_udpgen(host)
    argv = ["timeout", "--kill-after=5", int(options.duration + 15), *options.argv(binary)]
    result = host.run(argv, timeout=options.duration + 30, root=options.mode == "raw")  # raw: CAP_NET_RAW
    source = f"pinet-udpgen on {host.name} ({quote(argv)})"
    if result.exit_code == 2:
        raise LabFault("udpgen", f"{source}: refused its arguments: {result.stderr.strip()[:300]}")
    return parse_udpgen(result.stdout, source)
