"""A root shell on a twin's QEMU board, typed on its serial console through the console server.

A board fresh from its image has no key of the lab's yet: a lab engineer logs in at its
console and does the page's steps there (the key, the test links' networkd files).  The
twin's QEMU board is reached the same way: labgrid's ``SerialDriver`` on the board's
``NetworkSerialPort`` (ser2net's line at the address, port and protocol the env file gives
it) and its ``ShellDriver`` logging in as root, which the image allows on its console only
(SSH takes keys).  labgrid is imported here, when a console is used, as everywhere in the
virtual lab's code that drives it.
"""

from __future__ import annotations

import contextlib
import shlex
from collections.abc import Iterator
from typing import Any

from ..errors import PinetError
from . import qemu_board

# A board still booting when the first step reaches its console: its login prompt comes once
# the emulated boot is done (20-60 s under TCG on a busy 2-core machine).
LOGIN_S = 300
STEP_S = 120


@contextlib.contextmanager
def console_shell(board: str, address: str, port: int, protocol: str = "rfc2217") -> Iterator[Any]:
    """labgrid's ShellDriver on ``board``'s console line ``address:port`` (spoken as
    ``protocol``: ``rfc2217`` or ``raw``), logged in as root."""
    from labgrid import Target
    from labgrid.driver import SerialDriver, ShellDriver
    from labgrid.resource import NetworkSerialPort

    target = Target(f"{board}-console")
    NetworkSerialPort(target, None, host=address, port=port, speed=115200, protocol=protocol)
    SerialDriver(target, None)
    said = qemu_board.shell_driver(board)
    shell = ShellDriver(
        target,
        None,
        prompt=said["prompt"],
        login_prompt=said["login_prompt"],
        username=said["username"],
        login_timeout=LOGIN_S,
    )
    try:
        target.activate(shell)
    except Exception as exc:  # labgrid raises its own types for a console that never answers
        target.cleanup()
        raise PinetError(f"{board}: no root shell on its console {address}:{port}: {exc}") from exc
    try:
        yield shell
    finally:
        target.cleanup()


def run(shell: Any, board: str, script: str, cwd: str = "/root") -> str:
    """Run ``script`` (sh) in ``cwd`` on the console; its output, or an error naming the board."""
    command = f"cd {shlex.quote(cwd)} && sh -e -c {shlex.quote(script)}"
    out, err, status = shell.run(command, timeout=STEP_S)
    if status != 0:
        raise PinetError(f"{board}'s console: exit {status}: {script[:200]}\n" + "\n".join(out + err))
    return "\n".join(out)


def write_file(shell: Any, board: str, path: str, text: str, mode: str = "0644") -> None:
    """Write ``text`` to ``path`` on the board, as a heredoc typed at its console would."""
    folder = path.rsplit("/", 1)[0] or "/"
    run(
        shell,
        board,
        f"mkdir -p {shlex.quote(folder)} && printf %s {shlex.quote(text)} > {shlex.quote(path)}"
        f" && chmod {mode} {shlex.quote(path)}",
    )
