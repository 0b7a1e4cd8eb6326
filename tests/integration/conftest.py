"""Integration tests build their own small virtual labs (names pinet7..pinet9)."""

from __future__ import annotations

import os

import pytest

from pytest_pinet.virtlab import lab
from pytest_pinet.virtlab.topology import LabSpec


@pytest.fixture
def root_required():
    if os.geteuid() != 0:
        pytest.skip("virtual lab tests need root (network namespaces)")


@pytest.fixture
def fresh_lab(root_required, tmp_path):
    """A lab of its own, with state under tmp_path; always torn down."""
    spec = LabSpec(name="pinet9", state_root=tmp_path / "state")
    lab.down(spec)
    yield spec
    lab.down(spec)
