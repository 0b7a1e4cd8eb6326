"""Files a run's hosts left in this machine's ``/tmp`` whose owner is gone.

Why: a namespace host shares this machine's ``/tmp``, and an irtt server's pid file
(``traffic.latency_probe.IrttServer``) is removed by ``stop`` over SSH, so a host that was
hung or lost its sshd (the fault tests do both on purpose) leaves its file behind: two days
of test runs left 22.  ``pinet lab down`` removes those whose process no longer runs an irtt
server; a file whose server still runs (another lab's, or another place's) stays.
"""

from __future__ import annotations

from pathlib import Path

PID_FILES = "pinet-irtt-*.pid"


def _runs_irtt_server(pid_file: Path) -> bool:
    """True while the pid in ``pid_file`` is a live ``timeout ... irtt server`` process."""
    try:
        pid = int(pid_file.read_text(encoding="ascii").strip())
        args = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except (OSError, ValueError):
        return False
    return b"irtt" in args and b"server" in args


def sweep_irtt_pid_files(directory: Path = Path("/tmp")) -> list[str]:  # noqa: S108 - the hosts' /tmp
    """Remove the pid files in ``directory`` whose irtt server is gone; their names."""
    removed = []
    for pid_file in sorted(directory.glob(PID_FILES)):
        if not _runs_irtt_server(pid_file):
            pid_file.unlink(missing_ok=True)
            removed.append(pid_file.name)
    return removed
