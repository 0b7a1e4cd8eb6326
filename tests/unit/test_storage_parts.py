"""Storage pieces without a disk: dd's report, the scratch rule, the disks section, the table."""

from __future__ import annotations

import pytest

from pytest_pinet.errors import ConfigError, LabFault
from pytest_pinet.host.scratch_disk import DiskRun, ScratchDisk, parse_dd
from pytest_pinet.model.lab import DiskEntry
from pytest_pinet.record.seed_tables import storage_table

# GNU coreutils 9.1 (Debian 12), as the storage suite printed it on the virtual lab
DD_WRITE = (
    "1048576+0 records in\n1048576+0 records out\n"
    "8388608 bytes (8.4 MB, 8.0 MiB) copied, 2.65312 s, 3.2 MB/s\n"
)


def test_dd_report_parses_to_bytes_and_seconds():
    assert parse_dd(DD_WRITE, "pi") == (8388608, 2.65312)
    assert DiskRun("write", 8, 8388608, 2.65312).mib_per_s == pytest.approx(3.015, abs=0.001)
    with pytest.raises(LabFault, match="no dd report"):
        parse_dd("dd: failed to open 'x': No space left on device\n", "pi:/dev/sda")


def test_a_disk_not_marked_scratch_is_refused_before_anything_runs():
    class NoHost:
        name = "pi"

        def run(self, *args, **kwargs):
            raise AssertionError("no command may run on a non-scratch disk")

    disk = DiskEntry("data", "pi", "/dev/sda", scratch=False, bus="usb")
    with pytest.raises(ConfigError) as caught:
        ScratchDisk(NoHost(), disk, "lab/my-lab.yaml")  # type: ignore[arg-type]
    message = str(caught.value)
    assert "lab/my-lab.yaml" in message and "not marked scratch" in message and "/dev/sda" in message


def test_storage_table_as_the_seed_shows_it():
    def row(block, fs, direction, mib):
        context = {"scenario": "storage", "block_bytes": block, "filesystem": fs, "direction": direction}
        return {"context": context, "detail": {"kind": "disk", "mib_per_s": mib}, "goodput_mbps": 0}

    rows = [row(8, "ext4", "write", 4.8), row(8, "ext4", "read", 7.6), row(4096, "vfat", "read", 100.0)]
    lines = storage_table(rows)
    assert lines[1].split() == ["block", "ext4", "write", "ext4", "read", "vfat", "read"]
    assert lines[2].split() == ["8", "4.8", "7.6", "-"]
    assert lines[3].split() == ["4096", "-", "-", "100.0"]


def _made_up(scenario, direction, streams, goodput, detail, block=0, filesystem=""):
    from pytest_pinet.model import Measurement, TrafficContext

    context = TrafficContext(
        "lab",
        scenario,
        "pi",
        "pc",
        "eth",
        "",
        direction,
        "half",
        streams,
        5,
        0,
        1000,
        1500,
        protocol="UDP",
        filesystem=filesystem,
        block_bytes=block,
    )
    return Measurement("t", context, goodput, 957.1, 0.0, 1.0, detail)


def _udp(threads, cpu):
    from pytest_pinet.model import ReceiverCounters, UdpDetail

    return UdpDetail(
        "sendto", threads, 505.0 * threads, 1e4, 1e4, 0.0, cpu, None, 0, 0, ReceiverCounters(0, 0, 0, 0)
    )


def test_sweep_charts_render_as_png():
    from pytest_pinet.model import DiskDetail
    from pytest_pinet.record.sweep_charts import storage_chart, udp_chart

    udp = [_made_up("udp-sendto", "board->peer", n, 500.0 * n, _udp(n, 50.0 * n)) for n in (1, 2)]
    disk = [
        _made_up(
            "storage", d, 1, 10.0, DiskDetail(float(b) / 1024, b, "/dev/loop0"), block=b, filesystem="ext4"
        )
        for b in (8, 4096, 1048576)
        for d in ("write", "read")
    ]
    for png in (udp_chart(udp), storage_chart(disk)):
        assert png is not None and png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 5000
    assert udp_chart([]) is None


class _HereHost:
    """A host that runs the script in a directory of this machine (its "home"), as SSH would,
    with a page-cache drop that succeeds or fails as the test says."""

    name = "pi"
    sudo = False

    def __init__(self, home, drop: str) -> None:
        self.home = home
        self.scripts: list[str] = []

        class Platform:
            @staticmethod
            def drop_caches_script(sudo: bool) -> str:
                return drop

        self.platform = Platform()

    def run_shell(self, script, *, timeout=60.0, root=False, cleanup=False):
        import subprocess

        from pytest_pinet.host.remote import CommandResult

        self.scripts.append(script)
        done = subprocess.run(
            ["sh", "-c", script], cwd=self.home, capture_output=True, text=True, check=False
        )
        return CommandResult(script, done.returncode, done.stdout, done.stderr)


def test_a_block_size_is_written_dropped_and_read_back_in_one_round_trip(tmp_path):
    host = _HereHost(tmp_path, "sync")
    disk = ScratchDisk(host, DiskEntry("usb-disk", "pi", "/dev/sda", scratch=True, bus="usb"), "lab.yaml")  # type: ignore[arg-type]
    (tmp_path / disk.mountpoint).mkdir(parents=True)
    written, read = disk.write_then_read(4096, 64 * 4096)
    assert (written.direction, written.bytes, read.direction, read.bytes) == ("write", 262144, "read", 262144)
    assert written.seconds > 0 and read.seconds > 0 and len(host.scripts) == 1
    assert not list((tmp_path / disk.mountpoint).iterdir())  # the file is gone again


def test_a_page_cache_that_cannot_be_dropped_is_a_lab_fault_not_a_memory_figure(tmp_path):
    host = _HereHost(
        tmp_path, "echo 'sh: 1: cannot create /proc/sys/vm/drop_caches: Permission denied' >&2; false"
    )
    disk = ScratchDisk(host, DiskEntry("usb-disk", "pi", "/dev/sda", scratch=True, bus="usb"), "lab.yaml")  # type: ignore[arg-type]
    (tmp_path / disk.mountpoint).mkdir(parents=True)
    with pytest.raises(LabFault, match=r"dropping the page cache before reading failed: .*Permission denied"):
        disk.write_then_read(4096, 4096)
    assert not list((tmp_path / disk.mountpoint).iterdir())
