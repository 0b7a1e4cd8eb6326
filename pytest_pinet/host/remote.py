"""Run commands on lab hosts over SSH (fabric), with the host key pinned.

labgrid's own SSHDriver disables host key checking; a lab that flashes and reboots boards
all night needs the opposite: a host answering with another key is a different (or
compromised) host, and talking to it would make every figure meaningless.  Every command is
built from an argument list and quoted with ``shlex.join``: interface names or arguments with
shell metacharacters reach the remote program as literal text.
"""

from __future__ import annotations

import contextlib
import logging
import re
import socket
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import ConfigError, LabFault, doc
from .platform import Platform, platform_of_uname
from .shell import quote
from .ssh_route import Hop, auth_kwargs, read_config, resolve

log = logging.getLogger(__name__)

# What a command that needs root says when it does not have it (ip/tc "Operation not
# permitted", sysfs "Permission denied", mkfs/mount "must be root"), and what sudo -n says
# when it will not run a command without a password.
PERMISSION_DENIED = re.compile(
    r"operation not permitted|permission denied|must be (run as )?root|are you root", re.I
)
SUDO_REFUSED = re.compile(
    r"sudo: (a password is required|a terminal is required|.*not allowed to execute|.*not in the sudoers"
    r"|.*command not found|not found)",
    re.I,
)


def quiet_paramiko() -> None:
    """paramiko narrates every connection at INFO; a test log should show our lines, not those.
    Set when pinet first connects, not when this module is imported: a program that imports
    pinet and uses paramiko itself keeps its own logging until pinet opens a connection, and a
    level someone set before that is left as it is."""
    logger = logging.getLogger("paramiko")
    if logger.level == logging.NOTSET:
        logger.setLevel(logging.WARNING)


@dataclass(frozen=True)
class SshEndpoint:
    """How to reach a host: what a labgrid NetworkService plus the pinet section say."""

    name: str
    address: str
    username: str
    port: int
    identity: Path | None
    known_hosts: Path
    password: str | None = None
    # The ssh_config followed for aliases, key files and ProxyJump (see .ssh_route); None:
    # none, the address is dialled as it is.
    ssh_config: Path | None = None

    def __repr__(self) -> str:
        # Never let a password reach a log or a report through a repr.
        secret = ", password=***" if self.password else ""
        return f"SshEndpoint({self.name}: {self.username}@{self.address}:{self.port}{secret})"


@dataclass(frozen=True)
class CommandResult:
    """What a remote command did."""

    command: str
    exit_code: int
    stdout: str
    stderr: str

    @property
    def ok(self) -> bool:
        """True for exit status 0."""
        return self.exit_code == 0


