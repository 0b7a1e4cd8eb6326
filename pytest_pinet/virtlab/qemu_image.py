"""Build, once, the QEMU board's kernels and root filesystem, and keep them in a cache.

The namespace lab shares this machine's kernel; the QEMU board brings its own, so qdiscs
this kernel lacks (sfq, netem), a boot, a serial console and USB devices become testable.
The image is plain Debian from the machine's package sources, made with mmdebstrap, holding
every kernel of the matrix side by side: a run picks one by booting it, and the root
filesystem, its tools and the host key pinned by the labs stay the same.

The cache key is a hash of the recipe and of the files copied into the image, so changing
either builds a new image beside the old one; an interrupted build leaves only a temporary
directory that the next build removes.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from ..errors import PinetError
from . import system

SUITE = "bookworm"
# Kernels of the matrix: label -> Debian package.  Both are the generic flavour (it has the
# USB network and storage drivers; the cloud flavour lacks xHCI), of two kernel series.
KERNELS = {"6.1": "linux-image-amd64", "6.12": "linux-image-6.12-amd64"}
DEFAULT_KERNEL = "6.1"
PACKAGES = (
    "systemd-sysv",
    "udev",
    "openssh-server",
    "iperf3",
    "iproute2",
    "ethtool",
    "procps",
    "kmod",
    "e2fsprogs",
    "dosfstools",
    "gcc",
    "libc6-dev",
    "usbutils",
    "iputils-ping",
    "initramfs-tools",
)
# What boots the root filesystem; everything else loads from it.  A small initramfs
# (6 MB instead of 60) unpacks in a fraction of the time under software emulation.
INITRAMFS_MODULES = ("virtio_pci", "virtio_blk", "ext4")
# Units a lab board never needs: they only cost boot time under emulation.
MASKED_UNITS = (
    "apt-daily.timer",
    "apt-daily-upgrade.timer",
    "dpkg-db-backup.timer",
    "e2scrub_all.timer",
    "e2scrub_reap.service",
    "fstrim.timer",
    "getty@tty1.service",
    "systemd-pstore.service",
)
SSHD_DROP_IN = """\
# pinet: the test runner opens many sessions at once; only keys log in.
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UseDNS no
PrintMotd no
MaxSessions 50
MaxStartups 50:30:100
"""
FILES_DIR = Path(__file__).with_name("board_files")
CACHE_ENV = "PINET_CACHE_DIR"


@dataclass(frozen=True)
class BoardKernel:
    """One kernel of the image: what QEMU boots and what ``uname -r`` will say."""

    label: str
    release: str
    vmlinuz: Path
    initrd: Path


@dataclass(frozen=True)
class BoardImage:
    """A built image: root filesystem, kernels and the host key its sshd presents."""

    directory: Path
    rootfs: Path
    kernels: dict[str, BoardKernel]
    host_key: str  # "ssh-ed25519 AAAA..." as known_hosts wants it
    build_seconds: float

    def kernel(self, label: str) -> BoardKernel:
        """The kernel called ``label``, or a clear error listing the ones there are."""
        try:
            return self.kernels[label]
        except KeyError:
            raise PinetError(
                f"the QEMU board has no kernel {label!r}; choose one of {', '.join(sorted(self.kernels))}"
            ) from None


def cache_root() -> Path:
    """Where images live: $PINET_CACHE_DIR, else ~/.cache/pinet/qemu-board."""
    configured = os.environ.get(CACHE_ENV)
    base = Path(configured) if configured else Path.home() / ".cache" / "pinet"
    return base / "qemu-board"


def recipe() -> dict[str, object]:
    """Everything that decides the image's content, hashed into its cache key."""
    files = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(FILES_DIR.iterdir())}
    return {
        "suite": SUITE,
        "kernels": KERNELS,
        "packages": PACKAGES,
        "initramfs": INITRAMFS_MODULES,
        "masked": MASKED_UNITS,
        "sshd": SSHD_DROP_IN,
        "files": files,
        "layout": 1,
    }


def image_key() -> str:
    """Short hash of the recipe: the image's directory name."""
    return hashlib.sha256(json.dumps(recipe(), sort_keys=True).encode()).hexdigest()[:12]


