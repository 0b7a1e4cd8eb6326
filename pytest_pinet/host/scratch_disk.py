"""Disk throughput on a board: mkfs, block-size sweep, write then read with caches dropped.

The seed measured a USB disk on a Pi: for each filesystem (ext2, ext3, ext4, vfat) and
each block size from 8 bytes to 1 MiB, write a file and read it back, MiB/s per cell.
Making a filesystem destroys what the disk held, so it happens only on a disk the
inventory marks ``scratch: true``; any other disk is refused before a command runs.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass

from ..errors import ConfigError, LabFault, Unsupported
from ..model.lab import DiskEntry
from .remote import CommandResult, RemoteHost
from .shell import as_root, quiet, quote, section, sequence, split_sections

FILESYSTEMS: dict[str, tuple[str, ...]] = {
    "ext2": ("mkfs.ext2", "-F", "-q"),
    "ext3": ("mkfs.ext3", "-F", "-q"),
    "ext4": ("mkfs.ext4", "-F", "-q"),
    "vfat": ("mkfs.vfat",),
}
DEFAULT_BLOCKS = (8, 64, 512, 4096, 32768, 262144, 1048576)
DD_REPORT = re.compile(r"(\d+) bytes .*copied, ([0-9.eE+-]+) s")
CACHE = ".cache/pinet"
DD_MARK = "@@pinet-dd:"


@dataclass(frozen=True)
class DiskRun:
    """One dd: how many bytes in how many seconds (dd's own clock)."""

    direction: str  # "write" or "read"
    block_bytes: int
    bytes: int
    seconds: float

    @property
    def mib_per_s(self) -> float:
        """Throughput in MiB/s, the seed's unit."""
        return self.bytes / self.seconds / 1048576 if self.seconds > 0 else 0.0


def parse_dd(text: str, source: str) -> tuple[int, float]:
    """Bytes and seconds from GNU dd's last line on stderr."""
    found = DD_REPORT.findall(text)
    if not found:
        raise LabFault("command", f"{source}: no dd report in {text.strip()[-200:]!r}")
    count, seconds = found[-1]
    return int(count), float(seconds)


MAX_BLOCKS = 131072  # dd calls per block size and direction (see ScratchDisk.write_then_read)


class ScratchDisk:
    """A scratch disk of a host, formatted and mounted for one filesystem at a time."""

    def __init__(self, host: RemoteHost, disk: DiskEntry, source: str) -> None:
        if not disk.scratch:
            raise ConfigError(
                source,
                f"disk {disk.name} ({disk.device} on {disk.host}) is not marked scratch: "
                "pinet will not mkfs it",
                "set scratch: true in pinet.disks only for a disk whose contents may be destroyed",
            )
        self.host = host
        self.disk = disk
        self.mountpoint = f"{CACHE}/mnt-{disk.name}"

    def format(self, filesystem: str) -> None:
        """mkfs and mount; an fs tool the host lacks is a lab fault naming the package."""
        if filesystem not in FILESYSTEMS:
            raise ValueError(f"unknown filesystem {filesystem!r}: one of {sorted(FILESYSTEMS)}")
        reason = self.host.platform.cannot("storage")
        if reason is not None:
            raise Unsupported("storage", self.host.name, reason)
        self.unmount()
        made = self.host.run([*FILESYSTEMS[filesystem], self.disk.device], timeout=300, root=True)
        if not made.ok:
            package = "dosfstools" if filesystem == "vfat" else "e2fsprogs"
            hint = f" (install {package})" if made.exit_code == 127 else ""
            raise LabFault(
                "command",
                f"{self.host.name}: mkfs {filesystem} on {self.disk.device} failed{hint}: "
                f"{made.stderr.strip()[:200]}",
            )
        self.host.check(["mkdir", "-p", self.mountpoint], timeout=15, root=True)
        mounted = self.host.run(["mount", self.disk.device, self.mountpoint], timeout=60, root=True)
        if not mounted.ok and "unknown filesystem type" in mounted.stderr:
            raise Unsupported(
                "filesystem", self.host.name, f"kernel lacks {filesystem}: {mounted.stderr.strip()}"
            )
        if not mounted.ok:
            raise LabFault(
                "command", f"{self.host.name}: mount {self.disk.device}: {mounted.stderr.strip()[:200]}"
            )

    def unmount(self) -> None:
        """Unmount if mounted (safe to repeat)."""
        self.host.run_shell(sequence(quiet(as_root(["umount", self.mountpoint], self.host.sudo))), timeout=60)

    def close(self) -> None:
        """Unmount and remove the mount point."""
        self.unmount()
        self.host.run(["rmdir", self.mountpoint], timeout=15, root=True)

    def write_then_read(self, block_bytes: int, total_bytes: int) -> tuple[DiskRun, DiskRun]:
        """Write ``total_bytes`` in ``block_bytes`` blocks (fsynced), drop caches, read back.

        At most ``MAX_BLOCKS`` blocks: tiny blocks measure system calls, not the disk, and a
        million 8-byte writes (8 MiB) took half a minute on an emulated board for a figure
        that 128 Ki calls give as well (what was written is in the result).  One round trip
        for the four steps: dd times itself, so nothing between them is in a figure, and four
        round trips cost an emulated board 0.6 s per block size (4 s a sweep).
        """
        count = max(1, min(total_bytes // block_bytes, MAX_BLOCKS))
        path = f"{self.mountpoint}/pinet-{block_bytes}.bin"
        source = f"{self.host.name}:{self.disk.device}"
        sudo = self.host.sudo
        write = ["dd", "if=/dev/zero", f"of={path}", f"bs={block_bytes}", f"count={count}", "conv=fsync"]
        read = ["dd", f"if={path}", "of=/dev/null", f"bs={block_bytes}"]
        script = sequence(
            section(DD_MARK, "write"),
            f"{quote(as_root(write, sudo))} 2>&1",
            section(DD_MARK, "drop"),
            # Reading what the page cache still holds would measure memory, not the disk.
            f"{{ {self.host.platform.drop_caches_script(sudo)}; }} 2>&1",
            'echo "exit $?"',
            section(DD_MARK, "read"),
            f"{quote(as_root(read, sudo))} 2>&1",
            section(DD_MARK, "end"),
            quote(as_root(["rm", "-f", path], sudo)),
        )
        out = split_sections(self.host.run_shell(script, timeout=1200, root=True).stdout, DD_MARK)
        wrote = parse_dd(out.get("write", ""), f"{source} write bs={block_bytes}")
        dropped = out.get("drop", "").strip().splitlines()
        if not dropped or dropped[-1] != "exit 0":
            why = " ".join(dropped[:-1])[:200] or "no answer"
            raise LabFault("command", f"{source}: dropping the page cache before reading failed: {why}")
        got = parse_dd(out.get("read", ""), f"{source} read bs={block_bytes}")
        return DiskRun("write", block_bytes, *wrote), DiskRun("read", block_bytes, *got)

    @contextmanager
    def busy(self, seconds: int) -> Iterator[Future[CommandResult]]:
        """Write to the disk in the background for ``seconds`` (the contention scenario)."""
        path = f"{self.mountpoint}/pinet-busy.bin"
        argv: list[str | int] = [
            "timeout",
            seconds,
            "sh",
            "-c",
            f"while :; do dd if=/dev/zero of={quote([path])} bs=1M count=64 conv=fsync 2>/dev/null; done",
        ]
        with ThreadPoolExecutor(max_workers=1) as pool:
            running = pool.submit(self.host.run, argv, timeout=seconds + 30, root=True)
            try:
                yield running
            finally:
                self.host.run_shell(
                    sequence(
                        quote(as_root(["pkill", "-f", "--", path], self.host.sudo)),
                        quote(as_root(["rm", "-f", path], self.host.sudo)),
                    ),
                    timeout=30,
                )
                running.result()