class RemoteHost:
    """One SSH connection to one host, opened on first use and reused afterwards."""

    def __init__(
        self,
        endpoint: SshEndpoint,
        connect_timeout: float = 10.0,
        platform: Platform | None = None,
        become: str | None = None,
        udpgen: str | None = None,
    ) -> None:
        self.endpoint = endpoint
        # The lab's own build of the UDP generator on this host (inventory ``udpgen:``), for a
        # board with no compiler (QNX: cross-compiled); None: pinet builds it on the host.
        self.udpgen = udpgen
        self.connect_timeout = connect_timeout
        self._platform = platform
        self._platform_given = platform  # the inventory's ``os:``; else learned, see forget_os
        # "sudo": commands that need root go through ``sudo -n`` (a peer logging in as an
        # ordinary user); None: they run as the login user, which must then be root.
        self.become = become
        self._connection: Any = None
        self._jumps: list[Any] = []  # the jump hosts' connections in front of it
        # Several threads share one host (a client, the adaptive sampler, snapshots): one
        # connects, the others wait and reuse it, and no one closes another's new connection.
        self._lock = threading.RLock()
        # Why the host last failed to answer at all (a channel or a banner that never came),
        # until it answers again or the connection is closed from outside (a power-cycle):
        # clean-up commands are then not sent, each would wait out its own 10 s for nothing.
        self._silent: str | None = None

    @property
    def name(self) -> str:
        """The host's name in the inventory."""
        return self.endpoint.name

    @property
    def silent(self) -> str | None:
        """Why the host is not asked clean-ups now (it just failed to answer at all), or None."""
        return self._silent

    def mark_silent(self, why: str) -> None:
        """Note that the host gave no answer where one was due (the evidence after a fault):
        its clean-ups are then not sent until it answers again or is power-cycled."""
        self._silent = why

    def _connect(self) -> Any:
        """Open the connection as the route says: through each jump host in turn, every one
        of them and the host itself pinned by the lab's known_hosts."""
        ep = self.endpoint
        quiet_paramiko()
        try:
            route = resolve(ep.address, ep.username, ep.port, read_config(ep.ssh_config), str(ep.ssh_config))
        except ConfigError as exc:
            raise LabFault("ssh", f"cannot route SSH to {ep!r}: {exc}", ep.name) from None
        gateway = None
        for hop in route.jumps:  # each jump host is reached through the one before it
            gateway = self._pinned(hop, auth_kwargs(hop, ep.identity, None, jump=True), gateway)
            self._jumps.append(gateway)
        connection = self._pinned(route.target, auth_kwargs(route.target, ep.identity, ep.password), gateway)
        via = f" via {', '.join(str(hop) for hop in route.jumps)}" if route.jumps else ""
        try:
            connection.open()
        except (OSError, EOFError) as exc:
            raise LabFault("unreachable", f"cannot reach {ep!r}{via}: {exc}", ep.name) from None
        except Exception as exc:  # noqa: BLE001 - paramiko's SSHException family and BadHostKeyException
            raise LabFault(
                "ssh", f"SSH to {ep!r}{via} failed: {type(exc).__name__}: {exc}", ep.name
            ) from None
        for opened in (*self._jumps, connection):
            no_delay(opened)
        return connection

    def _pinned(self, hop: Hop, auth: dict[str, Any], gateway: Any) -> Any:
        """A fabric Connection to ``hop`` that trusts exactly the lab's known_hosts."""
        from fabric import Config, Connection
        from paramiko import RejectPolicy

        connect_kwargs: dict[str, Any] = {
            **auth,
            "banner_timeout": self.connect_timeout,
            "auth_timeout": self.connect_timeout,
            # Opening a session on a host whose sshd hangs would otherwise wait paramiko's
            # default hour: a hung board must become a lab fault in seconds.
            "channel_timeout": self.connect_timeout,
        }
        # fabric reads no ssh_config itself (.ssh_route resolved it, jump hosts included, so
        # that no hop escapes the pin) and forwards no stdin (under pytest's capture it fails
        # intermittently).
        config = Config(overrides={"load_ssh_configs": False, "run": {"in_stream": False}})
        connection = Connection(
            hop.host,
            user=hop.user,
            port=hop.port,
            config=config,
            gateway=gateway,
            connect_timeout=self.connect_timeout,
            connect_kwargs=connect_kwargs,
        )
        client = connection.client
        # Trust exactly the lab's known_hosts, for the jump hosts as for the host itself:
        # fabric's default would add unknown keys, and the user's ~/.ssh/known_hosts is never
        # read, so it cannot stand in for the lab's pin.
        client.set_missing_host_key_policy(RejectPolicy())
        client.get_host_keys().load(str(self.endpoint.known_hosts))
        return connection

    @property
    def platform(self) -> Platform:
        """The commands of this host's operating system: the inventory's ``os:``, else what
        ``uname -s`` says on the first connection (Unsupported for a system pinet cannot
        drive, with the reason)."""
        with self._lock:
            if self._platform is None:
                said = self.run_shell(quote(["uname", "-s"]), timeout=15)
                if not said.ok:
                    raise LabFault(
                        "facts", f"{self.name}: `uname -s` failed: {said.stderr.strip()[:200]}", self.name
                    )
                self._platform = platform_of_uname(self.name, said.stdout)
            return self._platform

    @property
    def connection(self) -> Any:
        """The open fabric Connection, reconnecting if the transport dropped."""
        with self._lock:
            if self._connection is None or not self._connection.is_connected:
                # A reconnect is no answer yet: the host stays silent until a command comes
                # back.  Clearing it here let a sampler's retry on a hung board make the
                # evidence and the restores after it wait 10 s each again (25 s in a trial).
                self._drop()
                self._connection = self._connect()
            return self._connection

    @property
    def sudo(self) -> bool:
        """True when commands that need root go through ``sudo -n``."""
        return self.become == "sudo"

    def run(
        self,
        argv: Sequence[str | int | float],
        *,
        timeout: float = 60.0,
        root: bool = False,
        cleanup: bool = False,
    ) -> CommandResult:
        """Run ``argv`` on the host; never raises for a non-zero exit status.

        ``root``: the command needs root.  Through ``sudo -n`` when the host says ``become:
        sudo``; a refusal for want of root is then a ``permission`` lab fault naming the
        command and the fix, never mistaken for a host that lacks the feature.  ``cleanup``:
        as for :meth:`run_shell`.
        """
        script = quote(["sudo", "-n", "--", *argv] if root and self.sudo else argv)
        result = self.run_shell(script, timeout=timeout, cleanup=cleanup)
        if root:
            self.refused_root(result, quote(argv))
        return result

    def refused_root(self, result: CommandResult, what: str) -> None:
        """Raise a ``permission`` lab fault when ``result`` failed for want of root."""
        if result.ok:
            return
        said = next((line.strip() for line in result.stderr.splitlines() if line.strip()), "")
        user = self.endpoint.username
        if self.sudo and SUDO_REFUSED.search(result.stderr):
            raise LabFault(
                "permission",
                f"{self.name}: sudo -n refused `{what}` ({said}): give {user} passwordless sudo for it "
                f"(see {doc('inventory.md')}, become)",
                self.name,
            )
        if PERMISSION_DENIED.search(result.stderr):
            if self.sudo or user == "root":
                fix = "the host refuses it even to root (a container without the capability?)"
            else:
                fix = f"log in as root, or set `become: sudo` for {self.name} in pinet.hosts"
            raise LabFault(
                "permission",
                f"{self.name}: `{what}` needs root, {user} was refused ({said}): {fix}",
                self.name,
            )

    def run_shell(
        self, script: str, *, timeout: float = 60.0, root: bool = False, cleanup: bool = False
    ) -> CommandResult:
        """Run a command line the caller built with :func:`quote` (for pipes and ``&&``).

        ``root``: a script whose builder put ``sudo -n`` where it needs root (see
        :attr:`sudo`); a refusal is reported as for :meth:`run`.  ``cleanup``: a clean-up
        after a run (stop a server, collect evidence) that a host which has just failed to
        answer at all is not asked: a ``timeout`` lab fault at once, saying why.  A hung
        board cost each such command 10 s, three of them after every hang.
        """
        if root:
            result = self.run_shell(script, timeout=timeout, cleanup=cleanup)
            self.refused_root(result, script)
            return result
        from invoke.exceptions import CommandTimedOut

        # Until ``uname -s`` has named the platform, a POSIX shell's PATH is all there is.
        prelude = self._platform.user_prelude if self._platform is not None else ""
        command = script if self.endpoint.username == "root" else prelude + script

        silent = self._silent
        if cleanup and silent is not None:
            log.debug("%s$ (not sent: %s) %s", self.name, silent, command)
            raise LabFault("timeout", f"{self.name}: `{command}` not sent: {silent}", self.name)
        log.debug("%s$ %s", self.name, command)
        try:
            connection = self.connection
        except LabFault as exc:
            if _no_answer(exc):
                self._silent = f"it gave no answer ({exc})"
            raise
        watchdog = _Watchdog(connection, timeout + STUCK_GRACE_S)
        started = time.monotonic()
        try:
            result = connection.run(command, hide=True, warn=True, timeout=timeout, in_stream=False)
            # What each command cost is where a slow test's time went (--log-file-level=DEBUG).
            log.debug("%s: exit %s after %.3f s", self.name, result.exited, time.monotonic() - started)
        except CommandTimedOut:
            raise LabFault(
                "timeout", f"{self.name}: `{command}` still running after {timeout:.0f} s", self.name
            ) from None
        except Exception as exc:  # OSError, EOFError, paramiko's SSHException: the link died
            if watchdog.fired.is_set():
                self.close()
                self._silent = f"it gave no answer within {watchdog.seconds:.0f} s"
                raise LabFault(
                    "timeout",
                    f"{self.name}: `{command}` had no answer within {watchdog.seconds:.0f} s "
                    "(a hung host never opens the channel): connection closed",
                    self.name,
                ) from None
            if isinstance(exc, (TimeoutError, OSError, EOFError)):
                self.close()
                raise LabFault(
                    "ssh-dropped", f"{self.name}: connection lost during `{command}`: {exc}", self.name
                ) from None
            if type(exc).__module__.startswith("paramiko"):
                self.close()
                if "timeout" in str(exc).lower():  # "Timeout opening channel.": a hung sshd
                    self._silent = f"it opened no channel within {self.connect_timeout:.0f} s"
                raise LabFault("ssh-dropped", f"{self.name}: `{command}`: {exc}", self.name) from None
            raise
        finally:
            watchdog.cancel()
        self._silent = None
        if int(result.exited) == -1 and not self._still_connected():
            # No exit status and the transport is gone: sshd (or the host) died under the
            # command, which is not the command's own failure.
            self.close()
            raise LabFault(
                "ssh-dropped", f"{self.name}: connection lost during `{command}` (no exit status)", self.name
            )
        return CommandResult(command, int(result.exited), str(result.stdout), str(result.stderr))

    def forget_os(self) -> None:
        """Ask ``uname -s`` again on next use, unless the inventory names the OS: a reflashed
        board may run another system (a catalogue of Raspberry Pi OS and FreeBSD images)."""
        with self._lock:
            self._platform = self._platform_given

    def _still_connected(self) -> bool:
        with self._lock:
            return self._connection is not None and bool(self._connection.is_connected)

    def put(self, local: Path, remote: str) -> None:
        """Copy a local file to ``remote`` on the host (SFTP over the same pinned connection)."""
        try:
            self.connection.put(str(local), remote)
        except (OSError, EOFError) as exc:
            raise LabFault("ssh", f"{self.name}: copying {local.name} to {remote} failed: {exc}") from None

    def check(self, argv: Sequence[str | int | float], *, timeout: float = 60.0, root: bool = False) -> str:
        """Run ``argv`` and return stdout; a non-zero exit is a lab fault with stderr."""
        return stdout_of(self.name, self.run(argv, timeout=timeout, root=root))

    def close(self) -> None:
        """Close the connection (it is reopened on next use, and asked everything again)."""
        with self._lock:
            self._silent = None
            self._drop()

    def _drop(self) -> None:
        """Close the connection and its jump hosts' ones, keeping what is known of the host."""
        with self._lock:
            if self._connection is not None:
                try:
                    self._connection.close()
                except Exception:  # noqa: BLE001, S110 - closing a dead transport may raise anything
                    pass
                self._connection = None
            for jump in reversed(self._jumps):
                with contextlib.suppress(Exception):  # a dead jump transport may raise anything
                    jump.close()
            self._jumps.clear()


