"""USB disk throughput (seed: block sizes 8 B to 1 MiB, ext2/ext3/ext4/vfat) and contention.

mkfs runs only on a disk the inventory marks scratch (the virtual lab's is a loop device
over a sparse file of its own). Per filesystem and block size, a file is written (fsynced),
the page cache dropped, and the file read back; each is one measurement. The contention
case routes traffic through the board while its disk is busy, as the seed's USB disk and
USB adapter share one bus on a Pi 4.
"""

from __future__ import annotations

import pytest

from pytest_pinet.host.scratch_disk import DEFAULT_BLOCKS, FILESYSTEMS, MAX_BLOCKS

pytestmark = [pytest.mark.storage, pytest.mark.lg_feature("usb-disk")]


@pytest.mark.parametrize("filesystem", sorted(FILESYSTEMS))
def test_block_size_sweep(pinet_measure_storage, pinet_judge_goodput, filesystem):
    runs = pinet_measure_storage.sweep(filesystem)
    pinet_judge_goodput(*runs)
    assert [(r.context.block_bytes, r.context.direction) for r in runs] == [
        (block, direction) for block in DEFAULT_BLOCKS for direction in ("write", "read")
    ]
    for run in runs:
        # dd moved every byte asked of it: whole blocks, at most MAX_BLOCKS of them
        block = run.context.block_bytes
        asked = min(pinet_measure_storage.total_bytes // block, MAX_BLOCKS) * block
        assert run.detail.bytes >= asked


@pytest.mark.routing
def test_routing_while_the_disk_is_busy(pinet_measure_routing, pinet_scratch_disk, pinet_judge_goodput):
    def quiet_then_busy():
        quiet = pinet_measure_routing.download()
        pinet_scratch_disk.format("ext4")
        with pinet_scratch_disk.busy(
            seconds=pinet_measure_routing.options.duration + pinet_measure_routing.options.omit + 10
        ):
            busy = pinet_measure_routing.download(scenario="routing+disk-io")
        return quiet, busy

    # Measured through the judge, as every other routing test is: a figure under its floor is
    # taken again (--pinet-remeasure), both attempts kept.  A test command once saw the quiet
    # download at 920.5 Mbit/s with 9954 retransmits, right after the disk sweep on the shared
    # host, and its busy twin at 941.5.
    quiet, busy = pinet_judge_goodput(quiet_then_busy)
    # both recorded; the difference is the shared bus's cost (none on a namespace lab)
    assert (quiet.context.scenario, busy.context.scenario) == ("routing", "routing+disk-io")
    assert busy.started > quiet.finished
