"""The network suite shipped with pytest-pinet (`pytest --pyargs pytest_pinet.suite`)."""

from __future__ import annotations

from pathlib import Path

# Where the suite lives in an installed package: `pinet run` and `pinet bisect` run it from here.
SUITE_DIR = Path(__file__).parent
