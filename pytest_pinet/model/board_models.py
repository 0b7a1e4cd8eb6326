"""Board models a lab may name (``model:`` of a board in ``pinet.hosts``).

A model is what threshold rules match when a floor belongs to the hardware rather than to
one board (``match: {model: "Pi 5"}``), and what picks the kernel a per-model image entry
expects: Raspberry Pi OS ships one image for the 64-bit Pis, and its bootloader starts the
``-rpi-2712`` kernel on a Pi 5 (BCM2712) and the ``-rpi-v8`` kernel on a Pi 3/4/Zero 2 W
(and their compute modules).  The list is closed so that a typo ("Pi5", "pi 4") is an error
naming the known models, not a rule that silently never matches.
"""

from __future__ import annotations

# The model names, as Raspberry Pi Ltd writes them, and the kernel flavour (the end of
# `uname -r` under Raspberry Pi OS) each boots.  "other" is any board that is not a Pi
# (a QEMU board, a PC-class board under test); it has no flavour.
BOARD_MODELS: dict[str, str] = {
    "Pi 3B": "rpi-v8",
    "Pi 3B+": "rpi-v8",
    "Pi Zero 2 W": "rpi-v8",
    "CM3": "rpi-v8",
    "Pi 4B": "rpi-v8",
    "Pi 400": "rpi-v8",
    "CM4": "rpi-v8",
    "Pi 5": "rpi-2712",
    "Pi 500": "rpi-2712",
    "CM5": "rpi-2712",
    "other": "",
}


def model_fix(value: object) -> str:
    """What to write instead of ``value``, which is no known model: the near miss, if any, and
    the known names (the schema's ``BoardModel`` check words the error around it)."""
    near = [name for name in BOARD_MODELS if isinstance(value, str) and _squash(name) == _squash(value)]
    hint = f"did you mean {near[0]!r}? " if near else ""
    return f"{hint}use one of {list(BOARD_MODELS)}"


def _squash(name: str) -> str:
    """A model name without case, spaces or the word "raspberry": what a typo keeps."""
    return name.lower().replace("raspberry", "").replace(" ", "").replace("model", "")
