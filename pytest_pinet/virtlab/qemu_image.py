"""Build, once, the QEMU board's OS images, and keep them in a cache.

The namespace lab shares this machine's kernel; the QEMU board brings its own, so qdiscs
this kernel lacks (sfq, netem), a boot, a serial console and USB devices become testable.
Each image is what a Pi lab keeps on its SD cards: a whole root filesystem with its kernel
in ``/boot/firmware``, where the board's boot firmware (see ``qemu_board.write_wrapper``)
loads it from.  The images are plain Debian from the machine's package sources, made with
mmdebstrap: Debian 12 with its 6.1 kernel, Debian 12 with its 6.12 kernel, and Debian 13
with its own kernel and its own iperf3, so kernels and OS releases are real test axes.

All images carry the same SSH host keys (the board's identity survives a reflash, as a lab's
image build bakes them in), so one known_hosts line pins the board whatever it runs.

The cache key is a hash of the recipe and of the files copied into the images (the UDP
generator's source among them), so changing either builds new images beside the old ones;
an interrupted build leaves only a temporary directory that the next build removes.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from ..errors import PinetError
from ..host_programs import UDPGEN_SOURCE as UDPGEN_SOURCE  # each image carries it built
from . import file_lock, system
from .names import IMAGE_NAMES


@dataclass(frozen=True)
class ImageRecipe:
    """One OS image of the QEMU board: a Debian release and the kernel its firmware boots."""

    name: str
    suite: str  # the Debian release mmdebstrap installs
    os_version: str  # VERSION_ID in its /etc/os-release
    kernel_package: str
    kernel_series: str  # the release `uname -r` starts with, e.g. "6.1."


# Both bookworm kernels are the generic flavour (it has the USB network and storage drivers;
# the cloud flavour lacks xHCI).  Debian 12's two images share one installed tree.
RECIPES = (
    ImageRecipe("debian12-k6.1", "bookworm", "12", "linux-image-amd64", "6.1."),
    ImageRecipe("debian12-k6.12", "bookworm", "12", "linux-image-6.12-amd64", "6.12."),
    ImageRecipe("debian13", "trixie", "13", "linux-image-amd64", "6.12."),
)
assert tuple(recipe.name for recipe in RECIPES) == IMAGE_NAMES, "names.IMAGE_NAMES must list RECIPES"
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
    "irtt",  # latency under load as on the namespace board: a ping's idle probe took 1.9 s, irtt's 0.4
    "initramfs-tools",
    "login",  # Essential up to Debian 12; from 13 on the console's getty needs it named
)
# What boots the root filesystem, and the board's network ports and USB disk; everything
# else loads from it.  A small initramfs (7 MB instead of 60) unpacks in a fraction of the
# time under software emulation.  The NIC and USB drivers are in it because
# pinet-board-setup waits for every port before sshd starts: loaded from the root
# filesystem at udev's coldplug, the xHCI bus registered 15 s into the boot and the USB
# adapter appeared at 19 s, 13 s of waiting on every boot.
INITRAMFS_MODULES = (
    "virtio_pci",
    "virtio_blk",
    "ext4",
    "virtio_net",
    "xhci_pci",
    "usbnet",
    "cdc_ether",
    "usb_storage",
)
# Units a lab board never needs: they only cost boot time under emulation.
MASKED_UNITS = (
    "apt-daily.timer",
    "apt-daily-upgrade.timer",
    "dpkg-db-backup.timer",
    "e2scrub_all.timer",
    "e2scrub_reap.service",
    "fstrim.timer",
    "getty@tty1.service",
    "getty-static.service",  # gettys on tty2-6 of a board nobody sees the screen of
    "systemd-pstore.service",
    "irtt.service",  # Debian's package enables a server on every address; pinet starts its own
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
# Where an image keeps what the board's firmware loads, as a Pi's boot partition does.
FIRMWARE_KERNEL = "/boot/firmware/vmlinuz"
FIRMWARE_INITRD = "/boot/firmware/initrd.img"


@dataclass(frozen=True)
class BuiltImage:
    """One image file of the cache and what booting it must show."""

    name: str
    path: Path
    bmap: Path | None
    os_id: str
    os_version: str
    kernel_release: str
    sha256: str


@dataclass(frozen=True)
class BoardImage:
    """The built images, and the host key every one of them presents."""

    directory: Path
    images: dict[str, BuiltImage]
    host_key: str  # "ssh-ed25519 AAAA..." as known_hosts wants it
    build_seconds: float

    def image(self, name: str) -> BuiltImage:
        """The image called ``name``, or a clear error listing the ones there are."""
        try:
            return self.images[name]
        except KeyError:
            raise PinetError(
                f"the QEMU board has no image {name!r}; choose one of {', '.join(sorted(self.images))}"
            ) from None


def cache_root() -> Path:
    """Where images live: $PINET_CACHE_DIR, else ~/.cache/pinet/qemu-board."""
    configured = os.environ.get(CACHE_ENV)
    base = Path(configured) if configured else Path.home() / ".cache" / "pinet"
    return base / "qemu-board"


def recipe() -> dict[str, object]:
    """Everything that decides the images' content, hashed into their cache key."""
    files = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(FILES_DIR.iterdir())}
    return {
        "images": [r.__dict__ for r in RECIPES],
        "packages": PACKAGES,
        "initramfs": INITRAMFS_MODULES,
        "masked": MASKED_UNITS,
        "sshd": SSHD_DROP_IN,
        "files": files,
        "udpgen": hashlib.sha256(UDPGEN_SOURCE.read_bytes()).hexdigest(),
        "firmware": [FIRMWARE_KERNEL, FIRMWARE_INITRD],
        "layout": 3,
    }