# How long past its own timeout a command may wait before its connection is closed under it.
STUCK_GRACE_S = 10.0


def _no_answer(fault: LabFault) -> bool:
    """True for a connection that failed because the host did not answer in time (its sshd
    stopped: TCP is accepted by the kernel, the banner never comes), not one refused."""
    text = str(fault).lower()
    return "banner" in text or "timed out" in text or "timeout" in text


def no_delay(connection: Any) -> None:
    """Send each SSH message at once (TCP_NODELAY) on a connection's own TCP socket.

    paramiko leaves Nagle's algorithm on: a channel open waited for the server's delayed ACK,
    41 ms of every remote command (0.2 ms with it off, on the namespace lab): 0.3 to 0.5 s
    of every test, which runs dozens of commands between its runs.  A connection through
    a jump host rides on a channel, not a socket: its jump's socket is the one to set.
    """
    client = getattr(connection, "client", None)
    transport = client.get_transport() if client is not None else None
    sock = getattr(transport, "sock", None)
    if isinstance(sock, socket.socket):
        with contextlib.suppress(OSError):  # a socket that is not TCP (a test's socketpair)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


class _Watchdog:
    """Closes ``connection``'s transport if a command outlives ``seconds``.

    Why: invoke's timeout starts once the command has started; a host that hangs (every
    process stopped, a board frozen under emulation) keeps the TCP connection open but never
    answers the request to open a channel, and paramiko waits for that answer for ever.  A
    thread sampling the queue once waited so for the whole run.  Closing the transport wakes
    every waiter on it with an error, which the caller turns into a ``timeout`` lab fault.
    """

    def __init__(self, connection: Any, seconds: float) -> None:
        self.connection = connection
        self.seconds = seconds
        self.fired = threading.Event()
        self._timer = threading.Timer(seconds, self._close)
        self._timer.daemon = True
        self._timer.name = "pinet-ssh-watchdog"
        self._timer.start()

    def _close(self) -> None:
        self.fired.set()
        transport = getattr(getattr(self.connection, "client", None), "get_transport", lambda: None)()
        if transport is not None:
            with contextlib.suppress(Exception):  # already closing: the waiter wakes either way
                transport.close()

    def cancel(self) -> None:
        """The command returned in time."""
        self._timer.cancel()


def stdout_of(host: str, result: CommandResult) -> str:
    """``result``'s stdout; a non-zero exit is a lab fault naming the command and its stderr
    (:meth:`RemoteHost.check`, and scripts run with :meth:`RemoteHost.run_shell`)."""
    if not result.ok:
        raise LabFault(
            "command", f"{host}: `{result.command}` exited {result.exit_code}: {result.stderr.strip()[:500]}"
        )
    return result.stdout
