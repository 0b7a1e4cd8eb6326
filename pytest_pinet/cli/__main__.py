"""``python -m pytest_pinet.cli``: the ``pinet`` command without its console script."""

from __future__ import annotations

import sys

from .main import main

sys.exit(main())