def load(directory: Path) -> BoardImage | None:
    """The image in ``directory`` if it is complete, else None."""
    manifest = directory / "image.json"
    try:
        data = json.loads(manifest.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    kernels = {
        label: BoardKernel(label, k["release"], directory / k["vmlinuz"], directory / k["initrd"])
        for label, k in data["kernels"].items()
    }
    rootfs = directory / data["rootfs"]
    if not rootfs.exists() or not all(k.vmlinuz.exists() and k.initrd.exists() for k in kernels.values()):
        return None
    return BoardImage(directory, rootfs, kernels, data["host_key"], float(data.get("build_seconds", 0)))


@contextlib.contextmanager
def _build_lock(root: Path) -> Iterator[None]:
    root.mkdir(parents=True, exist_ok=True)
    with open(root / ".lock", "a+", encoding="utf-8") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def ensure_image(*, rebuild: bool = False, log: bool = True) -> BoardImage:
    """The cached image, built first if it is missing (or ``rebuild``).

    Concurrent callers (xdist workers, two labs) wait for one build instead of racing.
    """
    root = cache_root()
    final = root / image_key()
    with _build_lock(root):
        if not rebuild:
            found = load(final)
            if found is not None:
                return found
        system.require_root("building the QEMU board image")
        system.require_tools(("mmdebstrap", "mke2fs", "qemu-system-x86_64"))
        for stale in root.glob("*.tmp-*"):
            shutil.rmtree(stale, ignore_errors=True)
        work = root / f"{final.name}.tmp-{os.getpid()}"
        started = time.monotonic()
        try:
            _build(work, log=log)
            seconds = time.monotonic() - started
            manifest = json.loads((work / "image.json").read_text(encoding="utf-8"))
            manifest["build_seconds"] = round(seconds, 1)
            (work / "image.json").write_text(json.dumps(manifest, indent=1), encoding="utf-8")
            if final.exists():
                shutil.rmtree(final)
            work.rename(final)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        # Images of earlier recipes are 1.5 GB each and never used again.
        for old in root.iterdir():
            if old.is_dir() and old != final:
                shutil.rmtree(old, ignore_errors=True)
        image = load(final)
        if image is None:
            raise PinetError(f"the QEMU board image in {final} is incomplete after building it")
        return image


def _say(log: bool, text: str) -> None:
    if log:
        print(f"pinet: {text}", flush=True)


def _build(work: Path, *, log: bool) -> None:
    rootfs_dir = work / "rootfs"
    work.mkdir(parents=True)
    hook = (
        'mkdir -p "$1/etc/initramfs-tools/conf.d" "$1/usr/share/initramfs-tools/modules.d"; '
        'echo MODULES=list > "$1/etc/initramfs-tools/conf.d/pinet.conf"; '
        f'printf "%s\\n" {" ".join(INITRAMFS_MODULES)} > "$1/usr/share/initramfs-tools/modules.d/pinet"'
    )
    argv = [
        system.find_tool("mmdebstrap"),
        "--variant=apt",
        "--mode=root",
        "--include=" + ",".join([*PACKAGES, *KERNELS.values()]),
        f"--essential-hook={hook}",
        "--dpkgopt=path-exclude=/usr/share/man/*",
        "--dpkgopt=path-exclude=/usr/share/doc/*",
        "--dpkgopt=path-exclude=/usr/share/locale/*",
        "--quiet",
        SUITE,
        str(rootfs_dir),
    ]
    _say(log, f"building the QEMU board image ({SUITE}, kernels {', '.join(KERNELS)}) in {work.parent}")
    system.run(argv, timeout=1800)
    _customize(rootfs_dir)
    kernels = _take_kernels(rootfs_dir, work)
    host_key = " ".join((rootfs_dir / "etc/ssh/ssh_host_ed25519_key.pub").read_text().split()[:2])
    rootfs = work / "rootfs.ext4"
    used = int(system.run(["du", "-s", "-B1", str(rootfs_dir)]).stdout.split()[0])
    size_mib = used * 13 // 10 // (1024 * 1024) + 256  # room for the tests' files and the compiler's
    system.run(
        [
            system.find_tool("mke2fs"),
            "-q",
            "-t",
            "ext4",
            "-L",
            "pinet-root",
            "-d",
            str(rootfs_dir),
            str(rootfs),
            f"{size_mib}M",
        ],
        timeout=600,
    )
    shutil.rmtree(rootfs_dir)
    manifest = {
        "suite": SUITE,
        "recipe": image_key(),
        "rootfs": rootfs.name,
        "kernels": {
            k.label: {"release": k.release, "vmlinuz": k.vmlinuz.name, "initrd": k.initrd.name}
            for k in kernels
        },
        "host_key": host_key,
    }
    (work / "image.json").write_text(json.dumps(manifest, indent=1), encoding="utf-8")
    releases = ", ".join(k.release for k in kernels)
    _say(log, f"QEMU board image built: {size_mib} MiB root filesystem, kernels {releases}")


def _customize(root: Path) -> None:
    """The board's own setup: network from the kernel command line, console login, sshd."""
    shutil.copy(FILES_DIR / "pinet-board-setup", root / "usr/local/sbin/pinet-board-setup")
    os.chmod(root / "usr/local/sbin/pinet-board-setup", 0o755)  # noqa: S103 - a program, run by root
    unit = "pinet-board-setup.service"
    shutil.copy(FILES_DIR / unit, root / "etc/systemd/system" / unit)
    wants = root / "etc/systemd/system/multi-user.target.wants"
    wants.mkdir(parents=True, exist_ok=True)
    (wants / unit).unlink(missing_ok=True)
    (wants / unit).symlink_to(f"/etc/systemd/system/{unit}")
    for masked in MASKED_UNITS:
        link = root / "etc/systemd/system" / masked
        link.unlink(missing_ok=True)
        link.symlink_to("/dev/null")
    shutil.copy(FILES_DIR / "pinet-modprobe.conf", root / "etc/modprobe.d/pinet.conf")
    (root / "etc/ssh/sshd_config.d/pinet.conf").write_text(SSHD_DROP_IN, encoding="utf-8")
    (root / "etc/hostname").write_text("pinet-board\n", encoding="utf-8")
    # The serial console logs root in without a password (labgrid's ShellDriver); SSH
    # takes keys only, so this opens nothing beyond the console QEMU gives the lab.
    system.run(["chroot", str(root), "passwd", "-d", "root"])
    (root / "etc/fstab").write_text("LABEL=pinet-root / ext4 rw,noatime 0 1\n", encoding="utf-8")


def _take_kernels(root: Path, work: Path) -> list[BoardKernel]:
    found = []
    boot = root / "boot"
    for label in KERNELS:
        matches = sorted(boot.glob(f"vmlinuz-{label}.*"))
        if not matches:
            raise PinetError(f"the QEMU board image has no kernel {label} in {boot}")
        release = matches[-1].name.removeprefix("vmlinuz-")
        vmlinuz = work / f"vmlinuz-{release}"
        initrd = work / f"initrd.img-{release}"
        shutil.copy(boot / f"vmlinuz-{release}", vmlinuz)
        shutil.copy(boot / f"initrd.img-{release}", initrd)
        found.append(BoardKernel(label, release, vmlinuz, initrd))
    return found
