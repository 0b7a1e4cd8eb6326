"""The QEMU board of a virtual lab: its cables into the namespace lab and its labgrid target.

QEMU runs inside the board's network namespace (labgrid starts it through a small wrapper
named as the env file's ``qemu`` tool), so the board's taps live there, each bridged to the
namespace end of a cable: ``t-eth0`` (virtio, the built-in port), ``t-eth1`` (usb-net on an
emulated xHCI, the USB adapter) and ``t-mgmt0`` (the management port SSH uses).  Killing the
namespace's processes, which ``pinet lab down`` does for every host, therefore also stops a
QEMU left behind by a crashed test run.

Everything that differs per lab (names, addresses, shaping, the runner's SSH key) goes on
the kernel command line; the image is the same for every lab and kernel.
"""

from __future__ import annotations

import os
import shlex
from pathlib import Path
from typing import Any

from ..errors import PinetError
from . import shaping, system
from .qemu_image import BoardImage
from .topology import LabSpec

MGMT_INTERFACE = "mgmt0"
USB_DISK_SERIAL = "pinet-usb-disk"
# How the USB disk shows up inside the board (udev's by-id name of a usb-storage device).
USB_DISK_DEVICE = f"/dev/disk/by-id/usb-QEMU_QEMU_HARDDISK_{USB_DISK_SERIAL}-0:0"
MEMORY = "1024M"
CPUS = 2


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


def disk_path(spec: LabSpec) -> Path:
    """The raw file behind the board's USB disk."""
    return spec.state_dir / "usb-disk.raw"


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
    for interface, cable in ports:
        ip("tuntap", "add", "dev", tap(interface), "mode", "tap", netns=netns)
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
    """Write the wrapper labgrid's QEMUDriver runs instead of qemu-system-x86_64."""
    path = wrapper_path(spec)
    qemu = system.find_tool("qemu-system-x86_64")
    ip = system.find_tool("ip")
    path.write_text(
        "#!/bin/sh\n"
        f"# Written by pinet lab up: the QEMU board of lab {spec.name} runs in its namespace.\n"
        f"exec {shlex.quote(ip)} netns exec {shlex.quote(spec.netns(spec.board_host.name))} "
        f'{shlex.quote(qemu)} "$@" 2>>{shlex.quote(str(log_path(spec)))}\n',
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
        f"pinet.authkey={key_type},{key_body}",
        f"pinet.if={mac(spec, MGMT_INTERFACE)},{MGMT_INTERFACE},{spec.mgmt_address(board)}/24,1500",
    ]
    for link in spec.links:
        if link.board != board:
            continue
        entry = f"pinet.if={mac(spec, link.board_interface)},{link.board_interface},"
        entry += f"{spec.link_address(link, 'board')}/24,{link.mtu}"
        if link.adapter == "virtio":
            # The built-in port is GbE like a Pi's: the board shapes its own egress, so the
            # qdisc under test sits where a real board's queue builds.  The USB adapter needs
            # no shaper: under emulation it is slower than GbE by itself.
            entry += "," + "+".join(shaping.Shaping(link.speed_mbps, link.mtu).tc_args())
        words.append(entry)
    line = " ".join(words)
    if len(line) > 2000:
        raise PinetError(f"the QEMU board's kernel command line is {len(line)} bytes, over the 2048 limit")
    return line


def extra_args(spec: LabSpec, image: BoardImage) -> str:
    """QEMU's devices: the ports, the xHCI controller with the USB adapter and disk."""
    kernel = image.kernel(spec.kernel)
    board = spec.board_host.name
    args = [
        "-initrd",
        str(kernel.initrd),
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
        args += ["-netdev", f"tap,id=n-{interface},ifname={tap(interface)},script=no,downscript=no"]
        if adapter == "qemu-usb-net":
            device = f"usb-net,bus=xhci.0,netdev=n-{interface},mac={mac(spec, interface)}"
        else:
            # No option ROM: iPXE would spend seconds of every emulated boot offering PXE.
            device = f"virtio-net-pci,netdev=n-{interface},mac={mac(spec, interface)},romfile="
        args += ["-device", device]
    args += [
        "-drive",
        f"if=none,id=usbdisk,format=raw,file={disk_path(spec)}",
        "-device",
        f"usb-storage,bus=xhci.0,drive=usbdisk,serial={USB_DISK_SERIAL}",
    ]
    return shlex.join(args)


def target(spec: LabSpec, image: BoardImage, public_key: str) -> dict[str, Any]:
    """The board's labgrid target: QEMUDriver for power and console, ShellDriver on it."""
    board = spec.board_host.name
    return {
        "resources": {
            "NetworkService": {"address": spec.mgmt_address(board), "username": "root", "port": 22},
        },
        "drivers": {
            "QEMUDriver": {
                "qemu_bin": "qemu",
                "machine": "q35",
                "cpu": "host" if spec.accel == "kvm" else "max",
                "memory": MEMORY,
                "kernel": "kernel",
                "disk": "rootfs",
                # Every boot starts from the image as built: what a test wrote is gone after
                # a power-cycle, as on a board re-flashed each night.
                "disk_opts": "snapshot=on",
                "boot_args": boot_args(spec, public_key),
                "extra_args": extra_args(spec, image),
            },
            "ShellDriver": {
                # bash in the image brackets pastes: the prompt may follow an ESC[?2004h.
                "prompt": rf"(?:\x1b\[\?2004h)?root@{board}:[^ ]*# ",
                "login_prompt": " login: ",
                "username": "root",
                "login_timeout": 300,
            },
        },
    }


def env_sections(spec: LabSpec, image: BoardImage) -> dict[str, Any]:
    """The env file's ``tools`` and ``images`` sections the QEMUDriver reads."""
    kernel = image.kernel(spec.kernel)
    return {
        "tools": {"qemu": str(wrapper_path(spec))},
        "images": {"kernel": str(kernel.vmlinuz), "rootfs": str(image.rootfs)},
    }


def running_pid(spec: LabSpec) -> int:
    """QEMU's pid if the board is running, else 0."""
    try:
        pid = int(pid_file(spec).read_text().strip())
        os.kill(pid, 0)
        return pid
    except (OSError, ValueError):
        return 0
