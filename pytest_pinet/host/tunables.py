"""Tunables: one setting of a host (IRQ affinity, RPS/XPS, governor, clock, qdisc, sysctl ...).

This module holds what every tunable shares (the interface, file access, ``apply_checked``);
the tunables themselves are in ``cpu_tunables`` and ``net_tunables``.

Each tunable can probe whether the host supports it, read its current state, apply the
wanted state, read it back, and restore what it found.  A board that cannot take a tunable
(xhci IRQ affinity answers EINVAL, an adapter without XPS queues, a VM without cpufreq) is
not a failed test: the tunable raises :class:`Unsupported` with the reason, and the caller
skips the test and records the fact.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from typing import Any

from ..errors import LabFault, Unsupported
from .remote import RemoteHost
from .shell import glob_script, quote, section, split_sections, write_file_script

SYSCTL_KEY = re.compile(r"^[a-z0-9_.\-/]+$")
GOVERNOR = re.compile(r"^[a-z0-9_]+$")


def write_setting(host: RemoteHost, path: str, value: str) -> tuple[bool, str]:
    """Write ``value`` to a sysfs/procfs file; (ok, error text)."""
    result = host.run_shell(write_file_script(path, value, host.sudo), timeout=15, root=True)
    return result.ok, result.stderr.strip()


def read_setting(host: RemoteHost, path: str) -> str | None:
    result = host.run(["cat", path], timeout=15)
    return result.stdout.strip() if result.ok else None


# Marks between the parts of one batched read or write; no sysfs value starts with them.
SETTING_MARK, SETTING_MISSING, SETTING_FAILED = "@@pinet-setting:", "@@pinet-missing", "@@pinet-failed:"


def read_batch(host: RemoteHost, scripts: dict[str, str]) -> dict[str, str]:
    """Run several read-only scripts in one round trip; key -> what its script printed.
    On a QEMU board each command costs 0.2 s: RPS and XPS over four queues were 29 commands
    a tunable, and nine IRQs of a virtio NIC 36, most of a profile's 15 s set-up."""
    if not scripts:
        return {}
    script = "; ".join(
        f"{section(SETTING_MARK, key)}; {{ {body}; }} 2>/dev/null" for key, body in scripts.items()
    )
    return split_sections(host.run_shell(script, timeout=15).stdout, SETTING_MARK)


def write_batch(host: RemoteHost, scripts: dict[str, str]) -> set[str]:
    """Run several writing scripts (as root) in one round trip; the keys of those that failed."""
    if not scripts:
        return set()
    script = "; ".join(
        f"{{ {body}; }} 2>/dev/null || {section(SETTING_FAILED, key)}" for key, body in scripts.items()
    )
    return set(split_sections(host.run_shell(script, timeout=15, root=True).stdout, SETTING_FAILED))


def read_settings(host: RemoteHost, paths: list[str]) -> dict[str, str | None]:
    """Several settings files in one round trip (None: unreadable), as :func:`read_setting`
    reads one."""
    shown = read_batch(host, {path: f"cat {quote([path])} || echo {SETTING_MISSING}" for path in paths})
    return {
        path: None if path not in shown or SETTING_MISSING in shown[path] else shown[path].strip()
        for path in paths
    }


def write_settings(host: RemoteHost, values: dict[str, str]) -> dict[str, tuple[bool, str]]:
    """Write several settings files in one round trip; per file (ok, error text).  A write
    that failed is tried once more alone, for the error its own stderr gives."""
    failed = write_batch(
        host, {path: write_file_script(path, value, host.sudo) for path, value in values.items()}
    )
    return {
        path: write_setting(host, path, value) if path in failed else (True, "")
        for path, value in values.items()
    }


def glob_settings(host: RemoteHost, pattern_dir: str, pattern: str) -> list[str]:
    """Files matching a fixed-directory glob on the host (the directory is quoted)."""
    result = host.run_shell(glob_script(pattern_dir, pattern), timeout=15)
    return [f"{pattern_dir}/{line.strip()}" for line in result.stdout.splitlines() if line.strip()]


class Tunable(ABC):
    """A setting that can be probed, applied, read back and restored."""

    name: str

    @abstractmethod
    def describe(self) -> str:
        """What this tunable sets, for reports."""

    @abstractmethod
    def read(self, host: RemoteHost) -> Any:
        """Current state (also what ``restore`` puts back); raises Unsupported if absent."""

    @abstractmethod
    def apply(self, host: RemoteHost) -> None:
        """Set the wanted state; raises Unsupported when the host refuses it."""

    @abstractmethod
    def restore(self, host: RemoteHost, saved: Any) -> None:
        """Put back what :meth:`read` returned before :meth:`apply`."""

    @abstractmethod
    def is_applied(self, host: RemoteHost) -> bool:
        """Read back: does the host now hold the wanted state?"""

    def apply_and_read_back(self, host: RemoteHost) -> bool:
        """:meth:`apply`, then :meth:`is_applied`, right after :meth:`read`.

        A tunable may do both in one round trip: each command into a QEMU board costs 0.2 s,
        and a routed test sets and restores its qdiscs and forwarding around every run.
        """
        self.apply(host)
        return self.is_applied(host)


# What a host was found not to take this session, per host: the tunable as described -> the
# Unsupported it raised. A board that ignored a clock write ignores it again in the next test
# (on the QEMU board each attempt applied and restored a whole profile: half a second); a
# reflashed board is asked afresh (:func:`forget_unsupported`).
_UNSUPPORTED: dict[RemoteHost, dict[str, Unsupported]] = {}


def known_unsupported(tunable: Tunable, host: RemoteHost) -> Unsupported | None:
    """The Unsupported ``host`` raised for ``tunable`` earlier this session (a fresh one, to
    raise), if it did."""
    found = _UNSUPPORTED.get(host, {}).get(tunable.describe())
    return None if found is None else Unsupported(found.tunable, found.host, found.reason)


def forget_unsupported(host: RemoteHost) -> None:
    """Ask ``host`` afresh what it takes: it was reflashed (another kernel, other drivers)."""
    _UNSUPPORTED.pop(host, None)


def apply_checked(tunable: Tunable, host: RemoteHost) -> Any:
    """Read, apply and read back; return the saved state for :meth:`Tunable.restore`.

    A read-back that differs from the wanted state is an Unsupported (the host silently
    ignored the write), remembered for the session; anything else failing is a lab fault.
    """
    reason = host.platform.cannot(tunable.name)
    if reason is not None:
        raise Unsupported(tunable.name, host.name, reason)
    known = known_unsupported(tunable, host)
    if known is not None:
        raise known
    try:
        saved = tunable.read(host)
    except Unsupported as exc:  # nothing to set it from (a board without cpufreq)
        _UNSUPPORTED.setdefault(host, {})[tunable.describe()] = exc
        raise
    try:
        if not tunable.apply_and_read_back(host):
            raise Unsupported(
                tunable.name, host.name, f"read-back differs after setting {tunable.describe()}"
            )
    except Unsupported as exc:
        _UNSUPPORTED.setdefault(host, {})[tunable.describe()] = exc
        tunable.restore(host, saved)
        raise
    except LabFault:
        try:  # half-applied on a host that still answers: put it back before reporting
            tunable.restore(host, saved)
        except LabFault:
            pass
        raise
    return saved
