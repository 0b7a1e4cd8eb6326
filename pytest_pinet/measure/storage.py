"""Block-size sweeps on a board's scratch disk: per filesystem, a write and a read per block
size (the seed's USB disk table), each recorded the moment it is taken."""

from __future__ import annotations

import time

from ..errors import LabFault, Unsupported
from ..host.scratch_disk import DiskRun, ScratchDisk
from ..model import DiskDetail, Measurement, TrafficContext
from ..model.lab import DiskEntry
from ..record.sweep_charts import storage_chart
from .base import Measurer, Site, limited, taking_turns


class StorageMeasurer(Measurer):
    """Block-size sweeps on one scratch disk, recorded at once."""

    def __init__(
        self,
        site: Site,
        disk: ScratchDisk,
        total_bytes: int,
        blocks: tuple[int, ...],
    ) -> None:
        super().__init__(site)
        self.disk = disk
        self.total_bytes = total_bytes
        self.blocks = blocks

    def _context(self, entry: DiskEntry, filesystem: str, run: DiskRun) -> TrafficContext:
        facts = self.facts[entry.host]
        return TrafficContext(
            lab=self.inventory.lab,
            scenario="storage",
            board=entry.host,
            model=self.inventory.model_of(entry.host),
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
            image=facts.image,
            filesystem=filesystem,
            block_bytes=run.block_bytes,
        )

    @taking_turns
    def sweep(self, filesystem: str) -> list[Measurement]:
        """mkfs ``filesystem``, then write and read ``total_bytes`` at every block size.

        A filesystem the board's kernel cannot mount goes to the recorder's ``unsupported``.
        """
        try:
            self.disk.format(filesystem)
        except Unsupported as exc:
            self.recorder.unsupported(exc, filesystem, "filesystem")
        taken = []
        entry = self.disk.disk
        for block in self.blocks:
            started = time.time()
            for run in self.disk.write_then_read(block, self.total_bytes):
                if run.seconds <= 0:
                    # dd's clock said no time passed: no figure exists, and none is made up.
                    raise LabFault("command", f"dd {run.direction} of {run.bytes} bytes took 0 s", entry.host)
                context, limit = limited(self._context(entry, filesystem, run))  # the disk's bus
                measurement = Measurement(
                    test_id=f"{self.test_id}#{run.direction}-{block}",
                    context=context,
                    goodput_mbps=run.bytes * 8 / run.seconds / 1e6,
                    limit_mbps=limit,
                    started=started,
                    finished=time.time(),
                    detail=DiskDetail(mib_per_s=run.mib_per_s, bytes=run.bytes, device=entry.device),
                    measured_s=run.seconds,
                    facts=self.facts_of(board=entry.host),
                )
                taken.append(self.record(measurement))
        self.disk.unmount()
        self.recorder.attach_chart(storage_chart(taken), f"{filesystem}: MiB/s per block size")
        return taken
