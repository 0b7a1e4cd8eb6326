"""The QEMU board of a virtual lab: its cables into the namespace lab and its labgrid target.

QEMU runs inside the board's network namespace (labgrid starts it through a small wrapper
named as the env file's ``qemu`` tool), so the board's taps live there, each bridged to the
namespace end of a cable: ``t-eth0`` (virtio, the built-in port), ``t-eth1`` (usb-net on an
emulated xHCI, the USB adapter) and ``t-mgmt0`` (the management port SSH uses).  Killing the
namespace's processes, which ``pinet lab down`` does for every host, therefore also stops a
QEMU left behind by a crashed test run.

Everything that differs per lab (names, addresses, shaping, the runner's SSH key) goes on
the kernel command line; the images are the same for every lab.  The board boots what its SD
card holds: the card is a file the lab's provisioning writes through labgrid drivers
(``sd_card.py``), and QEMU starts through a wrapper that first does what a Pi's boot firmware
does, load the kernel and initrd from the card.
"""

from __future__ import annotations

import os
import shlex
import shutil
from pathlib import Path
from typing import Any

from ..errors import PinetError
from . import shaping, system
from .qemu_image import FIRMWARE_INITRD, FIRMWARE_KERNEL, BoardImage
from .sd_card_mux import mux_file
from .topology import LabSpec

MGMT_INTERFACE = "mgmt0"
USB_DISK_SERIAL = "pinet-usb-disk"
# How the USB disk shows up inside the board (udev's by-id name of a usb-storage device).
USB_DISK_DEVICE = f"/dev/disk/by-id/usb-QEMU_QEMU_HARDDISK_{USB_DISK_SERIAL}-0:0"
MEMORY = "1024M"
# Four cores, as the Pi 4 and Pi 5 have: the seed's IRQ profiles move a NIC's interrupts off
# CPU0 onto CPUs 1 and 2, which a two-core board does not have.  Under TCG a vCPU is a host
# thread; an idle one costs next to nothing.
CPUS = 4


def tap(interface: str) -> str:
    """The tap in the board's namespace behind board interface ``interface``."""
    return f"t-{interface}"


def bridge(interface: str) -> str:
    """The bridge joining that tap to its cable."""
    return f"b-{interface}"


def cable_end(interface: str) -> str:
    """The board namespace's end of the cable behind board interface ``interface``."""
    return f"h-{interface}"


def mac(spec: LabSpec, interface: str) -> str:
    """A locally administered MAC per lab and board interface; the board finds ports by it."""
    order = [MGMT_INTERFACE] + [
        link.board_interface for link in spec.links if link.board == spec.board_host.name
    ]
    return f"52:54:00:5e:{spec.index:02x}:{order.index(interface):02x}"


def wrapper_path(spec: LabSpec) -> Path:
    """The ``qemu`` tool of the env file: qemu-system-x86_64 inside the board's namespace."""
    return spec.state_dir / "qemu-in-netns"


# labgrid's QEMUDriver makes a directory like this for the board's serial socket.
SERIAL_DIR_PREFIX = "labgrid-qemu-tmp-"


def serial_dirs_path(spec: LabSpec) -> Path:
    """Where the wrapper notes the directory of every serial socket QEMU was started with.

    labgrid's QEMUDriver makes one per activation and removes it when deactivated, never when
    its process was killed: the test of a killed run left one in /tmp each time, twenty on
    this machine in a day.  ``pinet lab down`` removes the ones no process listens on.
    """
    return spec.state_dir / "serial-dirs"


def remove_serial_dirs(spec: LabSpec) -> list[str]:
    """Remove the noted serial-socket directories that no living process listens on
    (``/proc/net/unix``); what it removed.  Only labgrid's own directories are touched: a
    noted path of another name, or one holding more than the socket, stays."""
    try:
        noted = serial_dirs_path(spec).read_text(encoding="utf-8").split()
    except OSError:
        return []
    try:
        listening = Path("/proc/net/unix").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []  # cannot tell which are in use: leave them all
    removed = []
    for line in dict.fromkeys(noted):
        path = Path(line)
        if not (path.is_absolute() and path.name.startswith(SERIAL_DIR_PREFIX) and path.is_dir()):
            continue
        if any(entry.name != "serialrw" for entry in path.iterdir()) or f" {path}/serialrw\n" in listening:
            continue
        shutil.rmtree(path, ignore_errors=True)
        removed.append(str(path))
    return removed


