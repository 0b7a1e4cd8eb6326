"""The shipped suite's own conftest: loaded only when the suite is collected (from a clone or
with ``--pyargs pytest_pinet.suite``), so its markers (``routing``, ``storage`` ...) exist
under ``--strict-markers`` exactly where pinet runs, and nowhere else."""

from __future__ import annotations

import pytest

from pytest_pinet.plugin.markers import register_markers


def pytest_configure(config: pytest.Config) -> None:
    """Register the suites' markers before the suite's modules use them."""
    register_markers(config)
