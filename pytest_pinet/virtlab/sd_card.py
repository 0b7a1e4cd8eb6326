"""The QEMU board's SD card, with the two labgrid drivers a Pi lab flashes its card through.

A Pi lab flashes a board with a USB-SD-Mux: ``USBSDMuxDriver.set_mode("host")`` hands the
card to the lab host, ``USBStorageDriver.write_image()`` writes it (dd, or bmaptool with a
block map), ``set_mode("dut")`` gives it back to the board.  The QEMU board's card is a file,
and these drivers switch and write it with the same methods and the same tools, so the
provisioning code (``lab/provision.py``) that flashes a Pi is the code CI runs:

- :class:`PinetSDCard` is the card: the file QEMU presents as the board's boot disk.
- :class:`PinetSDMuxDriver` switches it.  The mux position is kept beside the card, so the
  board's firmware (the wrapper QEMU starts through) finds no card while the host has it,
  and the writer refuses a card that is in the board, exactly as a real mux behaves.
- :class:`PinetSDCardDriver` writes an image with ``dd`` or ``bmaptool copy``.
"""

from __future__ import annotations

import os
import shutil
from typing import Any

import attr
from labgrid.driver.common import Driver
from labgrid.driver.exception import ExecutionError
from labgrid.driver.usbstoragedriver import Mode
from labgrid.factory import target_factory
from labgrid.resource.common import Resource
from labgrid.step import step
from labgrid.util.helper import processwrapper

from .sd_card_mux import MODES, mux_file, read_mode

__all__ = ["MODES", "PinetSDCard", "PinetSDCardDriver", "PinetSDMuxDriver", "mux_file", "read_mode"]


@target_factory.reg_resource
@attr.s(eq=False)
class PinetSDCard(Resource):  # type: ignore[misc]
    """The QEMU board's SD card: a raw file, as large as the image last written to it."""

    path: str = attr.ib(validator=attr.validators.instance_of(str))

    def __attrs_post_init__(self) -> None:
        super().__attrs_post_init__()
        self.avail = True


@target_factory.reg_driver
@attr.s(eq=False)
class PinetSDMuxDriver(Driver):  # type: ignore[misc]
    """Switches the card between the board ("dut") and the lab host ("host"), or "off"."""

    bindings = {"card": "PinetSDCard"}  # noqa: RUF012 - labgrid reads this class attribute

    @Driver.check_active  # type: ignore[untyped-decorator]
    @step(title="sdmux_set", args=["mode"])  # type: ignore[untyped-decorator]
    def set_mode(self, mode: str) -> None:
        """Move the card, as ``usbsdmux`` does; an unknown mode is refused."""
        if mode.lower() not in MODES:
            raise ExecutionError(f"Setting mode '{mode}' not supported by PinetSDMuxDriver")
        path = mux_file(self.card.path)
        path.write_text(mode.lower() + "\n", encoding="utf-8")

    @Driver.check_active  # type: ignore[untyped-decorator]
    def get_mode(self) -> str:
        """Where the card is now."""
        return read_mode(self.card.path)


@target_factory.reg_driver
@attr.s(eq=False)
class PinetSDCardDriver(Driver):  # type: ignore[misc]
    """Writes images to the card while the mux gives it to the host (USBStorageDriver's API)."""

    bindings = {"card": "PinetSDCard"}  # noqa: RUF012 - labgrid reads this class attribute

    @Driver.check_active  # type: ignore[untyped-decorator]
    @step(args=["filename"])  # type: ignore[untyped-decorator]
    def write_image(
        self,
        filename: str | None = None,
        mode: Mode = Mode.DD,
        partition: Any = None,
        skip: int = 0,
        seek: int = 0,
    ) -> None:
        """Write ``filename`` to the start of the card, with dd or bmaptool."""
        if filename is None:
            raise ExecutionError("write_image requires a filename")
        if partition is not None or skip or seek:
            raise ExecutionError("the virtual SD card takes whole images only (no partition, skip or seek)")
        if read_mode(self.card.path) != "host":
            raise ExecutionError(
                f"the SD card {self.card.path} is in the board (mux: {read_mode(self.card.path)}); "
                "switch the mux to host first"
            )
        card = self.card.path
        if mode == Mode.DD:
            # dd opens a regular file truncated, so the sparse copy leaves nothing of the
            # image before; a device (a real card) would need every block written.  No
            # fdatasync: a real card's data must be on it before the mux hands it to the
            # board, but this card is a file the board's QEMU reads through the same page
            # cache.  Only images without a block map come this way (the bisect test's
            # derived ones); alone, a flash of the Debian 12 image took 35.5 s with the
            # sync and 2.6 s without it.  And no dd either: what ``dd conv=sparse`` makes of a
            # regular file (the image's data, its zero blocks holes) is what ``cp
            # --sparse=always`` makes in the kernel (copy_file_range), in 0.3 s instead of 2.5
            # (cp, too, truncates the card it writes).
            args = ["cp", "--sparse=always", str(filename), str(card)]
        elif mode == Mode.BMAPTOOL:
            if shutil.which("bmaptool") is None:
                raise ExecutionError("bmaptool is not installed (the bmap-tools package has it)")
            bmap = f"{filename}.bmap"
            args = ["bmaptool", "-q", "copy", *([f"--bmap={bmap}"] if os.path.exists(bmap) else ["--nobmap"])]
            args += [filename, card]
        else:
            raise ValueError(f"unknown write mode {mode!r}")
        processwrapper.check_output(args, print_on_silent_log=True)

    @Driver.check_active  # type: ignore[untyped-decorator]
    def get_size(self, partition: Any = None) -> int:
        """Size of the card in bytes (0 when there is none yet)."""
        try:
            return os.path.getsize(self.card.path)
        except OSError:
            return 0