def disk_path(spec: LabSpec) -> Path:
    """The raw file behind the board's USB disk."""
    return spec.state_dir / "usb-disk.raw"


def card_path(spec: LabSpec) -> Path:
    """The file behind the board's SD card (its boot disk)."""
    return spec.state_dir / "sd-card.img"


def firmware_dir(spec: LabSpec) -> Path:
    """Where the board's firmware puts the kernel and initrd it loaded from the card."""
    return spec.host_dir(spec.board_host.name) / "firmware"


def log_path(spec: LabSpec) -> Path:
    """QEMU's own messages (its usb-net reports every control request it does not know)."""
    return spec.host_dir(spec.board_host.name) / "qemu.log"


def pid_file(spec: LabSpec) -> Path:
    """QEMU writes its pid here, so status and tests can tell whether the board runs."""
    return spec.host_dir(spec.board_host.name) / "qemu.pid"


def plumb(spec: LabSpec, ip: Any) -> None:
    """Taps and bridges in the board's namespace, after the cables exist.

    ``ip`` is the lab's ``ip`` runner (``ip(*args, netns=...)``).
    """
    netns = spec.netns(spec.board_host.name)
    ports = [(MGMT_INTERFACE, MGMT_INTERFACE)] + [
        (link.board_interface, cable_end(link.board_interface))
        for link in spec.links
        if link.board == spec.board_host.name
    ]
    multi = {
        link.board_interface
        for link in spec.links
        if link.board == spec.board_host.name and link.adapter == "virtio"
    }
    for interface, cable in ports:
        queues = ["multi_queue"] if interface in multi else []
        ip("tuntap", "add", "dev", tap(interface), "mode", "tap", *queues, netns=netns)
        ip("link", "add", bridge(interface), "type", "bridge", netns=netns)
        # Forward at once: a bridge that first listens for 15 s would eat the boot's packets.
        ip("link", "set", bridge(interface), "type", "bridge", "forward_delay", "0", netns=netns)
        for port in (tap(interface), cable):
            ip("link", "set", port, "master", bridge(interface), netns=netns)
            ip("link", "set", port, "up", netns=netns)
        ip("link", "set", bridge(interface), "up", netns=netns)


def make_disk(spec: LabSpec, size_mib: int) -> Path:
    """A sparse raw file QEMU presents as the board's USB mass-storage disk."""
    path = disk_path(spec)
    with open(path, "wb") as handle:
        handle.truncate(size_mib * 1024 * 1024)
    return path


def write_wrapper(spec: LabSpec) -> Path:
    """Write the wrapper labgrid's QEMUDriver runs instead of qemu-system-x86_64.

    Before a boot (a QEMU command line with ``-kernel``) it is the board's firmware: with the
    card in the board (mux at "dut") it copies the card's kernel and initrd to where the
    QEMUDriver's ``-kernel`` and ``-initrd`` point, with debugfs, which reads ext4 without
    mounting it; no card, or no kernel on it, and the board does not start.

    debugfs reads in catastrophic mode (``-c``: no allocation bitmaps), as a Pi's firmware
    reads its boot partition whatever state the root filesystem is in: a power cut while the
    board writes leaves bitmaps whose checksums match only after the journal is replayed at
    the next mount, and plain debugfs then refuses the whole filesystem ("Block bitmap
    checksum does not match bitmap").  The board never started again; in CI that was a rack
    test's "no QEMU 30 s after the port was switched on".
    """
    path = wrapper_path(spec)
    qemu = system.find_tool("qemu-system-x86_64")
    ip = system.find_tool("ip")
    debugfs = system.find_tool("debugfs")
    firmware = firmware_dir(spec)
    firmware.mkdir(parents=True, exist_ok=True)
    card = card_path(spec)
    log = shlex.quote(str(log_path(spec)))
    kernel, initrd = firmware / "vmlinuz", firmware / "initrd.img"
    path.write_text(
        "#!/bin/sh\n"
        f"# Written by pinet lab up: the QEMU board of lab {spec.name} runs in its namespace.\n"
        f"card={shlex.quote(str(card))}\n"
        # The serial socket's directory, for lab down to remove after a killed test run.
        'for a in "$@"; do case "$a" in *path=*/serialrw*) d=${a#*path=}; '
        f'echo "${{d%%/serialrw*}}" >> {shlex.quote(str(serial_dirs_path(spec)))} ;; esac; done\n'
        'case " $* " in\n'
        '*" -kernel "*)\n'
        f'  if [ "$(cat {shlex.quote(str(mux_file(card)))} 2>/dev/null || echo dut)" != dut ]; then\n'
        '    echo "pinet board firmware: no SD card (the mux gives it to the lab host)" >&2; exit 1\n'
        "  fi\n"
        f"  rm -f {shlex.quote(str(kernel))} {shlex.quote(str(initrd))}\n"
        f'  {shlex.quote(debugfs)} -c -R {shlex.quote(f"dump {FIRMWARE_KERNEL} {kernel}")} "$card" 2>>{log}\n'
        f'  {shlex.quote(debugfs)} -c -R {shlex.quote(f"dump {FIRMWARE_INITRD} {initrd}")} "$card" 2>>{log}\n'
        f"  if [ ! -s {shlex.quote(str(kernel))} ] || [ ! -s {shlex.quote(str(initrd))} ]; then\n"
        f'    echo "pinet board firmware: no {FIRMWARE_KERNEL} and {FIRMWARE_INITRD}'
        ' on the SD card $card" >&2; exit 1\n'
        "  fi ;;\n"
        "esac\n"
        f"exec {shlex.quote(ip)} netns exec {shlex.quote(spec.netns(spec.board_host.name))} "
        f'{shlex.quote(qemu)} "$@" 2>>{log}\n',
        encoding="utf-8",
    )
    os.chmod(path, 0o755)  # noqa: S103 - a program labgrid runs as root
    return path