def image_key() -> str:
    """Short hash of the recipe: the cache directory's name."""
    return hashlib.sha256(json.dumps(recipe(), sort_keys=True).encode()).hexdigest()[:12]


def load(directory: Path) -> BoardImage | None:
    """The images in ``directory`` if they are complete, else None."""
    try:
        data = json.loads((directory / "image.json").read_text(encoding="utf-8"))
        images = {
            name: BuiltImage(
                name,
                directory / entry["file"],
                directory / entry["bmap"] if entry.get("bmap") else None,
                entry["os_id"],
                entry["os_version"],
                entry["kernel_release"],
                entry["sha256"],
            )
            for name, entry in data["images"].items()
        }
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if not images or not all(i.path.exists() for i in images.values()):
        return None
    return BoardImage(directory, images, data["host_key"], float(data.get("build_seconds", 0)))


def _build_lock(root: Path) -> contextlib.AbstractContextManager[None]:
    return file_lock.exclusive(root / ".lock")


def ensure_image(*, rebuild: bool = False, log: bool = True) -> BoardImage:
    """The cached images, built first if they are missing (or ``rebuild``).

    Concurrent callers (xdist workers, two labs) wait for one build instead of racing.
    """
    root = cache_root()
    final = root / image_key()
    with _build_lock(root):
        if not rebuild:
            found = load(final)
            if found is not None:
                return found
        system.require_root("building the QEMU board images")
        system.require_tools(("mmdebstrap", "mke2fs", "ssh-keygen", "qemu-system-x86_64"))
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
        # Images of earlier recipes are gigabytes and never used again.
        for old in root.iterdir():
            if old.is_dir() and old != final:
                shutil.rmtree(old, ignore_errors=True)
        image = load(final)
        if image is None:
            raise PinetError(f"the QEMU board images in {final} are incomplete after building them")
        return image


def _say(log: bool, text: str) -> None:
    if log:
        print(f"pinet: {text}", flush=True)


def _build(work: Path, *, log: bool) -> None:
    work.mkdir(parents=True)
    keys = work / "host-keys"
    keys.mkdir()
    for kind in ("ed25519", "ecdsa", "rsa"):
        system.run(
            [
                "ssh-keygen",
                "-q",
                "-t",
                kind,
                "-N",
                "",
                "-C",
                "pinet-board",
                "-f",
                str(keys / f"ssh_host_{kind}_key"),
            ]
        )
    images: dict[str, object] = {}
    # The releases are built side by side: each waits mostly on its package downloads and
    # dpkg's disk writes (on a 2-core machine here: 165 s one after the other, 112 s so).
    suites = list(dict.fromkeys(r.suite for r in RECIPES))
    with ThreadPoolExecutor(max_workers=len(suites)) as pool:
        for built in pool.map(lambda suite: _build_suite(work, suite, keys, log=log), suites):
            images.update(built)
    host_key = " ".join((keys / "ssh_host_ed25519_key.pub").read_text().split()[:2])
    manifest = {"recipe": image_key(), "images": images, "host_key": host_key}
    (work / "image.json").write_text(json.dumps(manifest, indent=1), encoding="utf-8")


def _build_suite(work: Path, suite: str, keys: Path, *, log: bool) -> dict[str, object]:
    """One Debian release's tree, bootstrapped and customised, and its images made from it."""
    tree = work / suite
    of_suite = [r for r in RECIPES if r.suite == suite]
    _bootstrap(tree, suite, [r.kernel_package for r in of_suite], log=log)
    _customize(tree, keys)
    _build_udpgen(tree, log=log)
    images: dict[str, object] = {r.name: _make_image(tree, r, work, log=log) for r in of_suite}
    shutil.rmtree(tree)
    return images


