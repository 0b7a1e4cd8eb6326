"""Remote shell text, built only from quoted parts.

Every command pinet sends over SSH is either an argument list (quoted whole by
:func:`quote`) or a short script composed here from such lists and fixed shell text.  No
value from an inventory, a profile or a measurement ever reaches a remote shell unquoted;
``tests/unit/test_remote_shell.py`` checks that every script builder keeps to this.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence

# What a network interface may be called (Linux allows 15 bytes; the BSDs fewer): checked
# before a name ever reaches a command line or a sysfs path.
INTERFACE_NAME = re.compile(r"^[A-Za-z0-9_.:@-]{1,15}$")


def checked_interface(name: str) -> str:
    """The interface name, refused (ValueError) unless it is one a kernel could have given."""
    if not INTERFACE_NAME.match(name):
        raise ValueError(f"not an interface name: {name!r}")
    return name


Argv = Sequence[str | int | float]


def quote(argv: Argv) -> str:
    """A shell command line that passes each element as one literal argument."""
    return shlex.join(str(part) for part in argv)


def as_root(argv: Argv, sudo: bool) -> list[str | int | float]:
    """``argv`` prefixed with ``sudo -n --`` when the host's login user is not root."""
    return ["sudo", "-n", "--", *argv] if sudo else list(argv)


def quiet(argv: Argv) -> str:
    """``argv`` with its error output discarded (a fact that may be absent on a host)."""
    return f"{quote(argv)} 2>/dev/null"


def section(mark: str, name: str) -> str:
    """A line announcing the next section of a multi-part script's output."""
    return quote(["echo", f"{mark}{name}"])


def split_sections(text: str, mark: str) -> dict[str, str]:
    """Section name -> its lines, from the output of a script built with :func:`section`
    (lines before the first marker belong to no section and are dropped)."""
    sections: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in text.splitlines():
        if line.startswith(mark):
            current = sections[line[len(mark) :].strip()] = []
        elif current is not None:
            current.append(line)
    return {name: "\n".join(lines) for name, lines in sections.items()}


def sequence(*commands: str) -> str:
    """Commands run one after the other; the script itself always succeeds."""
    return "; ".join([*commands, "true"])


def read_file_script(path: str) -> str:
    """Print one file, nothing when it is absent."""
    return quiet(["cat", path])


def read_line_script(path: str) -> str:
    """Print a one-line file (sysfs, procfs) with shell builtins, nothing when it is absent.

    No process is started: under software emulation each ``cat`` cost a QEMU board 30-40 ms,
    and a snapshot of two ports read twenty files.  The variable is emptied first, so an
    absent file never prints the one read before it.
    """
    return f'line=; {{ read -r line < {quote([path])} || [ -n "$line" ]; }} 2>/dev/null && echo "$line"'


def when_present_script(argv: Argv) -> str:
    """Run ``argv`` (errors discarded) only where its program exists: ``command -v`` is a
    builtin, while a missing program costs a process start before it fails."""
    return f"{quote(['command', '-v', argv[0]])} >/dev/null 2>&1 && {quiet(argv)}"


def write_file_script(path: str, value: str, sudo: bool = False) -> str:
    """Write ``value`` and a newline to a sysfs or procfs file (through ``sudo -n tee`` for a
    host whose login user is not root: a redirection would be the user's own)."""
    printf = quote(["printf", "%s\\n", value])
    if sudo:
        return f"{printf} | {quote(['sudo', '-n', '--', 'tee', path])} > /dev/null"
    return f"{printf} > {quote([path])}"


def plain_glob(pattern: str) -> str:
    """A glob pattern that may reach the shell unquoted, because it can only expand, never run:
    letters, digits, ``*?[]-_.`` and nothing else."""
    if not pattern or not all(ch.isalnum() or ch in "*?[]-_." for ch in pattern):
        raise ValueError(f"not a plain glob pattern: {pattern!r}")
    return pattern


def glob_script(directory: str, pattern: str) -> str:
    """Names matching a glob in a fixed directory; only the pattern's own wildcards expand."""
    return f"cd {quote([directory])} 2>/dev/null && ls -d {plain_glob(pattern)} 2>/dev/null"
