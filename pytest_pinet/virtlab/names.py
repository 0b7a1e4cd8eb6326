"""The virtual lab's names and choices, apart from the machinery that builds it.

The options table validates ``--pinet-virtual-lab``, ``--pinet-board``, ``--pinet-qemu-accel``
and ``--pinet-board-image`` against these at every pytest start, including the starts of
projects that never use pinet: this module is what such a start may load, so it holds
constants only (``pinet bench`` measures that start-up cost).
"""

from __future__ import annotations

import re

LAB_NAME = re.compile(r"^pinet[0-9]{0,2}$")
# The default lab is two labs: ``pinet`` (the namespace board) and its companion ``pinetq``
# (the QEMU board), built, used and removed together; a companion's name is never given.
COMPANION_SUFFIX = "q"
PART_NAME = re.compile(r"^pinet[0-9]{0,2}q?$")
# "both": the namespace board pi and the QEMU board qpi in one lab (the default).
BOARD_KINDS = ("both", "netns", "qemu")
ACCELERATORS = ("tcg", "kvm")
# The QEMU board's OS images (their recipes are in qemu_image.RECIPES, in this order).
IMAGE_NAMES = ("debian12-k6.1", "debian12-k6.12", "debian13")
DEFAULT_IMAGE = "debian12-k6.1"
