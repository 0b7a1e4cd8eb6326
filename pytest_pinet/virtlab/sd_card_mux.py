"""Where the QEMU board's SD card mux position is kept, beside the card file.

Apart from the labgrid drivers of ``sd_card.py`` because the board's firmware wrapper and the
lab's set-up read and write it too, and they must not need labgrid: a ``pinet`` installed
without the ``lab`` extra starts, reads its store and says which extra a lab needs.
"""

from __future__ import annotations

from pathlib import Path

MODES = ("dut", "host", "off")


def mux_file(card: str | Path) -> Path:
    """Where the mux position of ``card`` is kept (the firmware wrapper reads it too)."""
    return Path(f"{card}.mux")


def read_mode(card: str | Path) -> str:
    """The card's mux position: "dut" when nothing ever switched it (a card in its slot)."""
    try:
        return mux_file(card).read_text(encoding="utf-8").strip() or "dut"
    except FileNotFoundError:
        return "dut"
