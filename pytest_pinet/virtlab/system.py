"""Running local system tools (ip, tc, ethtool, ssh-keygen, sshd) for the virtual lab.

Every call takes an argument list, never a shell string, so names and addresses can never be
interpreted by a shell.  Failures become one readable line naming the command.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Sequence

from ..errors import MissingToolError, PinetError

# Debian/Ubuntu package that provides each tool, for the "what to install" message.
TOOL_PACKAGES = {
    "ip": "iproute2",
    "tc": "iproute2",
    "ethtool": "ethtool",
    "sshd": "openssh-server",
    "ssh-keygen": "openssh-client",
    "iperf3": "iperf3",
    "mmdebstrap": "mmdebstrap",
    "mke2fs": "e2fsprogs",
    "qemu-system-x86_64": "qemu-system-x86",
}
SBIN_DIRS = ("/usr/sbin", "/sbin", "/usr/local/sbin")


class CommandError(PinetError):
    """A local command failed; the message holds the command and its stderr."""

    def __init__(self, argv: Sequence[str], returncode: int, stderr: str) -> None:
        self.argv = list(argv)
        self.returncode = returncode
        self.stderr = stderr.strip()
        super().__init__(f"`{' '.join(argv)}` failed ({returncode}): {self.stderr or 'no output'}")


def find_tool(name: str) -> str:
    """Absolute path of ``name``, looking in sbin directories too (root's PATH may lack them)."""
    found = shutil.which(name)
    if found:
        return found
    for directory in SBIN_DIRS:
        candidate = os.path.join(directory, name)
        if os.access(candidate, os.X_OK):
            return candidate
    package = TOOL_PACKAGES.get(name, name)
    raise MissingToolError(f"{name} not found: install it with `apt-get install {package}`")


def require_tools(names: Sequence[str]) -> None:
    """Fail with one line listing every missing tool and the packages that provide them."""
    missing = []
    for name in names:
        try:
            find_tool(name)
        except MissingToolError:
            missing.append(name)
    if missing:
        packages = sorted({TOOL_PACKAGES.get(n, n) for n in missing})
        raise MissingToolError(
            f"missing {', '.join(missing)}: install with `apt-get install {' '.join(packages)}`"
        )


def require_root(action: str) -> None:
    """Namespaces, veth and sshd need root; say so in one line instead of a stack trace."""
    if os.geteuid() != 0:
        raise MissingToolError(f"{action} needs root (network namespaces): run it with sudo or as root")


def run(
    argv: Sequence[str], *, check: bool = True, timeout: float = 30.0, netns: str | None = None
) -> subprocess.CompletedProcess[str]:
    """Run a tool, optionally inside network namespace ``netns``."""
    full = list(argv)
    if netns is not None:
        full = [find_tool("ip"), "netns", "exec", netns, *full]
    try:
        done = subprocess.run(full, capture_output=True, text=True, timeout=timeout, check=False)
    except FileNotFoundError:
        raise MissingToolError(f"{full[0]} not found") from None
    except subprocess.TimeoutExpired:
        raise CommandError(full, -1, f"timed out after {timeout:.0f} s") from None
    if check and done.returncode != 0:
        raise CommandError(full, done.returncode, done.stderr)
    return done
