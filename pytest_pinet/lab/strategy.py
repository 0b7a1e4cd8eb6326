"""A labgrid Strategy that takes a board from off to flashed, on, reachable and provisioned.

Power goes through whatever PowerProtocol driver the env gives the target (PDU, PoE, relay,
ExternalPowerDriver, QEMU), so the same strategy drives any lab.  Where the env also gives the
board a ShellDriver on its serial console, the strategy logs in there after every boot, so a
console that stopped working is found, not only a network that did.  "Reachable" means an SSH
command answered through pinet's pinned connection, within a bound; while waiting, any
console the target has is read, so a board that does not come back leaves its boot log in
the report instead of a bare timeout.

With an image to run (``use_image``), "provisioned" means that image: a board that already
runs it (its marker and kernel say so) is kept; otherwise the board goes off, is flashed
("flashed": the image written while the board is dark, through labgrid's SD mux and storage
drivers or its TFTP provider), boots, and must show the image's kernel and OS.

Real labs can name it in their env file (``imports: [pytest_pinet.lab.strategy]`` and
``PinetBoardStrategy: {}`` under the board's drivers); pinet also creates it on demand.
"""

from __future__ import annotations

import enum
import inspect
import re
import socket
import threading
import time
from collections.abc import Callable
from typing import Any

import attr
from labgrid.exceptions import NoDriverFoundError
from labgrid.factory import target_factory
from labgrid.step import step
from labgrid.strategy import Strategy, StrategyError

from ..errors import LabFault, PinetError
from ..polling import wait_until

BOOT_TELL_EVERY_S = 15.0  # how often a boot in progress says so
# Asked on the console of a board whose boot stalled before SSH answered.
STALLED_BOOT_QUESTION = (
    "systemctl list-jobs --no-pager 2>&1 | head -n 15; systemctl --failed --no-pager 2>&1 | head -n 10"
)


# Terminal control sequences and other control characters a console sends (a BIOS clears the
# screen, a login shell sets bracketed paste): in a progress line or a fault they only garble.
_CONTROL = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[@-Z\\-~]|[\x00-\x08\x0b-\x1f\x7f]")


def readable(console: str) -> str:
    """``console`` without terminal control sequences: what a person reads of it."""
    return _CONTROL.sub("", console)


class BoardState(enum.Enum):
    """Where a board is, from pinet's point of view."""

    unknown = 0
    off = 1
    on = 2
    reachable = 3
    provisioned = 4
    flashed = 5  # off, with the requested image written for its next boot


