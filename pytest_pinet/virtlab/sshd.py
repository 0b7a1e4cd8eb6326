"""Per-host sshd for the virtual lab, each with its own host key.

Giving every namespace its own sshd and host key makes the virtual lab behave like real
hosts: pinet reaches them through the same fabric path, with the host key pinned from a
known_hosts file the lab writes, so a wrong or swapped host is refused, not trusted.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import signal
import socket
from pathlib import Path

from ..errors import LabFault
from ..polling import wait_until
from . import system

SSHD_CONFIG = """\
# Written by pinet lab up for host {host}; removed by pinet lab down.
ListenAddress {address}
Port 22
HostKey {host_key}
PidFile {pid_file}
AuthorizedKeysFile {authorized_keys}
# The same keys for a user other than root (a peer logging in as an ordinary user with sudo):
# read by root, because the lab's state directory is not the user's to read.
AuthorizedKeysCommand {cat} {authorized_keys}
AuthorizedKeysCommandUser root
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
PubkeyAuthentication yes
StrictModes no
UsePAM no
UseDNS no
PrintMotd no
X11Forwarding no
AllowTcpForwarding no
MaxStartups 50:30:100
MaxSessions 50
LogLevel ERROR
Subsystem sftp internal-sftp
"""


def generate_key(path: Path, comment: str) -> str:
    """Create an ed25519 key pair at ``path`` (no passphrase); return the public key line."""
    if not path.exists():
        system.run(
            [system.find_tool("ssh-keygen"), "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", str(path)]
        )
    os.chmod(path, 0o600)
    return path.with_suffix(".pub").read_text(encoding="utf-8").strip()


def write_config(host_dir: Path, host: str, address: str, authorized_keys: Path) -> Path:
    """Write the sshd_config of ``host``; return its path."""
    config = host_dir / "sshd_config"
    config.write_text(
        SSHD_CONFIG.format(
            host=host,
            address=address,
            host_key=host_dir / "ssh_host_ed25519_key",
            pid_file=host_dir / "sshd.pid",
            authorized_keys=authorized_keys,
            cat=system.find_tool("cat"),
        ),
        encoding="utf-8",
    )
    return config


def start(netns: str, host_dir: Path, address: str, timeout: float = 10.0) -> int:
    """Start sshd inside ``netns`` and wait until it accepts connections; return its pid."""
    Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # privilege-separation directory
    sshd = system.find_tool("sshd")
    config = host_dir / "sshd_config"
    system.run([sshd, "-t", "-f", str(config)])  # reject a broken config with sshd's reason
    daemon = [sshd, "-f", str(config), "-E", str(host_dir / "sshd.log")]
    rc_file = Path(pwd.getpwuid(os.geteuid()).pw_dir) / ".bashrc"
    if rc_file.is_file():
        # bash sources ~/.bashrc for every command sshd runs; a developer's (pyenv init, say)
        # cost 0.12 s per command here and changed the lab hosts' PATH.  `ip netns exec`
        # gives sshd a mount namespace of its own, so an empty file bound over it there
        # leaves the machine's own file alone and vanishes with sshd.
        empty = host_dir / "empty-bashrc"
        empty.write_text("", encoding="utf-8")
        daemon = [
            "sh",
            "-c",
            'mount --bind "$1" "$2" && shift 2 && exec "$@"',
            "sh",
            str(empty),
            str(rc_file),
            *daemon,
        ]
    system.run(daemon, netns=netns)
    wait_for_port(address, 22, timeout)
    return read_pid(host_dir)


def read_pid(host_dir: Path) -> int:
    """The running sshd's pid from its pid file (0 if none)."""
    try:
        return int((host_dir / "sshd.pid").read_text(encoding="utf-8").strip())
    except (OSError, ValueError):
        return 0


def stop(host_dir: Path) -> None:
    """Stop the sshd whose pid file is in ``host_dir``, if it runs."""
    pid = read_pid(host_dir)
    if pid > 0:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)


def wait_for_port(address: str, port: int, timeout: float) -> None:
    """Block until ``address:port`` accepts a TCP connection or ``timeout`` passes."""
    last_error = ["no attempt"]

    def greets() -> bool:
        try:
            with socket.create_connection((address, port), timeout=1.0) as connection:
                banner = connection.recv(64)
        except OSError as exc:
            last_error[0] = exc.strerror or str(exc)
            return False
        if not banner.startswith(b"SSH-"):
            last_error[0] = f"unexpected banner {banner[:20]!r}"
        return banner.startswith(b"SSH-")

    def not_ready() -> LabFault:
        return LabFault(
            "unreachable", f"sshd on {address}:{port} not ready after {timeout:.0f} s ({last_error[0]})"
        )

    wait_until(greets, timeout=timeout, pace=0.05, on_timeout=not_ready)
