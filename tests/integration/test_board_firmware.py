"""The QEMU board's firmware (the wrapper labgrid's QEMUDriver runs) loads the kernel and
initrd from the SD card whatever state a power cut left the card's root filesystem in, as a
Pi's firmware reads its boot partition.

A card whose ext4 allocation bitmaps fail their checksums (what a power cut mid-write leaves
until the journal is replayed at the next mount) made plain debugfs refuse the filesystem;
the board then never started again after such a cut (a CI rack run: "no QEMU 30 s after the
port was switched on").
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from pytest_pinet.virtlab import qemu_board
from pytest_pinet.virtlab.qemu_image import FIRMWARE_INITRD, FIRMWARE_KERNEL
from pytest_pinet.virtlab.topology import qemu_lab


def _card_after_a_power_cut(tmp_path: Path, card: Path) -> tuple[bytes, bytes]:
    """An ext4 card holding a kernel and an initrd, its block bitmap's checksum stale."""
    tree = tmp_path / "tree"
    kernel = tree / FIRMWARE_KERNEL.lstrip("/")
    initrd = tree / FIRMWARE_INITRD.lstrip("/")
    kernel.parent.mkdir(parents=True)
    kernel.write_bytes(b"kernel " * 20000)
    initrd.write_bytes(b"initrd " * 9000)
    card.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        ["mkfs.ext4", "-q", "-F", "-O", "metadata_csum", "-d", str(tree), str(card), "16M"], check=True
    )
    subprocess.run(
        ["debugfs", "-w", "-R", "set_bg 0 block_bitmap_csum 0x1234", str(card)],
        check=True,
        capture_output=True,
    )
    return kernel.read_bytes(), initrd.read_bytes()


def test_firmware_loads_the_kernel_from_a_card_a_power_cut_left_unclean(tmp_path):
    for tool in ("mkfs.ext4", "debugfs", "qemu-system-x86_64"):
        if shutil.which(tool) is None:
            pytest.fail(f"{tool} is not installed: scripts/setup.sh installs it")
    spec = qemu_lab("pinet97", state_root=tmp_path / "state")
    spec.host_dir(spec.board_host.name).mkdir(parents=True)
    kernel, initrd = _card_after_a_power_cut(tmp_path, qemu_board.card_path(spec))
    plain = subprocess.run(
        ["debugfs", "-R", f"stat {FIRMWARE_KERNEL}", str(qemu_board.card_path(spec))],
        capture_output=True,
        text=True,
    )
    assert "checksum does not match" in plain.stderr  # the card really is as a power cut leaves it

    wrapper = qemu_board.write_wrapper(spec)
    # The lab's namespace does not exist here: past the firmware, starting QEMU fails, as
    # it should; what the firmware loaded is what this test reads.
    booted = subprocess.run([str(wrapper), "-kernel", "k", "-initrd", "i"], capture_output=True, text=True)
    assert "pinet board firmware" not in booted.stderr, booted.stderr
    firmware = qemu_board.firmware_dir(spec)
    assert (firmware / "vmlinuz").read_bytes() == kernel
    assert (firmware / "initrd.img").read_bytes() == initrd
