"""The two machine-wide settings a virtual lab needs, raised by the first lab of this machine
and put back by the last: the per-CPU backlog and the list of congestion controls a
namespace may choose.

Why a register: several labs come and go at once (xdist workers, the test command's two
workers, a bench beside a run), each under its own lab lock.  Without one, a lab going down
while another was being built saw no other lab's namespaces yet and put the backlog back to
1000 under the lab being built, whose links then dropped frames at GbE.  Each lab that holds
the settings leaves a file named after it in :data:`HOLDERS`; changes are made under one
machine-wide lock, and the settings go back only when no holder is left.  A killed lab's
file stays until its ``down`` (which every clean-up path runs) removes it: until then the
settings stay raised, which costs nothing.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

from . import file_lock

BACKLOG = Path("/proc/sys/net/core/netdev_max_backlog")
LAB_BACKLOG = 10000
BACKLOG_SAVED = Path("/run/pinet-netdev_max_backlog.orig")
ALLOWED_CC = Path("/proc/sys/net/ipv4/tcp_allowed_congestion_control")
ALLOWED_CC_SAVED = Path("/run/pinet-tcp_allowed_congestion_control.orig")
HOLDERS = Path("/run/pinet-labs")  # one empty file per lab holding the settings


def machine_lock() -> contextlib.AbstractContextManager[None]:
    """Held while the register or the settings change (and while a check reads them)."""
    return file_lock.exclusive(HOLDERS / ".lock")


def hold(lab: str) -> None:
    """Lab ``lab`` is being built: raise the settings (saving the originals once)."""
    with machine_lock():
        (HOLDERS / lab).touch()
        _raise_backlog()
        _allow_cubic()


def release(lab: str) -> None:
    """Lab ``lab`` is gone: put the originals back if no other lab holds the settings."""
    with machine_lock():
        (HOLDERS / lab).unlink(missing_ok=True)
        if holders():
            return
        for setting, saved in ((BACKLOG, BACKLOG_SAVED), (ALLOWED_CC, ALLOWED_CC_SAVED)):
            if saved.exists():
                setting.write_text(saved.read_text(encoding="utf-8").strip())
                saved.unlink()


def holders() -> list[str]:
    """The labs holding the settings now (read under :func:`machine_lock` to act on it)."""
    if not HOLDERS.is_dir():
        return []
    return sorted(path.name for path in HOLDERS.iterdir() if path.name != ".lock")


def _raise_backlog() -> None:
    """Every veth frame passes the per-CPU backlog; the default 1000 drops at GbE rates.

    The setting is global (not per namespace), so its original value is kept in one place
    for the whole machine, whatever state root a lab uses (the bench's and the tests' labs
    live in temporary ones)."""
    current = int(BACKLOG.read_text().strip())
    if not BACKLOG_SAVED.exists():
        BACKLOG_SAVED.write_text(str(current), encoding="utf-8")
    if current < LAB_BACKLOG:
        BACKLOG.write_text(str(LAB_BACKLOG))


def _allow_cubic() -> None:
    """Let the namespaces make cubic their default, as the boards' and peers' OSes do.

    Linux lets a network namespace other than the first default only to an algorithm in the
    machine-wide allowed list, which on a machine defaulting to BBR may lack cubic.  Like the
    backlog, the original list is kept once for the machine and put back with the last lab.
    """
    try:
        current = ALLOWED_CC.read_text().split()
    except OSError:
        return  # no TCP sysctls here: the lab runs with the kernel's default
    if "cubic" in current:
        return
    if not ALLOWED_CC_SAVED.exists():
        ALLOWED_CC_SAVED.write_text(" ".join(current), encoding="utf-8")
    with contextlib.suppress(OSError):  # cubic not built: the hosts keep the machine's default
        ALLOWED_CC.write_text(" ".join([*current, "cubic"]))