@target_factory.reg_driver
@attr.s(eq=False)
class PinetBoardStrategy(Strategy):  # type: ignore[misc]
    """off -> [flashed] -> on -> reachable (SSH answers) -> provisioned (the requested image
    verified, the tools pinet needs there)."""

    bindings = {  # noqa: RUF012 - labgrid reads this class attribute
        "power": "PowerProtocol",
        "service": "NetworkService",
        "console": {"ConsoleProtocol", None},
        "shell": {"ShellDriver", None},
    }

    status: BoardState = attr.ib(default=BoardState.unknown)
    boot_timeout: float = attr.ib(default=120.0, converter=float)
    power_timeout: float = attr.ib(default=60.0, converter=float)
    # Power cycles before a board that stays unreachable is a boot-timeout fault: an emulated
    # board on a busy host now and then stalls in its boot (RCU stalls, no network), and a
    # lab engineer's first cure is one more power cycle.  Every cycle is told and counted.
    boot_attempts: int = attr.ib(default=2, converter=int)
    required_tools: tuple[str, ...] = attr.ib(default=("iperf3", "ethtool", "ip"), converter=tuple)

    def __attrs_post_init__(self) -> None:
        super().__attrs_post_init__()
        self.remote: Any = None  # a pinet RemoteHost, set by pinet; else a TCP banner check
        self.console_log = ""
        self.boot_seconds: float | None = None
        self.boot_cycles = 0  # power cycles the last boot took (more than 1: it stalled first)
        # Why each power cycle of the last boot that did not answer stalled, with its console:
        # the next cycle's boot overwrites the console log, and a stall cured by it left no
        # trace of its cause (a QEMU board with its network up but no sshd, twice).
        self.stalled_cycles: list[str] = []
        self.console_kernel: str | None = None  # `uname -r` read over the serial console
        self.console_login_seconds: float | None = None
        self.image: Any = None  # the CatalogueImage "provisioned" means; None: whatever runs
        self.flashes: list[Any] = []  # every Flash this strategy did
        self.booted: Any = None  # HostFacts read when the image was verified
        # Where a boot's progress is told (pinet's terminal line); a boot takes a minute or
        # more under emulation, and silence then looks like a hang.
        self.say: Callable[[str], None] | None = None

    @step(args=["status"])  # type: ignore[untyped-decorator]
    def transition(self, status: BoardState | str, *, step: Any = None) -> None:
        """Bring the board to ``status`` (a BoardState or its name)."""
        if not isinstance(status, BoardState):
            try:
                status = BoardState[status]
            except KeyError:
                raise StrategyError(f"unknown board state {status!r}") from None
        if status == BoardState.unknown:
            raise StrategyError("can not transition to unknown")
        if status == self.status:
            return
        if status == BoardState.off:
            self._leave_shell()
            self._switch(on=False)
        elif status == BoardState.on:
            self._switch(on=True)
        elif status == BoardState.reachable:
            self._cycle_and_wait()
        elif status == BoardState.flashed:
            self._flash()
        elif status == BoardState.provisioned:
            if self.image is not None:
                self._provision_image()
            elif self.status != BoardState.reachable:
                self._cycle_and_wait()
            self._check_tools()
        self.status = status

    def use_image(self, image: Any) -> None:
        """Make "provisioned" mean ``image`` (a catalogue image) from now on."""
        if image is not self.image:
            self.image = image
            if self.status == BoardState.provisioned:
                self.status = BoardState.reachable

    def _flash(self) -> None:
        from .provision import flash

        if self.image is None:
            raise StrategyError("flashed needs an image: call use_image() first")
        self._leave_shell()
        self._switch(on=False)
        self.flashes.append(flash(self.target, self.image))

    def _provision_image(self) -> None:
        """Keep a board that runs the image already; else flash, boot and verify it."""
        from ..host.facts import gather_facts
        from .provision import already_runs, verify, write_marker

        if self.remote is None:
            raise LabFault("provisioning", f"{self.target.name}: no SSH connection to verify the image with")
        if self.status in (BoardState.reachable, BoardState.provisioned) or (
            self.status == BoardState.unknown and self._reachable()[0]
        ):
            facts = gather_facts(self.remote, [])
            if already_runs(self.image, facts):
                self.booted = facts
                return
        self._flash()
        self.status = BoardState.flashed
        self._cycle_and_wait()
        facts = gather_facts(self.remote, [])
        verify(self.target.name, self.image, facts)
        write_marker(self.remote, self.image, facts)
        self.booted = gather_facts(self.remote, [])

    def force(self, status: BoardState | str) -> None:
        """Declare the board to be in ``status`` without touching it (it is already there)."""
        self.status = status if isinstance(status, BoardState) else BoardState[status]

    def _leave_shell(self) -> None:
        """A shell logged in before a power-cycle is gone with it: log in afresh after.

        A console of its own (a console server's port, not the power driver's, as QEMU's is)
        is closed too and opened again after power on: a console server that dropped the
        connection, or was restarted, is then reached afresh, as a person would reconnect.
        """
        if self.shell is not None:
            self.target.deactivate(self.shell)
        if self.console is not None and self.console is not self.power:
            self.target.deactivate(self.console)

    @step(args=["on"])  # type: ignore[untyped-decorator]
    def _switch(self, *, on: bool) -> None:
        """Switch the power, within ``power_timeout``; a switch that fails is a lab fault.

        A network power switch answers HTTP errors, refuses connections or never answers;
        labgrid's drivers wait for ever on the last.  Each ends here as a ``power-switch``
        fault naming the switch's answer, so a night goes on (or stops) as a lab fault, never
        as the board's failure.
        """
        self.target.activate(self.power)
        # The driver's method without labgrid's step decorator: steps are one stack for the
        # process, and a step left open by a call that never returns would break the next.
        method = inspect.unwrap(getattr(type(self.power), "on" if on else "off"))
        outcome: list[BaseException | None] = []

        def run() -> None:
            try:
                method(self.power)
                outcome.append(None)
            except BaseException as exc:  # noqa: BLE001 - handed to the caller below
                outcome.append(exc)

        worker = threading.Thread(target=run, daemon=True, name=f"power-{self.target.name}")
        worker.start()
        worker.join(self.power_timeout)
        what = f"{self.target.name}: power {'on' if on else 'off'} through {type(self.power).__name__}"
        if not outcome:
            raise LabFault(
                "power-switch", f"{what}: no answer within {self.power_timeout:.0f} s", self.target.name
            )
        error = outcome[0]
        if error is not None:
            if isinstance(error, LabFault):
                raise error
            raise LabFault(
                "power-switch", f"{what} failed: {type(error).__name__}: {error}", self.target.name
            ) from error

    def _console_login(self) -> None:
        """Log in on the serial console (labgrid's ShellDriver) and read the kernel there."""
        if self.shell is None:
            return
        started = time.monotonic()
        try:
            self.target.activate(self.shell)
            out = self.shell.run_check("uname -r", timeout=60)
        except Exception as exc:  # labgrid raises its own types for a console that never answers
            self._drain_console()
            raise LabFault(
                "console",
                f"{self.target.name}: no shell on the serial console ({type(exc).__name__}: {exc}); "
                f"console tail:\n{self.console_log[-2000:]}",
            ) from exc
        self.console_login_seconds = time.monotonic() - started
        self.console_kernel = out[0].strip() if out else ""

    def _stalled_boot_says(self) -> str:
        """What a board that did not answer SSH says on its console about its boot: the jobs
        systemd still waits for and the units that failed ("" without a shell on a console).
        A board whose network came up without sshd left no clue before the next cycle."""
        if self.shell is None:
            return ""
        if not readable(self.console_log).strip():
            # Nothing on the console this cycle (a dark port, a board that never started):
            # there is nobody to ask, and a login would wait its whole bound per cycle.
            return "\nconsole shell: not asked (the console stayed silent)"
        patience = getattr(self.shell, "login_timeout", None)
        try:
            if patience is not None:
                self.shell.login_timeout = min(patience, 10)  # no getty yet: do not wait 300 s
            self.target.activate(self.shell)
            out, _, _ = self.shell.run(STALLED_BOOT_QUESTION, timeout=30)
        except Exception as exc:  # noqa: BLE001 - labgrid's own types; evidence, never the fault
            self._drain_console()
            return f"\nconsole shell: none ({type(exc).__name__}: {exc})"
        finally:
            if patience is not None:
                self.shell.login_timeout = patience
        return "\nsystemd on the console:\n" + "\n".join(out)[-3000:]

    def _cycle_and_wait(self) -> None:
        """Power-cycle until the board answers SSH, at most ``boot_attempts`` times."""
        attempts = max(1, self.boot_attempts)
        self.boot_cycles = 0
        self.stalled_cycles = []
        for attempt in range(1, attempts + 1):
            self.boot_cycles = attempt
            last = self._power_cycle_and_wait()
            if last is None:
                return
            tail = readable(self.console_log)[-2000:] or "(no console on this target)"
            said = self._stalled_boot_says()
            self.stalled_cycles.append(f"cycle {attempt}: {last}; console tail:\n{tail}{said}")
            if attempt < attempts:
                self._tell(
                    f"not reachable {self.boot_timeout:.0f} s after power on ({last}): "
                    f"power-cycling again ({attempt + 1} of {attempts})"
                )
        tail = readable(self.console_log)[-2000:] or "(no console on this target)"
        cycles = "" if attempts == 1 else f" in each of {attempts} power cycles"
        raise LabFault(
            "boot-timeout",
            f"{self.target.name} not reachable {self.boot_timeout:.0f} s after power on{cycles} ({last}); "
            f"console tail:\n{tail}",
        )

    def _power_cycle_and_wait(self) -> str | None:
        """One power cycle and the wait for SSH: None once reachable, else why not."""
        self._leave_shell()
        self.console_log = ""
        self.console_kernel = self.console_login_seconds = None  # this boot's, never the last one's
        self._switch(on=False)
        started = time.monotonic()
        self._switch(on=True)
        if self.console is not None:
            self.target.activate(self.console)
        last = ["not tried"]
        told = [started]

        def reachable() -> bool:
            self._drain_console()
            ok, last[0] = self._reachable()
            if not ok and time.monotonic() - told[0] >= BOOT_TELL_EVERY_S:
                told[0] = time.monotonic()
                console = readable(self.console_log).strip().splitlines()[-1:] or ["(no console output yet)"]
                self._tell(
                    f"booting, {told[0] - started:.0f} s of at most {self.boot_timeout:.0f} s; "
                    f"console: {console[0][-100:]}"
                )
            return ok

        if wait_until(reachable, timeout=started + self.boot_timeout - time.monotonic(), pace=0.2):
            self.boot_seconds = time.monotonic() - started
            self._tell(f"up after {self.boot_seconds:.0f} s")
            self._console_login()
            return None
        self._drain_console()
        return last[0]

    def _tell(self, what: str) -> None:
        if self.say is not None:
            self.say(f"pinet: {self.target.name}: {what}")

    def _reachable(self) -> tuple[bool, str]:
        # A banner first: while the board boots, SSH attempts would only fill the log with
        # paramiko's tracebacks of refused and reset connections.
        banner, why = self._banner()
        if not banner:
            return False, why
        if self.remote is not None:
            try:
                self.remote.close()
                result = self.remote.run(["true"], timeout=10)
                return result.ok, f"ssh exit {result.exit_code}"
            except LabFault as exc:
                return False, str(exc)
        return True, "banner"

    def _banner(self) -> tuple[bool, str]:
        try:
            with socket.create_connection((self.service.address, self.service.port), timeout=2) as s:
                s.settimeout(5)
                return s.recv(4).startswith(b"SSH-"), "no SSH banner"
        except OSError as exc:
            return False, exc.strerror or str(exc)

    def console_now(self) -> str | None:
        """The console's text since the last power on, read up to now; None without a console.

        Lab-fault evidence reads it afresh: a board that hung after it booted printed its
        last words after the boot's wait stopped reading.
        """
        if self.console is None:
            return None
        self._drain_console()
        return self.console_log

    def _drain_console(self) -> None:
        if self.console is None:
            return
        for _ in range(64):
            try:
                data = self.console.read(size=4096, timeout=0.05)
            except Exception:  # noqa: BLE001 - labgrid raises a pexpect TIMEOUT when nothing arrived
                return
            if not data:
                return
            self.console_log += data.decode("utf-8", errors="replace")

    def _check_tools(self) -> None:
        if self.remote is None:
            return
        missing = []
        for tool in self.required_tools:
            if not self.remote.run(["sh", "-c", 'command -v "$1"', "sh", tool], timeout=10).ok:
                missing.append(tool)
        if missing:
            raise LabFault("provisioning", f"{self.target.name} lacks {', '.join(missing)}")