def boot_args(spec: LabSpec, public_key: str) -> str:
    """The kernel command line: console, and the pinet.* parameters the board applies."""
    board = spec.board_host.name
    key_type, key_body = public_key.split()[:2]
    words = [
        "rw",
        "console=ttyS0,115200",
        "net.ifnames=0",
        "fsck.mode=skip",
        "quiet",
        f"pinet.hostname={board}",
        # A twin's board (twin.py, links provisioned by the lab) gets the lab's key by the
        # page's step, never from pinet.
        *([] if spec.links_provisioned else [f"pinet.authkey={key_type},{key_body}"]),
        f"pinet.if={mac(spec, MGMT_INTERFACE)},{MGMT_INTERFACE},{spec.mgmt_address(board)}/24,1500",
    ]
    for link in spec.links:
        if link.board != board:
            continue
        entry = f"pinet.if={mac(spec, link.board_interface)},{link.board_interface},"
        entry += f"{spec.link_address(link, 'board')}/24,{link.mtu}"
        # The board shapes its own egress to its cable's speed, so the qdisc under test (the
        # shaper's child) sits where a real board's queue builds: GbE on the virtio port, and
        # on the USB adapter a rate the emulated board sustains with room to spare; its bucket
        # covers the host's stalls of the emulated CPUs (``shaping.board_shaping``).
        entry += "," + "+".join(shaping.board_shaping(link.speed_mbps, link.mtu).tc_args())
        words.append(entry)
    line = " ".join(words)
    if len(line) > 2000:
        raise PinetError(f"the QEMU board's kernel command line is {len(line)} bytes, over the 2048 limit")
    return line


def extra_args(spec: LabSpec) -> str:
    """QEMU's devices: the ports, the xHCI controller with the USB adapter and disk."""
    board = spec.board_host.name
    args = [
        "-initrd",
        str(firmware_dir(spec) / "initrd.img"),
        "-smp",
        str(CPUS),
        "-accel",
        spec.accel,
        "-name",
        f"{spec.name}-{board}",
        "-pidfile",
        str(pid_file(spec)),
        "-device",
        "qemu-xhci,id=xhci",
    ]
    ports = [(MGMT_INTERFACE, "virtio")] + [
        (link.board_interface, link.adapter) for link in spec.links if link.board == board
    ]
    for interface, adapter in ports:
        netdev = f"tap,id=n-{interface},ifname={tap(interface)},script=no,downscript=no"
        if adapter == "qemu-usb-net":
            device = f"usb-net,bus=xhci.0,netdev=n-{interface},mac={mac(spec, interface)}"
        else:
            # No option ROM: iPXE would spend seconds of every emulated boot offering PXE.
            device = f"virtio-net-pci,netdev=n-{interface},mac={mac(spec, interface)},romfile="
        if adapter == "virtio" and interface != MGMT_INTERFACE:
            # One queue pair per CPU, as a Pi's genet has several transmit queues: XPS (the
            # seed's rps-xps profile) steers per queue, and a single-queue NIC has none.
            netdev += f",queues={CPUS}"
            device += f",mq=on,vectors={2 * CPUS + 2}"
        args += ["-netdev", netdev, "-device", device]
    args += [
        "-drive",
        f"if=none,id=usbdisk,format=raw,file={disk_path(spec)}",
        "-device",
        f"usb-storage,bus=xhci.0,drive=usbdisk,serial={USB_DISK_SERIAL}",
    ]
    return shlex.join(args)


