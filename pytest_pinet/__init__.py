"""pytest-pinet: hardware-in-the-loop network regression testing for boards and their peers.

The core packages (``lab``, ``traffic``, ``judge``, ``record``, ``virtlab``) know nothing of
pytest; ``plugin`` and ``fixtures`` are the only modules that do.  That keeps the lab tooling
usable from the ``pinet`` command and from other harnesses.
"""

from __future__ import annotations

__version__ = "0.1.0"
__all__ = ["__version__"]
