"""Fixtures of the storage suite: the board's scratch disk, the block-size sweep, contention.

``scratch_disk`` is the first disk of the board in ``pinet.disks`` (the virtual lab's is a
loop device); a disk not marked scratch fails the test before anything touches it.
``measure_storage`` formats it with one filesystem at a time and records, per block size,
a write and a read measurement (Mbit/s in the store, MiB/s in the tables).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterator

import pytest

from .errors import ConfigError
from .fixtures import FactsCache, record_and_attach, skip_unsupported
from .lab.inventory import DiskEntry, Inventory, LinkEntry
from .lab.remote import RemoteHost
from .lab.tunables import Unsupported
from .measurement import Measurement, TrafficContext
from .record.sweep_charts import attach_chart, storage_chart
from .scenarios.storage import DEFAULT_BLOCKS, DiskRun, ScratchDisk
from .settings import PinetSettings


@pytest.fixture
def scratch_disk(
    pinet_inventory: Inventory, pinet_hosts: dict[str, RemoteHost], link_under_test: LinkEntry
) -> Iterator[ScratchDisk]:
    """The board's scratch disk, unmounted again afterwards."""
    disks = [d for d in pinet_inventory.disks if d.host == link_under_test.board]
    if not disks:
        pytest.skip(f"{pinet_inventory.source}: board {link_under_test.board} has no disk in pinet.disks")
    try:
        disk = ScratchDisk(pinet_hosts[disks[0].host], disks[0], str(pinet_inventory.source))
    except ConfigError as exc:
        pytest.fail(str(exc), pytrace=False)
    yield disk
    disk.close()


class StorageMeasurer:
    """Block-size sweeps on one scratch disk, recorded at once."""

    def __init__(
        self,
        request: pytest.FixtureRequest,
        inventory: Inventory,
        disk: ScratchDisk,
        facts: FactsCache,
        total_bytes: int,
        blocks: tuple[int, ...],
    ) -> None:
        self.request = request
        self.inventory = inventory
        self.disk = disk
        self.facts = facts
        self.total_bytes = total_bytes
        self.blocks = blocks

    def _context(self, entry: DiskEntry, filesystem: str, run: DiskRun) -> TrafficContext:
        facts = self.facts[entry.host]
        return TrafficContext(
            lab=self.inventory.lab,
            scenario="storage",
            board=entry.host,
            peer=entry.host,
            link=entry.name,
            adapter=entry.bus,
            direction=run.direction,
            duplex="half",
            streams=1,
            duration_s=0,
            omit_s=0,
            link_speed_mbps=0,
            mtu=0,
            protocol="block",
            kernel=facts.kernel,
            os=facts.os_name,
            filesystem=filesystem,
            block_bytes=run.block_bytes,
        )

    def sweep(self, filesystem: str) -> list[Measurement]:
        """mkfs ``filesystem``, then write and read ``total_bytes`` at every block size.

        A filesystem the board's kernel cannot mount skips the test with the reason.
        """
        try:
            self.disk.format(filesystem)
        except Unsupported as exc:
            skip_unsupported(self.request, exc, filesystem, "filesystem")
        taken = []
        for block in self.blocks:
            started = time.time()
            for run in self.disk.write_then_read(block, self.total_bytes):
                entry = self.disk.disk
                measurement = Measurement(
                    test_id=f"{self.request.node.nodeid}#{run.direction}-{block}",
                    context=self._context(entry, filesystem, run),
                    goodput_mbps=run.bytes * 8 / run.seconds / 1e6 if run.seconds > 0 else 0.0,
                    sent_mbps=None,
                    retransmits=None,
                    per_stream_mbps=(),
                    interval_mbps=(),
                    cpu_sender_percent=None,
                    cpu_receiver_percent=None,
                    limit_mbps=0.0,
                    iperf3_version=None,
                    started=started,
                    finished=time.time(),
                    measured_s=run.seconds,
                    facts={"board": dataclasses.asdict(self.facts[entry.host])},
                    evidence={"mib_per_s": run.mib_per_s, "bytes": run.bytes, "device": entry.device},
                )
                taken.append(record_and_attach(self.request.config, measurement))
        self.disk.unmount()
        attach_chart(storage_chart(taken), f"{filesystem}: MiB/s per block size")
        return taken


@pytest.fixture
def measure_storage(
    request: pytest.FixtureRequest,
    pinet_inventory: Inventory,
    scratch_disk: ScratchDisk,
    host_facts: FactsCache,
    pinet_settings: PinetSettings,
) -> StorageMeasurer:
    """Sweeps on the board's scratch disk (``--pinet-storage-mib`` per block size)."""
    return StorageMeasurer(
        request,
        pinet_inventory,
        scratch_disk,
        host_facts,
        pinet_settings.storage_mib * 1048576,
        DEFAULT_BLOCKS,
    )
