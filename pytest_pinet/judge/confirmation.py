"""Confirm before red: how many attempts a suspect result gets, and when they are settled.

A result below its floor or regressed is measured again before it is red, and red when most
of its attempts are (``measure.goodput_judge``).  One unlucky run of a Pi, or a neighbour's
burst on a shared host, is not a board that got worse; one lucky run does not hide a drop
either.  ``pinet bench --noise-only`` takes nights the same way, from the same two names.
"""

from __future__ import annotations

# How many more attempts a suspect result gets by default (``--pinet-remeasure``): three in
# all, so a chance failure of probability p that each attempt meets on its own is red with
# 3p^2 - 2p^3, and a drop each attempt sees with probability q stays red with 3q^2 - 2q^3.
REMEASURE_BY_DEFAULT = 2


def settled(red: int, passed: int, attempts: int) -> bool:
    """Whether ``red`` red and ``passed`` passing attempts settle a majority of ``attempts``:
    most of them are red already, or red can no longer be most of them.  The attempt that
    settles it always agrees with the majority, so its figures are the result's."""
    left = attempts - red - passed
    return 2 * red > attempts or 2 * (red + left) <= attempts
