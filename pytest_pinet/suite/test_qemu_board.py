"""The QEMU board: labgrid powers it and logs in on its serial console; it has a USB adapter
and a USB disk on xHCI; a power-cycle through labgrid really restarts it.

These run only against a board driven by labgrid's QEMUDriver (``--pinet-board qemu``, or
a real lab's env with a QEMU target); on any other board they skip with that reason.
"""

from __future__ import annotations

import os
import shlex
from pathlib import Path

import pytest

pytestmark = [pytest.mark.qemu_board, pytest.mark.usefixtures("pinet_flash_image")]

MARKER = "/root/pinet-power-cycle-marker"


@pytest.fixture(scope="module")
def qemu_driver(pinet_board_strategy, pinet_board_entry):
    """The board's QEMUDriver (labgrid), or a skip naming what the board is instead."""
    from labgrid.driver import QEMUDriver
    from labgrid.exceptions import NoDriverFoundError

    try:
        return pinet_board_strategy.target.get_driver(QEMUDriver, activate=False)
    except NoDriverFoundError:
        pytest.skip(f"{pinet_board_entry.name} is not a QEMU board (run with --pinet-board qemu)")


def test_console_login_sees_the_kernel_it_booted(
    qemu_driver, pinet_board_strategy, pinet_board_entry, pinet_host_facts, pinet_labgrid_env
):
    """ShellDriver logged in on the serial console and read the same kernel SSH reports,
    which is the one the board's firmware loaded from its SD card for QEMU to boot."""
    if pinet_board_strategy.console_kernel is None:
        pinet_board_strategy.transition("reachable")  # booted by another fixture: boot it here
    kernel = pinet_host_facts[pinet_board_entry.name].kernel
    assert pinet_board_strategy.console_kernel == kernel
    # A bzImage carries its release in plain text: the firmware's copy is the running kernel.
    loaded = Path(pinet_labgrid_env.config.get_image_path("firmware-kernel")).read_bytes()
    assert kernel.encode() in loaded
    assert pinet_board_strategy.console_login_seconds is not None


def test_usb_adapter_and_disk_hang_off_xhci(
    qemu_driver, pinet_board_entry, pinet_inventory, pinet_hosts, pinet_host_facts
):
    """The second port is a USB network adapter (cdc_ether) and the scratch disk a USB
    mass-storage device, both behind the emulated xHCI controller, as on a Pi."""
    facts = pinet_host_facts[pinet_board_entry.name]
    usb_links = [
        link
        for link in pinet_inventory.links
        if link.board == pinet_board_entry.name and link.adapter != "virtio"
    ]
    assert usb_links, "the QEMU lab declares a USB adapter link"
    for link in usb_links:
        port = facts.interfaces[link.board_interface]
        assert port.driver == "cdc_ether"
        assert (port.bus_info or "").startswith("usb-")
    board = pinet_hosts[pinet_board_entry.name]
    for disk in pinet_inventory.disks:
        if disk.host != pinet_board_entry.name:
            continue
        path = board.run(["readlink", "-f", disk.device], timeout=10).stdout.strip()
        sysfs = board.run(["readlink", "-f", f"/sys/class/block/{os.path.basename(path)}"], timeout=10).stdout
        assert "/usb" in sysfs, f"{disk.device} -> {path} is not on USB: {sysfs}"
        driver = board.run(["sh", "-c", "readlink -f /sys/bus/pci/drivers/xhci_hcd/*:*"], timeout=10).stdout
        assert driver.strip(), "no xHCI controller bound on the board"


def test_power_cycle_through_labgrid_restarts_the_board(
    qemu_driver, pinet_board_strategy, pinet_board_entry, pinet_hosts
):
    """Off and on through labgrid's QEMUDriver: the QEMU process is replaced, a process made
    before the cycle is gone after it while a file written to the SD card (and synced) is
    still there, as on a real card, and the board is reachable and logged in on its console
    again."""
    board = pinet_hosts[pinet_board_entry.name]
    board.run(
        ["sh", "-c", f"echo before > {shlex.quote(MARKER)}; sync; setsid sleep 86400 >/dev/null 2>&1 &"],
        timeout=20,
    )
    assert board.run(["test", "-e", MARKER], timeout=10).ok
    old_pid = qemu_driver._child.pid  # labgrid keeps the QEMU process it started

    pinet_board_strategy.transition("off")
    assert qemu_driver.status == 0
    with pytest.raises(ProcessLookupError):
        os.kill(old_pid, 0)

    pinet_board_strategy.transition("reachable")
    assert qemu_driver.status == 1 and qemu_driver._child.pid != old_pid
    assert (
        pinet_board_strategy.boot_seconds is not None
        and pinet_board_strategy.boot_seconds < pinet_board_strategy.boot_timeout
    )
    assert pinet_board_strategy.console_kernel
    assert board.run(["cat", MARKER], timeout=10).stdout.strip() == "before"  # the card kept it
    assert not board.run(["pgrep", "-f", "sleep 86400"], timeout=10).ok
    board.run(["rm", "-f", MARKER], timeout=10)