def _bootstrap(tree: Path, suite: str, kernels: list[str], *, log: bool) -> None:
    hook = (
        'mkdir -p "$1/etc/initramfs-tools/conf.d" "$1/usr/share/initramfs-tools/modules.d"; '
        'echo MODULES=list > "$1/etc/initramfs-tools/conf.d/pinet.conf"; '
        f'printf "%s\\n" {" ".join(INITRAMFS_MODULES)} > "$1/usr/share/initramfs-tools/modules.d/pinet"'
    )
    argv = [
        system.find_tool("mmdebstrap"),
        "--variant=apt",
        "--mode=root",
        "--include=" + ",".join([*PACKAGES, *dict.fromkeys(kernels)]),
        f"--essential-hook={hook}",
        "--dpkgopt=path-exclude=/usr/share/man/*",
        "--dpkgopt=path-exclude=/usr/share/doc/*",
        "--dpkgopt=path-exclude=/usr/share/locale/*",
        "--quiet",
        suite,
        str(tree),
    ]
    _say(
        log,
        f"building the QEMU board's {suite} tree "
        f"(kernels {', '.join(dict.fromkeys(kernels))}) in {tree.parent}",
    )
    system.run(argv, timeout=1800)


def _make_image(tree: Path, r: ImageRecipe, work: Path, *, log: bool) -> dict[str, object]:
    """The tree as one image file whose firmware boots ``r``'s kernel."""
    boot = tree / "boot"
    matches = sorted(boot.glob(f"vmlinuz-{r.kernel_series}*"))
    if not matches:
        raise PinetError(f"the QEMU board's {r.suite} tree has no {r.kernel_series}x kernel in {boot}")
    release = matches[-1].name.removeprefix("vmlinuz-")
    firmware = tree / FIRMWARE_KERNEL.lstrip("/")
    firmware.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(boot / f"vmlinuz-{release}", firmware)
    shutil.copy(boot / f"initrd.img-{release}", tree / FIRMWARE_INITRD.lstrip("/"))
    os_release = dict(
        line.split("=", 1) for line in (tree / "etc/os-release").read_text().splitlines() if "=" in line
    )
    path = work / f"{r.name}.img"
    used = int(system.run(["du", "-s", "-B1", str(tree)]).stdout.split()[0])
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
            str(tree),
            str(path),
            f"{size_mib}M",
        ],
        timeout=600,
    )
    bmap = None
    if shutil.which("bmaptool"):
        bmap = path.with_name(path.name + ".bmap")
        system.run(["bmaptool", "-q", "create", "-o", str(bmap), str(path)], timeout=600)
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    _say(log, f"QEMU board image {r.name}: {size_mib} MiB, kernel {release}")
    return {
        "file": path.name,
        "bmap": bmap.name if bmap else None,
        "os_id": os_release.get("ID", "").strip('"'),
        "os_version": os_release.get("VERSION_ID", "").strip('"'),
        "kernel_release": release,
        "sha256": digest.hexdigest(),
    }


def _customize(root: Path, keys: Path) -> None:
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
    (root / "etc/systemd/system/ssh.service.d").mkdir(parents=True, exist_ok=True)
    shutil.copy(FILES_DIR / "pinet-ssh.conf", root / "etc/systemd/system/ssh.service.d/pinet.conf")
    for old in (root / "etc/ssh").glob("ssh_host_*"):
        old.unlink()
    for key in keys.iterdir():
        shutil.copy(key, root / "etc/ssh" / key.name)
        os.chmod(root / "etc/ssh" / key.name, 0o644 if key.suffix == ".pub" else 0o600)
    (root / "etc/hostname").write_text("pinet-board\n", encoding="utf-8")
    # The serial console logs root in without a password (labgrid's ShellDriver); SSH
    # takes keys only, so this opens nothing beyond the console QEMU gives the lab.
    system.run(["chroot", str(root), "passwd", "-d", "root"])
    (root / "etc/fstab").write_text("LABEL=pinet-root / ext4 rw,noatime 0 1\n", encoding="utf-8")


def _build_udpgen(root: Path, *, log: bool) -> None:
    """The UDP generator, built in the tree as the board builds it (its compiler, its libc,
    the same flags, none of this machine's environment) where the board looks first.  On the
    emulated board the build took 4.7 s of every job.  A build that fails here fails nothing:
    the board builds it when a UDP test needs it, and reports a failure there."""
    from ..traffic import udpgen  # here: the SSH machinery it loads is no concern of `pinet lab`

    binary, source = udpgen.built_paths("/root/")
    cache = root / source.lstrip("/")
    cache.parent.mkdir(parents=True, exist_ok=True)
    os.chmod(cache.parent, 0o700)
    shutil.copy(UDPGEN_SOURCE, cache)
    clean = ["/usr/bin/env", "-i", "PATH=/usr/bin:/bin", "HOME=/root", "LANG=C.UTF-8"]
    built = system.run(
        ["chroot", str(root), *clean, *udpgen.build_argv(binary, source)], check=False, timeout=300
    )
    if built.returncode != 0:
        _say(
            log,
            f"the UDP generator did not build in {root.name}'s tree (the board will): {built.stderr[-300:]}",
        )