def target(spec: LabSpec, public_key: str) -> dict[str, Any]:
    """The board's labgrid target: QEMUDriver for power and console, ShellDriver on it, and
    the SD card with its mux and writer."""
    board = spec.board_host.name
    return {
        "resources": {
            "NetworkService": {"address": spec.mgmt_address(board), "username": "root", "port": 22},
            "PinetSDCard": {"path": str(card_path(spec))},
        },
        "drivers": {
            "QEMUDriver": {
                "qemu_bin": "qemu",
                "machine": "q35",
                "cpu": "host" if spec.accel == "kvm" else "max",
                "memory": MEMORY,
                "kernel": "firmware-kernel",
                # The card keeps what the board wrote across power-cycles, as a real one does;
                # provisioning rewrites it.
                "disk": "sd-card",
                "boot_args": boot_args(spec, public_key),
                "extra_args": extra_args(spec),
            },
            "PinetSDMuxDriver": {},
            "PinetSDCardDriver": {},
            "ShellDriver": shell_driver(board),
        },
    }


def shell_driver(board: str) -> dict[str, Any]:
    """The ShellDriver's arguments for the board's serial console: root, no password."""
    return {
        # bash in the image brackets pastes: the prompt may follow an ESC[?2004h.
        "prompt": rf"(?:\x1b\[\?2004h)?root@{board}:[^ ]*# ",
        "login_prompt": " login: ",
        "username": "root",
        "login_timeout": 300,
    }


def env_sections(spec: LabSpec, image: BoardImage) -> dict[str, Any]:
    """The env file's ``imports``, ``tools`` and ``images`` sections (the QEMUDriver's
    kernel is what the firmware loaded; the catalogue's images are the built ones)."""
    images = {"firmware-kernel": str(firmware_dir(spec) / "vmlinuz"), "sd-card": str(card_path(spec))}
    for built in image.images.values():
        images[built.name] = str(built.path)
    return {
        "imports": [f"{__package__}.sd_card"],  # labgrid loads the drivers; pinet does not need them
        "tools": {"qemu": str(wrapper_path(spec))},
        "images": images,
    }


def catalogue(image: BoardImage) -> list[dict[str, Any]]:
    """The ``pinet: images:`` entries of the built images: flashed onto the SD card."""
    return [
        {
            "name": built.name,
            "os": {"id": built.os_id, "version": built.os_version},
            "kernel": built.kernel_release,
            "path": str(built.path),
            "sha256": built.sha256,
            **({"bmap": str(built.bmap)} if built.bmap else {}),
            "delivery": "sd-card",
            "arch": "x86_64",
        }
        for built in image.images.values()
    ]


def flash_card(spec: LabSpec, image: BoardImage, name: str) -> None:
    """The card as it leaves the factory: the lab's default image, copied sparse.

    ``cp --sparse=always`` copies the image's data in the kernel (copy_file_range): 0.3 s for
    the Debian 12 image here, where ``dd conv=sparse`` read and compared every block in 2.5 s,
    at every ``pinet lab up`` of a QEMU board (cp truncates a card that is there)."""
    built = image.image(name)
    card = card_path(spec)
    system.run(["cp", "--sparse=always", str(built.path), str(card)], timeout=600)
    mux_file(card).write_text("dut\n", encoding="utf-8")


def running_pid(spec: LabSpec) -> int:
    """QEMU's pid if the board is running, else 0."""
    try:
        pid = int(pid_file(spec).read_text().strip())
        os.kill(pid, 0)
        return pid
    except (OSError, ValueError):
        return 0