def new_strategy(target: Any, host: str, name: str = "pinet-strategy") -> PinetBoardStrategy:
    """A PinetBoardStrategy for ``target``, created on demand.

    A target of a coordinator place sees every NetworkService of the place (board and peers
    alike); the strategy then binds the one named after the host.
    """
    try:
        return PinetBoardStrategy(target, name)
    except Exception as first:  # labgrid: several NetworkService match, or none
        if "NetworkService" not in str(first):
            raise
        target.set_binding_map({"service": host})
        return PinetBoardStrategy(target, name)


class NoBoardStrategy(PinetError):
    """A target pinet cannot power-cycle: its env file gives it no usable power driver."""

    def __init__(self, host: str, why: str) -> None:
        super().__init__(f"{host} cannot be power-cycled: {why}")
        self.host = host


def board_strategy(target: Any, host: str, name: str = "pinet-strategy") -> PinetBoardStrategy:
    """The host's PinetBoardStrategy: the one its env file declares, else one made on demand.

    The one way the fixtures, recovery and ``pinet lab power`` get a strategy; each decides
    what :class:`NoBoardStrategy` means for it (a skip, reconnecting only, an error line).
    """
    try:
        declared: PinetBoardStrategy = target.get_driver(PinetBoardStrategy, activate=False)
        return declared
    except NoDriverFoundError:
        pass
    try:
        return new_strategy(target, host, name)
    except Exception as exc:  # noqa: BLE001 - labgrid: no power driver, or one that fails to bind
        raise NoBoardStrategy(host, str(exc)) from None
